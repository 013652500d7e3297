package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMakeQuery(t *testing.T) {
	g := mustGen(t, GenConfig{Seed: 1, Series: 120, Interval: 10 * time.Second, Start: t0, Steps: 8640})
	end := g.StepTime(8639)
	cfg := &QueryConfig{Seed: 4, End: end, Range: time.Hour, LongRange: 24 * time.Hour, Step: time.Minute, TopK: 5}
	for _, tc := range []struct {
		kind, promql, otsdb string
		step                time.Duration
		span                time.Duration
	}{
		{KindRaw, `{host="host-0000`, `"aggregator":"none"`, 10 * time.Second, time.Hour},
		{KindSum, `sum by (region) (`, `"downsample":"1m-avg"`, time.Minute, time.Hour},
		{KindTopK, `topk(5, `, `"downsample":"0all-max"`, time.Minute, time.Hour},
		{KindRate, `[5m]))`, `"rate":true`, time.Minute, time.Hour},
		{KindLong, `avg_over_time(`, `"downsample":"1h-avg"`, time.Hour, 24 * time.Hour},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			q, err := MakeQuery(g, cfg, tc.kind, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(q.PromQL, tc.promql) || !strings.Contains(string(q.OpenTSDB), tc.otsdb) {
				t.Fatalf("PromQL %s\nOpenTSDB %s\nwant %q and %q in them", q.PromQL, q.OpenTSDB, tc.promql, tc.otsdb)
			}
			if q.Step != tc.step || time.Duration(q.End-q.Start)*time.Millisecond != tc.span {
				t.Fatalf("step %v span %v, want %v and %v", q.Step, time.Duration(q.End-q.Start)*time.Millisecond, tc.step, tc.span)
			}
			if q.End > end || q.End <= end-tc.step.Milliseconds() {
				t.Fatalf("end %d is not within a step before the data's end %d", q.End, end)
			}
			var body struct {
				Start, End int64
				Queries    []map[string]any
			}
			if err := json.Unmarshal(q.OpenTSDB, &body); err != nil || body.Start != q.Start || body.End != q.End || len(body.Queries) != 1 {
				t.Fatalf("OpenTSDB body %s: %v", q.OpenTSDB, err)
			}
			if u := body.Queries[0]["rollupUsage"]; u != "ROLLUP_RAW" {
				t.Fatalf("rollupUsage %v, want ROLLUP_RAW by default (raw points, like for like)", u)
			}
			server := *cfg
			server.RollupUsage = "-"
			if free, _ := MakeQuery(g, &server, tc.kind, 3); strings.Contains(string(free.OpenTSDB), "rollupUsage") {
				t.Fatalf("rollup usage \"-\" still sent one: %s", free.OpenTSDB)
			}
			again, _ := MakeQuery(g, cfg, tc.kind, 3)
			if again.PromQL != q.PromQL || string(again.OpenTSDB) != string(q.OpenTSDB) {
				t.Fatal("the same seed and number made another query")
			}
		})
	}
	if _, err := MakeQuery(g, cfg, "nope", 0); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	// The raw query names a host alive at the end, under churn too.
	gc := mustGen(t, GenConfig{Seed: 1, Series: 120, Interval: 10 * time.Second, Start: t0, Steps: 8640, Churn: 2})
	alive := map[string]bool{}
	for j := range gc.HostSlots() {
		alive[fmt.Sprintf("host-%06d", gc.HostAt(j, 8639))] = true
	}
	for i := range 20 {
		q, _ := MakeQuery(gc, cfg, KindRaw, i)
		h := q.PromQL[strings.Index(q.PromQL, `"`)+1 : strings.LastIndex(q.PromQL, `"`)]
		if !alive[h] {
			t.Fatalf("raw query %d asks for %s, not alive at the end", i, h)
		}
	}
}

func TestRunQueriesAgainstFake(t *testing.T) {
	var prom, otsdb atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/query_range":
			prom.Add(1)
			if strings.HasPrefix(r.URL.Query().Get("query"), "topk") {
				http.Error(w, `{"status":"error","error":"no"}`, 422)
				return
			}
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"],[2,"2"]]}]}}`)
		case "/api/query":
			otsdb.Add(1)
			fmt.Fprint(w, `[{"metric":"m","tags":{},"aggregateTags":[],"dps":{"1":1,"2":5}},{"metric":"m","tags":{},"aggregateTags":[],"dps":{"1":3}}]`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: 10 * time.Second, Start: t0, Steps: 100})
	r, err := RunQueries(context.Background(), g, QueryConfig{Dialect: QueryProm, URL: srv.URL, Concurrency: 3, Queries: 10,
		Duration: time.Minute, End: g.StepTime(99), ServerPID: -1})
	if err != nil {
		t.Fatal(err)
	}
	if prom.Load() != 10 || r.Requests != 10 || r.Stopped != "queries" {
		t.Fatalf("sent %d, report says %d, stopped by %s", prom.Load(), r.Requests, r.Stopped)
	}
	if q := r.Queries[KindTopK]; q.Errors != 2 || q.Latency.Count != 2 {
		t.Fatalf("topk: %+v, want 2 failed", q)
	}
	if q := r.Queries[KindSum]; q.Errors != 0 || q.Series != 1 || q.Points != 2 {
		t.Fatalf("sum: %+v, want 1 series of 2 points", q)
	}
	r, err = RunQueries(context.Background(), g, QueryConfig{Dialect: QueryOpenTSDB, URL: srv.URL, Concurrency: 1, Queries: 5,
		Duration: time.Minute, End: g.StepTime(99), ServerPID: -1, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if q := r.Queries[KindTopK]; q.Series != 1 || q.Points != 2 {
		t.Fatalf("OpenTSDB topk 1: %+v, want the one series with the highest point", q)
	}
	if q := r.Queries[KindRaw]; q.Series != 2 || q.Points != 3 || r.RequestErrors != 0 {
		t.Fatalf("OpenTSDB raw: %+v", q)
	}
	if _, err := RunQueries(context.Background(), g, QueryConfig{Dialect: QueryProm, URL: srv.URL, Concurrency: 1, End: 1}); err == nil {
		t.Fatal("a run without bounds was accepted")
	}
}

func TestSumSeries(t *testing.T) {
	page := `# HELP vm_rows_inserted_total x
# TYPE vm_rows_inserted_total counter
vm_rows_inserted_total{type="opentsdb"} 120
vm_rows_inserted_total{type="promremotewrite"} 5
other_total 7
`
	for _, tc := range []struct {
		series string
		want   float64
		ok     bool
	}{
		{`vm_rows_inserted_total{type="opentsdb"}`, 120, true},
		{`vm_rows_inserted_total`, 125, true},
		{`other_total`, 7, true},
		{`missing_total`, 0, false},
	} {
		got, err := sumSeries(strings.NewReader(page), tc.series)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("sumSeries(%s) = %v, %v; want %v", tc.series, got, err, tc.want)
		}
	}
}

// TestWriteConfirms: telnet to a server that answers nothing, confirmed
// through a counter page that grows as the server reads lines.
func TestWriteConfirms(t *testing.T) {
	addr, puts := fakeTelnet(t, false)
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "rows_total{type=\"telnet\"} %d\n", puts.Load())
	}))
	defer metrics.Close()
	g := mustGen(t, GenConfig{Seed: 1, Series: 36, Interval: 10 * time.Second, Start: t0, Steps: 50})
	r, err := Write(context.Background(), g, WriteConfig{Dialect: DialectTelnet, Addr: addr, Workers: 2, BatchSize: 100,
		Duration: time.Minute, ServerPID: -1,
		ConfirmURL: metrics.URL, ConfirmSeries: `rows_total{type="telnet"}`})
	if err != nil {
		t.Fatal(err)
	}
	if r.PointsAccepted != g.Points() || r.PointsUnconfirmed != 0 || puts.Load() != g.Points() {
		t.Fatalf("accepted %d, unconfirmed %d, server read %d; want all %d confirmed (errors %v)",
			r.PointsAccepted, r.PointsUnconfirmed, puts.Load(), g.Points(), r.Errors)
	}
}
