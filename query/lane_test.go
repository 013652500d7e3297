package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/internal/dbtest"
	"hourglass/series"
)

func lanesEngine(heavy, light int, timeout time.Duration) *Engine {
	e := &Engine{admit: newLanes(Limits{MaxConcurrent: heavy, QueueTimeout: timeout}, Lanes{LightMaxConcurrent: light, LightMaxPoints: 1000})}
	e.RegisterMetrics(prometheus.NewRegistry())
	return e
}

// until waits for cond, however long it takes (the test's own timeout
// bounds it): a goroutine blocked in a lane's queue shows in its gauge.
func until(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// TestLanes: with every heavy slot held, a light query is admitted at
// once while a heavy one waits for a heavy slot; a light query takes a
// free heavy slot when the light ones are full, and waits for either when
// both are; past the queue timeout it is refused with a QueueError naming
// both flags.
func TestLanes(t *testing.T) {
	ctx := context.Background()
	e := lanesEngine(2, 1, time.Hour)
	a := e.admit
	var held []func()
	for range 2 {
		rel, err := a.take(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, rel)
	}
	// Heavy slots full: a light query does not wait (if it did, this
	// call would not return and the test would time out).
	relLight, err := a.take(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if r := testutil.ToFloat64(a.light.running); r != 1 {
		t.Fatalf("light running %v", r)
	}
	// A heavy query waits for a heavy slot, not the light lane's.
	heavyDone := make(chan func(), 1)
	go func() {
		rel, err := a.take(ctx, false)
		if err != nil {
			t.Error(err)
		}
		heavyDone <- rel
	}()
	until(func() bool { return testutil.ToFloat64(a.heavy.waiting) == 1 })
	relLight()
	select {
	case <-heavyDone:
		t.Fatal("a heavy query got a slot when only a light one was free")
	default:
	}
	held[0]()
	held[0] = <-heavyDone // the waiting heavy query gets the freed slot

	// Light lane full, a heavy slot free: the light query takes it.
	relLight, _ = a.take(ctx, true)
	held[1]()
	rel, err := a.take(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if r := testutil.ToFloat64(a.heavy.running); r != 2 {
		t.Fatalf("heavy running %v, want the light query in a heavy slot", r)
	}
	// Both full: a light query waits for either, and gets a heavy slot
	// when one frees first.
	lightDone := make(chan func(), 1)
	go func() {
		rel, err := a.take(ctx, true)
		if err != nil {
			t.Error(err)
		}
		lightDone <- rel
	}()
	until(func() bool { return testutil.ToFloat64(a.light.waiting) == 1 })
	rel()
	(<-lightDone)()
	relLight()
	held[0]()
	if got := testutil.ToFloat64(a.admitted.WithLabelValues("light")); got != 4 {
		t.Fatalf("admitted light %v, want 4", got)
	}
	if got := testutil.ToFloat64(a.admitted.WithLabelValues("heavy")); got != 3 {
		t.Fatalf("admitted heavy %v, want 3", got)
	}
	for _, g := range []prometheus.Gauge{a.heavy.running, a.heavy.waiting, a.light.running, a.light.waiting} {
		if v := testutil.ToFloat64(g); v != 0 {
			t.Fatalf("a gauge is %v after every query ended", v)
		}
	}
}

// TestLanesQueueTimeout: a light query finding both lanes full waits
// -query-queue-timeout and is refused, counted in the light lane; a heavy
// one as before.
func TestLanesQueueTimeout(t *testing.T) {
	ctx := context.Background()
	e := lanesEngine(1, 1, 20*time.Millisecond)
	a := e.admit
	r1, _ := a.take(ctx, false)
	r2, _ := a.take(ctx, true)
	defer r1()
	defer r2()
	_, err := a.take(ctx, true)
	var qe *QueueError
	if !errors.As(err, &qe) || qe.Light != 1 || qe.Limit != 1 {
		t.Fatalf("light query: %v", err)
	}
	for _, flag := range []string{"-query-light-max-concurrent", "-query-max-concurrent", "-query-queue-timeout"} {
		if !strings.Contains(err.Error(), flag) {
			t.Fatalf("%q does not name %s", err, flag)
		}
	}
	if _, err := e.Admit(ctx); !errors.As(err, &qe) || qe.Light != 0 || strings.Contains(err.Error(), "light") {
		t.Fatalf("heavy query: %v", err)
	}
	if l, h := testutil.ToFloat64(a.light.timeouts), testutil.ToFloat64(a.heavy.timeouts); l != 1 || h != 1 {
		t.Fatalf("timeouts light %v heavy %v", l, h)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.take(cctx, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

// TestLanesOff: without a light lane every query takes a heavy slot and
// the requests are not planned for it.
func TestLanesOff(t *testing.T) {
	for _, ln := range []Lanes{{}, {LightMaxConcurrent: 4}, {LightMaxPoints: 10}} {
		e := &Engine{admit: newLanes(Limits{MaxConcurrent: 1, QueueTimeout: 10 * time.Millisecond}, ln)}
		e.RegisterMetrics(prometheus.NewRegistry())
		reqs, rel, err := e.AdmitRequests(context.Background(), 1, func(int) (Request, bool) { t.Fatal("planned"); return Request{}, false })
		if err != nil || reqs != nil {
			t.Fatal(reqs, err)
		}
		var qe *QueueError
		if _, _, err := e.AdmitRequests(context.Background(), 1, nil); !errors.As(err, &qe) || qe.Light != 0 {
			t.Fatalf("%+v: second query %v", ln, err)
		}
		rel()
	}
}

const laneBase = int64(1_767_225_600_000) // an hour's start

// laneEnv is an engine over a store holding, for each of hosts series of
// metric m, a point every 10 s over [laneBase, laneBase+2h), flushed, and
// a point in the head at laneBase+2h.
func laneEnv(t *testing.T, hosts int, maxPoints int) *Engine {
	t.Helper()
	db := dbtest.Open(t, t.TempDir(), nil, nil)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	add := func(from, to int64) {
		var samples []series.Sample
		for h := range hosts {
			l := series.MakeLabels("m", []series.Tag{{Key: "host", Value: fmt.Sprintf("h%03d", h)}})
			for ts := from; ts < to; ts += 10_000 {
				samples = append(samples, series.Sample{Labels: l, T: ts, V: chunk.Float(1)})
			}
		}
		errs := make([]error, len(samples))
		if err := db.DB.Append(ctx, samples, errs); err != nil {
			t.Fatal(err)
		}
	}
	add(laneBase, laneBase+2*3600_000)
	if err := db.DB.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	add(laneBase+2*3600_000, laneBase+2*3600_000+1)
	e := NewEngine(db.DB.Head, db.Index, db.Store, db.Layout, Limits{MaxConcurrent: 1, QueueTimeout: time.Second})
	e.SetLanes(Lanes{LightMaxConcurrent: 1, LightMaxPoints: maxPoints})
	e.RegisterMetrics(prometheus.NewRegistry())
	return e
}

// TestLightQueries: which queries are light, from the index, the cells'
// headers and the request, before any data is read.
func TestLightQueries(t *testing.T) {
	e := laneEnv(t, 300, 1000)
	ctx := context.Background()
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, EnableAtModifier: true})
	end := time.UnixMilli(laneBase + 2*3600_000)
	stmt := func(t *testing.T, qs string, rng, step time.Duration) parser.Statement {
		t.Helper()
		var q promql.Query
		var err error
		if step == 0 {
			q, err = ng.NewInstantQuery(ctx, e.Queryable(PromLimits{}), nil, qs, end)
		} else {
			q, err = ng.NewRangeQuery(ctx, e.Queryable(PromLimits{}), nil, qs, end.Add(-rng), end, step)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(q.Close)
		return q.Statement()
	}
	for _, c := range []struct {
		name      string
		qs        string
		rng, step time.Duration
		wantLight bool
	}{
		{"one series, last 30 minutes", `m{host="h001"}`, 30 * time.Minute, 10 * time.Second, true}, // 180 + head
		{"one series, 2 hours: 720 points", `m{host="h001"}`, 2 * time.Hour, time.Minute, true},
		{"two series, 2 hours: 1440 points", `m{host=~"h00[12]"}`, 2 * time.Hour, time.Minute, false},
		{"two selectors, 720 points each", `m{host="h001"} / m{host="h002"}`, 2 * time.Hour, time.Minute, false},
		{"two selectors, 360 points each", `m{host="h001"} / m{host="h002"}`, 30 * time.Minute, time.Minute, true},
		{"a range selector", `rate(m{host="h001"}[1h])`, 30 * time.Minute, time.Minute, true},
		{"a range selector past the points", `rate(m{host=~"h00[12]"}[2h])`, 30 * time.Minute, time.Minute, false},
		{"instant", `m{host="h001"}`, 0, 0, true},
		{"every series", `sum(m)`, 0, 0, false},
		{"steps past the points", `m{host="h001"}`, 30 * time.Minute, time.Second, false},
		{"a subquery", `max_over_time(m{host="h001"}[5m:1m])`, 0, 0, false},
		{"an @ modifier", `m{host="h001"} @ 0`, 0, 0, false},
		{"no such series", `m{host="nope"}`, 2 * time.Hour, time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := e.newLightCheck().prom(ctx, stmt(t, c.qs, c.rng, c.step)) != nil; got != c.wantLight {
				t.Fatalf("light %v, want %v", got, c.wantLight)
			}
		})
	}
}

// TestLightRequests: OpenTSDB sub-queries, light together or not.
func TestLightRequests(t *testing.T) {
	e := laneEnv(t, 300, 1000)
	ctx := context.Background()
	req := func(spec string, start, end int64, hosts ...string) Request {
		r := Request{Selector: Selector{Metric: "m", Start: start, End: end}}
		for _, h := range hosts {
			r.Matchers = append(r.Matchers, exactMatcher{"host", h})
		}
		if spec != "" {
			s, err := downsample.ParseSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			r.Downsample = &s
		}
		return r
	}
	h1 := laneBase + 3600_000
	one := e.index.Select("m", []series.Matcher{exactMatcher{"host", "h001"}}, false, laneBase, h1)
	for _, c := range []struct {
		name string
		reqs []Request
		want bool
	}{
		{"raw, one series, an hour", []Request{req("", laneBase, h1-1, "h001")}, true},
		{"raw, one series, two hours: 720 points", []Request{req("", laneBase, 2*h1-laneBase-1, "h001")}, true},
		{"two sub-queries of 720 points", []Request{req("", laneBase, 2*h1-laneBase-1, "h001"), req("", laneBase, 2*h1-laneBase-1, "h002")}, false},
		{"the worst query: 1 ms buckets filled", []Request{req("1ms-avg-zero", laneBase, laneBase+4_900_000, "h001")}, false},
		{"1 ms buckets, no fill", []Request{req("1ms-avg", laneBase, laneBase+4_900_000, "h001")}, true},
		{"1 m buckets filled", []Request{req("1m-avg-zero", laneBase, h1-1, "h001")}, true},
		{"every series", []Request{req("1m-avg", laneBase, h1-1)}, false},
		{"a tsuid", []Request{{Selector: Selector{Start: laneBase, End: h1 - 1}, Entries: one}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, got := e.newLightCheck().requests(ctx, len(c.reqs), func(i int) (Request, bool) { return c.reqs[i], true }); got != c.want {
				t.Fatalf("light %v, want %v", got, c.want)
			}
		})
	}
}

// TestLightQueryWhileHeavyHeld: with the only heavy slot held, a light
// PromQL query of two selectors is admitted and runs to its answer: a
// query takes its one slot before its first Select, and its Selects take
// none, so there is no order of slots to deadlock on.
func TestLightQueryWhileHeavyHeld(t *testing.T) {
	e := laneEnv(t, 3, 1000)
	ctx := context.Background()
	heavy, err := e.Admit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer heavy()
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	end := time.UnixMilli(laneBase + 2*3600_000)
	q, err := ng.NewRangeQuery(ctx, e.Queryable(PromLimits{}), nil, `m{host="h001"} + on() m{host="h002"}`, end.Add(-30*time.Minute), end, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	qctx, rel, err := e.AdmitPromQL(ctx, q.Statement())
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	if r := testutil.ToFloat64(e.admit.light.running); r != 1 {
		t.Fatalf("light running %v", r)
	}
	res := q.Exec(qctx)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if h := promSelectionsFrom(qctx).hits.Load(); h != 2 {
		t.Fatalf("%d Selects answered by the check's selections, want 2", h)
	}
	m, err := res.Matrix()
	if err != nil || len(m) != 1 || len(m[0].Floats) != 31 || m[0].Floats[0].F != 2 {
		t.Fatalf("%v %v", m, err)
	}
}
