package query

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/internal/dbtest"
	"hourglass/series"
)

// onceEnv is laneEnv's engine over series of metric m with a point every
// minute over [laneBase, laneBase+2h) (hosts h000…, job "all"), flushed,
// and a point in the head at laneBase+2h; and a series h999 with points
// only on the day before laneBase's (laneBase is a day's start).
func onceEnv(t *testing.T, hosts int) *Engine {
	t.Helper()
	db := dbtest.Open(t, t.TempDir(), nil, nil)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	var samples []series.Sample
	lbl := func(h string) series.Labels {
		return series.MakeLabels("m", []series.Tag{{Key: "host", Value: h}, {Key: "job", Value: "all"}})
	}
	for h := range hosts {
		l := lbl(fmt.Sprintf("h%04d", h))
		for ts := laneBase; ts < laneBase+2*3600_000; ts += 60_000 {
			samples = append(samples, series.Sample{Labels: l, T: ts, V: chunk.Float(float64(h) + float64(ts-laneBase)/60_000)})
		}
	}
	for ts := laneBase - 2*3600_000; ts < laneBase; ts += 60_000 {
		samples = append(samples, series.Sample{Labels: lbl("h999"), T: ts, V: chunk.Float(float64(ts-laneBase) / 60_000)})
	}
	if err := db.DB.Append(ctx, samples, make([]error, len(samples))); err != nil {
		t.Fatal(err)
	}
	if err := db.DB.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var head []series.Sample
	for h := range hosts {
		head = append(head, series.Sample{Labels: lbl(fmt.Sprintf("h%04d", h)), T: laneBase + 2*3600_000, V: chunk.Float(-1)})
	}
	if err := db.DB.Append(ctx, head, make([]error, len(head))); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(db.DB.Head, db.Index, db.Store, db.Layout, Limits{MaxConcurrent: 1, QueueTimeout: time.Second})
	e.SetLanes(Lanes{LightMaxConcurrent: 1, LightMaxPoints: 100_000})
	e.RegisterMetrics(prometheus.NewRegistry())
	return e
}

// TestLightSelectionsSameAnswers: a PromQL query answers the same with
// the check's selections in its context as without them, and a light
// query's every Select is answered from them (the series are selected
// once); a heavy query (a subquery) is handed none. Among the selectors,
// one repeated with offsets, one of them reaching the day before, where
// only h999 has data: taking the other's selection would answer wrong.
func TestLightSelectionsSameAnswers(t *testing.T) {
	e := onceEnv(t, 40)
	ctx := context.Background()
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	end := time.UnixMilli(laneBase + 2*3600_000)
	for _, c := range []struct {
		qs        string
		rng, step time.Duration
		selects   int64 // Selects answered by the check; -1: heavy
	}{
		{`m{host="h0001"}`, 30 * time.Minute, time.Minute, 1},
		{`m{host="h0001"}`, 0, 0, 1},
		{`m{host="h0001"} - m{host="h0001"} offset 10m`, 30 * time.Minute, time.Minute, 2},
		{`sum(m{host=~"h0001|h999"}) + sum(m{host=~"h0001|h999"} offset 150m)`, 10 * time.Minute, time.Minute, 2},
		{`count(m{host=~"h0001|h999"} offset 150m) + count(m{host=~"h0001|h999"})`, 0, 0, 2},
		{`rate(m{host=~"h000[1-3]"}[5m]) + on(host) rate(m{host=~"h000[1-3]"}[10m] offset 1h)`, 20 * time.Minute, time.Minute, 2},
		{`sum by (host) (m{host=~"h00.1", job=~"a.+"})`, time.Hour, 5 * time.Minute, 1},
		{`max_over_time(m{host="h0001"}[10m:1m])`, 20 * time.Minute, time.Minute, -1},
		{`m{host="h0001"} + on(host) max_over_time(m{host="h0001"}[10m:1m])`, 0, 0, -1},
		{`sum(m)`, time.Hour, time.Minute, 1},
		{`{__name__=~"m|x", host="h0002"}`, time.Hour, time.Minute, 1},
		{`{__name__=~"m.*", host="h0002"}`, time.Hour, time.Minute, -1}, // names no metric: every one would be looked at
	} {
		t.Run(fmt.Sprintf("%s/%s", c.qs, c.rng), func(t *testing.T) {
			run := func(ctx context.Context) (promql.Query, string) {
				var q promql.Query
				var err error
				if c.step == 0 {
					q, err = ng.NewInstantQuery(ctx, e.Queryable(PromLimits{}), nil, c.qs, end)
				} else {
					q, err = ng.NewRangeQuery(ctx, e.Queryable(PromLimits{}), nil, c.qs, end.Add(-c.rng), end, c.step)
				}
				if err != nil {
					t.Fatal(err)
				}
				return q, ""
			}
			exec := func(q promql.Query, ctx context.Context) string {
				defer q.Close()
				res := q.Exec(ctx)
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				return res.Value.String()
			}
			q, _ := run(ctx)
			want := exec(q, ctx)
			q, _ = run(ctx)
			qctx, rel, err := e.AdmitPromQL(ctx, q.Statement())
			if err != nil {
				t.Fatal(err)
			}
			got := exec(q, qctx)
			sel := promSelectionsFrom(qctx)
			rel()
			if got != want {
				t.Fatalf("with the check's selections:\n%s\nwithout:\n%s", got, want)
			}
			switch {
			case c.selects < 0 && sel != nil:
				t.Fatal("a heavy query was handed selections")
			case c.selects >= 0 && sel == nil:
				t.Fatal("not light")
			case c.selects >= 0 && sel.hits.Load() != c.selects:
				t.Fatalf("%d Selects answered by the check, want %d", sel.hits.Load(), c.selects)
			case sel != nil && len(sel.byKey) != 0:
				t.Fatal("selections kept after release")
			}
			if want == "" || want == "{}" {
				t.Fatal("the query answers nothing: it shows nothing")
			}
		})
	}
}

// TestLightRequestsSameAnswers: OpenTSDB sub-queries planned by the check,
// with its series, answer as the sub-queries planned and selected again.
func TestLightRequestsSameAnswers(t *testing.T) {
	e := onceEnv(t, 40)
	ctx := context.Background()
	spec := func(s string) *downsample.Spec {
		sp, err := downsample.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return &sp
	}
	sum, _ := downsample.Lookup("sum")
	none, _ := downsample.Lookup("none")
	re := promMatcher{labels.MustNewMatcher(labels.MatchRegexp, "host", "h00.1")}
	reqs := []Request{
		{Selector: Selector{Metric: "m", Matchers: []series.Matcher{exactMatcher{"host", "h0001"}}, Start: laneBase + 3600_000, End: laneBase + 2*3600_000}, Aggregator: none},
		{Selector: Selector{Metric: "m", Matchers: []series.Matcher{re}, Start: laneBase + 1800_000, End: laneBase + 2*3600_000}, Aggregator: sum, Downsample: spec("5m-avg"), Rate: true},
		{Selector: Selector{Metric: "m", Matchers: []series.Matcher{exactMatcher{"host", "h999"}}, Start: laneBase - 3600_000, End: laneBase + 3600_000}, Aggregator: sum, Downsample: spec("10m-max-zero")},
		{Selector: Selector{Metric: "m", Matchers: []series.Matcher{exactMatcher{"host", "nope"}}, Start: laneBase, End: laneBase + 3600_000}, Aggregator: sum},
	}
	planned, rel, err := e.AdmitRequests(ctx, len(reqs), func(i int) (Request, bool) { return reqs[i], true })
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	if planned == nil {
		t.Fatal("not light")
	}
	for i, r := range reqs {
		if planned[i].Entries == nil {
			t.Fatalf("sub-query %d: no series handed over", i)
		}
		want, err := e.Run(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Run(ctx, planned[i])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("sub-query %d: planned by the check %v, again %v", i, got, want)
		}
		if i < 3 && len(want) == 0 {
			t.Fatalf("sub-query %d answers nothing", i)
		}
	}
	// A heavy request is handed nothing: it plans and selects as it runs.
	heavy := append(reqs, Request{Selector: Selector{Metric: "m", Start: laneBase - 6*3600_000, End: laneBase + 2*3600_000}, Aggregator: sum}) // 40 series × 9 hours
	planned, rel2, err := e.AdmitRequests(ctx, len(heavy), func(i int) (Request, bool) { return heavy[i], true })
	if err != nil {
		t.Fatal(err)
	}
	rel2()
	if planned != nil {
		t.Fatal("a heavy request was handed its plan")
	}
}

// TestLightCheckBounded: the check stops as soon as the query is known
// heavy, having looked at no more than lightMaxVisit series in the index
// (the count SelectBounded returns), whatever the metric's size: a regular
// expression or a literal matcher whose postings hold every series of a
// metric of more, a selector naming no metric, several selectors together;
// and a selection stops once past the cells' bound.
func TestLightCheckBounded(t *testing.T) {
	hosts := lightMaxVisit + 300
	e := onceEnv(t, hosts)
	ctx := context.Background()
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	end := time.UnixMilli(laneBase + 2*3600_000)
	set := func(n int) string { // h0000|h0001|…, n of them
		s := ""
		for i := range n {
			if i > 0 {
				s += "|"
			}
			s += fmt.Sprintf("h%04d", i)
		}
		return s
	}
	for _, c := range []struct {
		qs      string
		light   bool
		visited int // series (and metrics) looked at
	}{
		{`m{host=~"h.*1"}`, false, 1},            // the metric's series are more than the bound: none looked at
		{`m{job="all", host=~"h.*1"}`, false, 1}, // and so are job="all"'s postings
		{`{host="h0001"}`, false, 0},             // every metric would be
		{`m{host="h0001"}`, true, 1 + 1},
		{`m{host=~"` + set(10) + `"} + on(host) m{host=~"` + set(10) + `"} offset 5m`, true, 2 * (1 + 10)},
		// 200 series × 2 hours would be past lightMaxCells: it stops at
		// the 129th selected.
		{`count(m{host=~"` + set(200) + `"})`, false, 1 + lightMaxCells/2 + 1},
		// Five selectors of 250 candidates selecting none: the fifth
		// finds the bound spent and looks at none.
		{strings.Repeat(`count(m{host=~"`+set(250)+`", job=~"x.+"}) + `, 4) + `count(m{host=~"` + set(250) + `", job=~"x.+"} offset 1m)`, false, 4*(1+250) + 1},
	} {
		t.Run(c.qs[:min(len(c.qs), 40)], func(t *testing.T) {
			q, err := ng.NewRangeQuery(ctx, e.Queryable(PromLimits{}), nil, c.qs, end.Add(-10*time.Minute), end, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ck := e.newLightCheck()
			sel := ck.prom(ctx, q.Statement())
			if (sel != nil) != c.light {
				t.Fatalf("light %v, want %v", sel != nil, c.light)
			}
			if ck.visited != c.visited || ck.visited > lightMaxVisit {
				t.Fatalf("looked at %d series and metrics, want %d (at most %d)", ck.visited, c.visited, lightMaxVisit)
			}
		})
	}
	// OpenTSDB: a regular expression over the metric's series, alone and
	// after sub-queries that spent part of the bound.
	re := promMatcher{labels.MustNewMatcher(labels.MatchRegexp, "host", "h.*1")}
	sub := func(m series.Matcher) Request {
		return Request{Selector: Selector{Metric: "m", Matchers: []series.Matcher{m}, Start: laneBase, End: laneBase + 3600_000}}
	}
	for _, reqs := range [][]Request{
		{sub(re)},
		{sub(exactMatcher{"host", "h0001"}), sub(re)},
	} {
		ck := e.newLightCheck()
		if _, light := ck.requests(ctx, len(reqs), func(i int) (Request, bool) { return reqs[i], true }); light {
			t.Fatal("light")
		}
		if ck.visited > lightMaxVisit {
			t.Fatalf("looked at %d series, past %d", ck.visited, lightMaxVisit)
		}
	}
}
