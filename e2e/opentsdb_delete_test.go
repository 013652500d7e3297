package e2e

import (
	"fmt"
	"testing"
	"time"
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
