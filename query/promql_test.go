package query_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/chunk"
	"hourglass/internal/dbtest"
	"hourglass/query"
	"hourglass/series"
)

// promEnv is a head over a Pebble store, written to directly.
type promEnv struct {
	t    *testing.T
	head *series.DB
	eng  *query.Engine
}

func openPromEnv(t *testing.T, limits query.Limits) *promEnv {
	t.Helper()
	e := dbtest.Open(t, t.TempDir(), nil, nil)
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return &promEnv{t: t, head: e.DB, eng: query.NewEngine(e.DB.Head, e.Index, e.Store, e.Layout, limits)}
}

func (e *promEnv) add(metric string, tags map[string]string, pts ...chunk.Point) {
	e.t.Helper()
	var ts []series.Tag
	for k, v := range tags {
		ts = append(ts, series.Tag{Key: k, Value: v})
	}
	l := series.MakeLabels(metric, ts)
	samples := make([]series.Sample, len(pts))
	for i, p := range pts {
		samples[i] = series.Sample{Labels: l, T: p.T, V: p.V}
	}
	errs := make([]error, len(samples))
	if err := e.head.Append(context.Background(), samples, errs); err != nil {
		e.t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

const base = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z, an hour boundary

func fl(t int64, v float64) chunk.Point { return chunk.Point{T: t, V: chunk.Float(v)} }

// fixture writes a counter for three targets and a gauge; half of the
// counter is flushed to the store, so reads merge store and head.
func fixture(t *testing.T, limits query.Limits) *promEnv {
	e := openPromEnv(t, limits)
	for i, inst := range []string{"a", "b", "c"} {
		job := "api"
		if inst == "c" {
			job = "db"
		}
		var pts []chunk.Point
		for j := 0; j <= 20; j++ { // every 15 s, increasing by (i+1) per second
			pts = append(pts, fl(base+int64(j)*15000, float64(j*15*(i+1))))
		}
		e.add("http_requests_total", map[string]string{"job": job, "instance": inst}, pts[:10]...)
		if i == 0 {
			if err := e.head.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		e.add("http_requests_total", map[string]string{"job": job, "instance": inst}, pts[10:]...)
	}
	// An OpenTSDB metric with integer values.
	e.add("sys.cpu.user", map[string]string{"host": "a"}, chunk.Point{T: base, V: chunk.Int(42)}, chunk.Point{T: base + 60000, V: chunk.Int(43)})
	// A gauge that goes stale.
	e.add("temp", map[string]string{"room": "x y\n"}, fl(base, 20.5), fl(base+15000, 21), chunk.Point{T: base + 30000, V: chunk.FloatBits(value.StaleNaN)})
	return e
}

func selectAll(t *testing.T, q storage.Querier, start, end int64, ms ...*labels.Matcher) map[string][]chunk.Point {
	t.Helper()
	ss := q.Select(context.Background(), true, &storage.SelectHints{Start: start, End: end}, ms...)
	out := map[string][]chunk.Point{}
	var prev labels.Labels
	for ss.Next() {
		s := ss.At()
		if prev.Len() > 0 && labels.Compare(prev, s.Labels()) >= 0 {
			t.Errorf("series out of order: %s before %s", prev, s.Labels())
		}
		prev = s.Labels()
		it := s.Iterator(nil)
		var pts []chunk.Point
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			pts = append(pts, chunk.Point{T: ts, V: chunk.Float(v)})
		}
		out[s.Labels().String()] = pts
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustMatcher(t *testing.T, typ labels.MatchType, name, val string) *labels.Matcher {
	t.Helper()
	m, err := labels.NewMatcher(typ, name, val)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPromSelectMatchers(t *testing.T) {
	e := fixture(t, query.Limits{})
	q, err := e.eng.Queryable(query.PromLimits{}).Querier(base, base+3600000)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	name := mustMatcher(t, labels.MatchEqual, "__name__", "http_requests_total")
	keys := func(m map[string][]chunk.Point) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		ms   []*labels.Matcher
		want []string
	}{
		{"eq", []*labels.Matcher{name, mustMatcher(t, labels.MatchEqual, "instance", "a")}, []string{`{__name__="http_requests_total", instance="a", job="api"}`}},
		{"neq", []*labels.Matcher{name, mustMatcher(t, labels.MatchNotEqual, "job", "api")}, []string{`{__name__="http_requests_total", instance="c", job="db"}`}},
		{"re", []*labels.Matcher{name, mustMatcher(t, labels.MatchRegexp, "instance", "a|b")}, []string{
			`{__name__="http_requests_total", instance="a", job="api"}`, `{__name__="http_requests_total", instance="b", job="api"}`}},
		{"nre", []*labels.Matcher{name, mustMatcher(t, labels.MatchNotRegexp, "instance", "[ab]")}, []string{`{__name__="http_requests_total", instance="c", job="db"}`}},
		{"name regex", []*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "__name__", "sys\\..*|temp")}, []string{
			`{__name__="sys.cpu.user", host="a"}`, `{__name__="temp", room="x y\n"}`}},
		{"no name, a label", []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "host", "a")}, []string{`{__name__="sys.cpu.user", host="a"}`}},
		{"absent label matches empty", []*labels.Matcher{name, mustMatcher(t, labels.MatchEqual, "host", "")}, []string{
			`{__name__="http_requests_total", instance="a", job="api"}`, `{__name__="http_requests_total", instance="b", job="api"}`,
			`{__name__="http_requests_total", instance="c", job="db"}`}},
		{"unknown metric", []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "nope")}, nil},
		{"no matchers", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keys(selectAll(t, q, base, base+3600000, tc.ms...))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	t.Run("values", func(t *testing.T) {
		all := selectAll(t, q, base+150000, base+165000, name, mustMatcher(t, labels.MatchEqual, "instance", "b"))
		pts := all[`{__name__="http_requests_total", instance="b", job="api"}`]
		want := []chunk.Point{fl(base+150000, 300), fl(base+165000, 330)}
		if !slices.Equal(pts, want) {
			t.Fatalf("got %v, want %v", pts, want)
		}
		tmp := selectAll(t, q, base, base+3600000, mustMatcher(t, labels.MatchEqual, "__name__", "temp"))[`{__name__="temp", room="x y\n"}`]
		if len(tmp) != 3 || math.Float64bits(tmp[2].V.Float()) != value.StaleNaN {
			t.Fatalf("staleness marker not bit-exact: %v", tmp)
		}
		cpu := selectAll(t, q, base, base+3600000, mustMatcher(t, labels.MatchEqual, "__name__", "sys.cpu.user"))[`{__name__="sys.cpu.user", host="a"}`]
		if len(cpu) != 2 || cpu[0].V.Float() != 42 {
			t.Fatalf("integer points: %v", cpu)
		}
	})
	t.Run("series hint reads no samples", func(t *testing.T) {
		ss := q.Select(context.Background(), true, &storage.SelectHints{Start: base, End: base + 3600000, Func: "series", Limit: 2}, name)
		n := 0
		for ss.Next() {
			n++
			if ss.At().Iterator(nil).Next() != chunkenc.ValNone {
				t.Fatal("series hint: samples read")
			}
		}
		if n != 2 {
			t.Fatalf("limit 2: %d series", n)
		}
	})
}

func TestPromLabels(t *testing.T) {
	e := fixture(t, query.Limits{})
	q, _ := e.eng.Queryable(query.PromLimits{}).Querier(base, base+3600000)
	ctx := context.Background()
	names, _, err := q.LabelNames(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"__name__", "host", "instance", "job", "room"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	names, _, _ = q.LabelNames(ctx, nil, mustMatcher(t, labels.MatchEqual, "job", "db"))
	if want := []string{"__name__", "instance", "job"}; !slices.Equal(names, want) {
		t.Errorf("names of job=db: %q, want %q", names, want)
	}
	vals, _, _ := q.LabelValues(ctx, "__name__", nil)
	if want := []string{"http_requests_total", "sys.cpu.user", "temp"}; !slices.Equal(vals, want) {
		t.Errorf("metric names %q, want %q", vals, want)
	}
	vals, _, _ = q.LabelValues(ctx, "instance", &storage.LabelHints{Limit: 2})
	if want := []string{"a", "b"}; !slices.Equal(vals, want) {
		t.Errorf("instances, limit 2: %q, want %q", vals, want)
	}
	vals, _, _ = q.LabelValues(ctx, "instance", nil, mustMatcher(t, labels.MatchEqual, "job", "api"))
	if want := []string{"a", "b"}; !slices.Equal(vals, want) {
		t.Errorf("instances of job=api: %q, want %q", vals, want)
	}
	// Outside the range of the data, matchers find nothing.
	q2, _ := e.eng.Queryable(query.PromLimits{}).Querier(base+10*86400000, base+11*86400000)
	vals, _, _ = q2.LabelValues(ctx, "instance", nil, mustMatcher(t, labels.MatchEqual, "job", "api"))
	if len(vals) != 0 {
		t.Errorf("values ten days later: %q", vals)
	}
}

func TestPromLimits(t *testing.T) {
	e := fixture(t, query.Limits{})
	name := mustMatcher(t, labels.MatchEqual, "__name__", "http_requests_total")
	for _, tc := range []struct {
		lim  query.PromLimits
		what string
	}{
		{query.PromLimits{MaxSeries: 2}, "series"},
		{query.PromLimits{MaxSamples: 40}, "samples"},
	} {
		q, _ := e.eng.Queryable(tc.lim).Querier(base, base+3600000)
		ss := q.Select(context.Background(), true, &storage.SelectHints{Start: base, End: base + 3600000}, name)
		for ss.Next() {
		}
		var le *query.LimitError
		if !errors.As(ss.Err(), &le) || le.What != tc.what {
			t.Errorf("%+v: error %v, want a %s LimitError", tc.lim, ss.Err(), tc.what)
		}
	}
	// Within the limits, no error; the sample budget spans selects.
	q, _ := e.eng.Queryable(query.PromLimits{MaxSeries: 3, MaxSamples: 63}).Querier(base, base+3600000)
	if got := selectAll(t, q, base, base+3600000, name); len(got) != 3 {
		t.Fatalf("%d series", len(got))
	}
	ss := q.Select(context.Background(), true, &storage.SelectHints{Start: base, End: base + 3600000}, mustMatcher(t, labels.MatchEqual, "__name__", "temp"))
	for ss.Next() {
	}
	if ss.Err() == nil {
		t.Error("a second select past the budget must fail")
	}
}

// TestPromQLEngine runs the official engine over the queryable and checks
// answers computed by hand.
func TestPromQLEngine(t *testing.T) {
	e := fixture(t, query.Limits{})
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := e.eng.Queryable(query.PromLimits{})
	at := time.UnixMilli(base + 300000) // the last sample (j=20)
	run := func(expr string) promql.Vector {
		t.Helper()
		q, err := eng.NewInstantQuery(context.Background(), qy, nil, expr, at)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		v, err := res.Vector()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Instance a grows 1/s, b 2/s, c 3/s; rate over 2m of evenly spaced
	// samples with no extrapolation past the window edges is exactly that.
	v := run(`rate(http_requests_total[2m])`)
	if len(v) != 3 {
		t.Fatalf("rate: %v", v)
	}
	for i, s := range v {
		if want := float64(i + 1); math.Abs(s.F-want) > 1e-9 {
			t.Errorf("rate of %s = %v, want %v", s.Metric, s.F, want)
		}
	}
	v = run(`sum by (job) (rate(http_requests_total[2m]))`)
	got := map[string]float64{}
	for _, s := range v {
		got[s.Metric.Get("job")] = s.F
	}
	if math.Abs(got["api"]-3) > 1e-9 || math.Abs(got["db"]-3) > 1e-9 || len(got) != 2 {
		t.Errorf("sum by job: %v, want api=3 db=3", got)
	}
	v = run(`{__name__="sys.cpu.user", host="a"}`)
	if len(v) != 1 || v[0].F != 43 {
		t.Errorf("OpenTSDB metric over PromQL: %v", v)
	}
	// temp went stale at +30s: at +20s it is 21, at +40s it is gone
	// although the lookback (5m) would still reach the sample of +15s.
	at = time.UnixMilli(base + 20000)
	if v = run(`temp`); len(v) != 1 || v[0].F != 21 {
		t.Errorf("temp before the staleness marker: %v", v)
	}
	at = time.UnixMilli(base + 40000)
	if v = run(`temp`); len(v) != 0 {
		t.Errorf("temp after the staleness marker: %v", v)
	}
}
