package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// TestOpenTSDBQueryDelete: /api/query's delete option against the binary
// started with -allow-delete. (Without the flag the query is refused with
// OpenTSDB's 400, checked in TestOpenTSDBQuerySemantics.)
func TestOpenTSDBQueryDelete(t *testing.T) {
	s := start(t, t.TempDir(), "-allow-delete")
	cfg := otsWant(t, s, 200, "GET", "/api/config", nil)
	var conf map[string]string
	otsDecode(t, cfg, &conf)
	if conf["tsd.http.query.allow_delete"] != "true" {
		t.Fatalf("/api/config: tsd.http.query.allow_delete = %q, want true", conf["tsd.http.query.allow_delete"])
	}

	// Two series, a point a minute for three hours in the past (sealed and
	// in the store within a second), and the last ten minutes up to now
	// (in the head): value = minutes since the series' first point.
	old := otsT0
	now := time.Now().Unix() / 60 * 60
	recent := now - 600
	want := map[string]otsPts{"a": {}, "b": {}}
	for _, host := range []string{"a", "b"} {
		var dps []string
		for i := int64(0); i < 180; i++ {
			dps = append(dps, otsDP("del.m", old+60*i, fmt.Sprint(i), "host", host))
			want[host][old+60*i] = float64(i)
		}
		for i := int64(0); i <= 10; i++ {
			dps = append(dps, otsDP("del.m", recent+60*i, fmt.Sprint(1000+i), "host", host))
			want[host][recent+60*i] = float64(1000 + i)
		}
		otsPutOK(t, s, otsArr(dps...))
	}
	time.Sleep(1500 * time.Millisecond) // the sweeper seals the old hours
	cut := func(host string, from, to int64) {
		for ts := range want[host] {
			if ts >= from && ts <= to {
				delete(want[host], ts)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		for _, host := range []string{"a", "b"} {
			rs := otsQuery(t, s, "/api/query", fmt.Sprintf(
				`{"start":%d,"end":%d,"queries":[{"metric":"del.m","aggregator":"none","tags":{"host":%q}}]}`, old, now+60, host))
			if len(want[host]) == 0 {
				if len(rs) != 0 {
					t.Fatalf("%s: host %s: %d results, want none", when, host, len(rs))
				}
				continue
			}
			otsCheckPoints(t, when+": host "+host, otsSingle(t, when, rs).points(t), want[host])
		}
	}
	check("before deleting")

	// Delete host a from the middle of its first hour into the middle of
	// its third (a partial row, a whole row, a partial row), with the
	// deleted points in the reply as OpenTSDB gives them.
	from, to := old+1800, old+2*3600+1799
	rs := otsQuery(t, s, "/api/query", fmt.Sprintf(
		`{"start":%d,"end":%d,"delete":true,"queries":[{"metric":"del.m","aggregator":"sum","tags":{"host":"a"}}]}`, from, to))
	gone := otsPts{}
	for ts, v := range want["a"] {
		if ts >= from && ts <= to {
			gone[ts] = v
		}
	}
	otsCheckPoints(t, "the delete's reply", otsSingle(t, "delete reply", rs).points(t), gone)
	cut("a", from, to)
	check("after the first delete")

	// The DELETE verb with the query string: host b's points in the head
	// and the last old minute.
	from2 := old + 179*60
	otsWant(t, s, 200, "DELETE", fmt.Sprintf("/api/query?start=%d&end=%d&m=sum:del.m%%7Bhost=b%%7D", from2, now-300), nil)
	cut("b", from2, now-300)
	check("after the DELETE verb")

	// Points written into a deleted range afterwards are kept.
	otsPutOK(t, s, otsArr(otsDP("del.m", old+3600, "7.5", "host", "a"), otsDP("del.m", recent, "8.5", "host", "b")))
	want["a"][old+3600] = 7.5
	want["b"][recent] = 8.5
	check("after writing into the deleted ranges")

	// Nothing deleted comes back after kill -9 (the tombstones replay) nor
	// after a clean restart.
	s.kill()
	s.restart()
	check("after kill -9")
	s.stop()
	s.restart()
	check("after a clean restart")

	// Deleting everything of a series leaves a query with no result.
	otsWant(t, s, 200, "POST", "/api/query", fmt.Sprintf(
		`{"start":%d,"end":%d,"delete":true,"queries":[{"metric":"del.m","aggregator":"sum","tags":{"host":"b"}}]}`, old, now+60))
	want["b"] = otsPts{}
	check("after deleting all of host b")
	s.kill()
	s.restart()
	check("after deleting all of host b and kill -9")
}

// TestPromDeleteSeries: Prometheus' /api/v1/admin/tsdb/delete_series (and
// clean_tombstones) against the binary, with and without -allow-delete.
func TestPromDeleteSeries(t *testing.T) {
	off := start(t, t.TempDir())
	code, env := promAPI(t, off, "POST", "/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {"up"}})
	if code != 503 || string(env["errorType"]) != `"unavailable"` || string(env["error"]) != `"admin APIs disabled"` {
		t.Fatalf("delete_series without -allow-delete: %d %v", code, env)
	}
	off.kill()

	s := start(t, t.TempDir(), "-allow-delete")
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Hour).UnixMilli()
	var ts []prompb.TimeSeries
	for _, inst := range []string{"a:9100", "b:9100"} {
		var smp []prompb.Sample
		for i := int64(0); i < 120; i++ {
			smp = append(smp, prompb.Sample{Value: float64(i), Timestamp: base + i*60_000})
		}
		ts = append(ts, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "node_load1"}, {Name: "instance", Value: inst}, {Name: "job", Value: "node"}}, Samples: smp})
	}
	b, _ := (&prompb.WriteRequest{Timeseries: ts}).Marshal()
	if code, body := s.do("POST", "/api/v1/write", "application/x-protobuf", snappy.Encode(nil, b)); code != 204 {
		t.Fatalf("remote write: %d %s", code, body)
	}
	counts := func() map[string]int {
		out := map[string]int{}
		for k, dps := range s.raw("node_load1", base, base+120*60_000) {
			out[k] = len(dps)
		}
		return out
	}
	bad := []struct {
		form url.Values
		msg  string
	}{
		{url.Values{}, "no match[] parameter provided"},
		{url.Values{"match[]": {"node_load1{"}}, `invalid parameter "match[]"`},
		{url.Values{"match[]": {"up"}, "start": {"yesterday"}}, `invalid parameter "start"`},
	}
	for _, c := range bad {
		code, env := promAPI(t, s, "POST", "/api/v1/admin/tsdb/delete_series", c.form)
		var msg string
		otsDecode(t, env["error"], &msg)
		if code != 400 || string(env["errorType"]) != `"bad_data"` || !strings.Contains(msg, c.msg) {
			t.Fatalf("delete_series %v: %d %s, want 400 %q", c.form, code, msg, c.msg)
		}
	}
	// Minutes 30 to 89 of instance a (inclusive), as seconds.
	form := url.Values{"match[]": {`node_load1{instance="a:9100"}`},
		"start": {promSeconds(base + 30*60_000)}, "end": {promSeconds(base + 89*60_000)}}
	if code, body := s.do("POST", "/api/v1/admin/tsdb/delete_series", "application/x-www-form-urlencoded", []byte(form.Encode())); code != 204 {
		t.Fatalf("delete_series: %d %s", code, body)
	}
	check := func(when string, a, bb int) {
		t.Helper()
		got := counts()
		if len(got) != 2 || got["node_load1,instance=a:9100,job=node"] != a || got["node_load1,instance=b:9100,job=node"] != bb {
			t.Fatalf("%s: points per series %v, want a=%d b=%d", when, got, a, bb)
		}
	}
	check("after delete_series", 60, 120)
	// With no start or end, all of it, through PUT.
	req := url.Values{"match[]": {`{__name__="node_load1",instance="b:9100"}`}}
	if code, body := s.do("PUT", "/api/v1/admin/tsdb/delete_series?"+req.Encode(), "", nil); code != 204 {
		t.Fatalf("delete_series all time: %d %s", code, body)
	}
	if got := counts(); len(got) != 1 || got["node_load1,instance=a:9100,job=node"] != 60 {
		t.Fatalf("after deleting b: %v", got)
	}
	if code, body := s.do("POST", "/api/v1/admin/tsdb/clean_tombstones", "", nil); code != 204 {
		t.Fatalf("clean_tombstones: %d %s", code, body)
	}
	s.kill()
	s.restart()
	if got := counts(); len(got) != 1 || got["node_load1,instance=a:9100,job=node"] != 60 {
		t.Fatalf("after kill -9: %v", got)
	}
}
