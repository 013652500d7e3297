package query

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// openGrid is an engine over data shaped like the load generator's: a
// point every 10 s on the minute's grid for 8 h, gauges with two decimals
// and integer counters that reset now and then; the first 6 h in the
// store, the last 2 h in the head.
func openGrid(t *testing.T, seed uint64) *equivEnv {
	t.Helper()
	ctx := context.Background()
	ts := openTestStore(t, time.UnixMilli(equivBase+9*rowkey.HourMs))
	st, layout := ts.st, ts.layout
	r := rand.New(rand.NewPCG(seed, 21))
	const nSeries = 12
	split := equivBase + 6*rowkey.HourMs
	var stored, held []series.Sample
	for i := range nSeries {
		counter := i%2 == 0
		name := "gauge"
		if counter {
			name = "requests_total"
		}
		l := series.MakeLabels(name, []series.Tag{{Key: "host", Value: fmt.Sprintf("h%02d", i)}})
		var c int64
		g := 5000.0
		for tt := equivBase; tt < equivBase+8*rowkey.HourMs; tt += 10_000 {
			var v chunk.Value
			if counter {
				if r.IntN(500) == 0 {
					c = r.Int64N(10)
				} else {
					c += r.Int64N(100)
				}
				v = chunk.Int(c)
			} else {
				g += float64(r.IntN(201) - 100)
				v = chunk.Float(g / 100)
			}
			s := series.Sample{Labels: l, T: tt, V: v}
			if tt < split {
				stored = append(stored, s)
			} else {
				held = append(held, s)
			}
		}
	}
	write := func(h *series.DB, samples []series.Sample) {
		errs := make([]error, len(samples))
		if err := h.Append(ctx, samples, errs); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := ts.openHead("wal1")
	write(h, stored)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h, idx := ts.openHead("wal2")
	write(h, held)
	t.Cleanup(func() { h.Close() })
	env := &equivEnv{head: h, st: st, eng: NewEngine(h.Head, idx, st, layout, Limits{}), layout: layout,
		first: equivBase, last: equivBase + 8*rowkey.HourMs - 1}
	for _, m := range []string{"gauge", "requests_total"} {
		env.entries = append(env.entries, idx.Select(m, nil, false, env.first, env.last)...)
	}
	return env
}

// testStore is a Pebble store in a test's directory and the heads opened
// over it, with a clock at now and a long grace: nothing seals by itself.
type testStore struct {
	t      *testing.T
	dir    string
	st     *pebble.Store
	layout rowkey.Layout
	now    time.Time
}

func openTestStore(t *testing.T, now time.Time) *testStore {
	t.Helper()
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	layout, err := series.RecordLayout(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	return &testStore{t: t, dir: dir, st: st, layout: layout, now: now}
}

// openHead opens a head over the store with its WAL in wdir.
func (ts *testStore) openHead(wdir string) (*series.DB, *series.Index) {
	t, ctx := ts.t, context.Background()
	t.Helper()
	idx, err := series.LoadIndex(ctx, ts.st, ts.layout)
	if err != nil {
		t.Fatal(err)
	}
	h, err := series.Open(ctx, ts.st, uid.New(ts.st, ts.layout, uid.Options{}), idx, series.Options{
		Layout: ts.layout, Logger: slog.New(slog.DiscardHandler), WAL: wal.Options{Dir: filepath.Join(ts.dir, wdir)},
		ChunkMaxPoints: 1 << 20, Grace: 1000 * time.Hour, SweepInterval: time.Hour,
		Now: func() time.Time { return ts.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, idx
}

// diffStats sums up how far the answers from rollups are from the raw ones.
type diffStats struct {
	points, equal, missing int
	maxRel                 float64
}

func (d *diffStats) String() string {
	return fmt.Sprintf("%d steps, %d equal (%.0f %%), %d missing, max relative difference %.3g",
		d.points, d.equal, 100*float64(d.equal)/float64(max(d.points, 1)), d.missing, d.maxRel)
}

// TestPromRollupDifferences measures, over load-generator-shaped data,
// how far PromQL answers with max_source_resolution are from the raw ones,
// per function, for windows aligned to the resolution (Grafana's $__range
// steps usually are not; see docs/rollups.md), and holds them to the
// bounds docs/rollups.md states. go test -run TestPromRollupDifferences -v
// prints the table.
func TestPromRollupDifferences(t *testing.T) {
	ctx := context.Background()
	env := openGrid(t, 1)
	mem := newMemRollups(t, env, 600_000, 3_600_000)
	env.eng.SetRollups(mem, nil)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	p := parser.NewParser(parser.Options{})
	run := func(ctx context.Context, qs string, start, end, step int64) map[string]map[int64]float64 {
		t.Helper()
		q, err := eng.NewRangeQuery(ctx, qy, nil, qs, time.UnixMilli(start), time.UnixMilli(end), time.Duration(step)*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		res := q.Exec(ctx)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		out := map[string]map[int64]float64{}
		m, _ := res.Value.(promql.Matrix)
		for _, s := range m {
			pts := map[int64]float64{}
			for _, f := range s.Floats {
				pts[f.T] = f.F
			}
			out[s.Metric.String()] = pts
		}
		return out
	}
	type tcase struct {
		fn, metric string
		rng        string
		res, step  int64
		// bound on the relative difference at any step
		bound float64
	}
	var cases []tcase
	for _, res := range []int64{600_000, 3_600_000} {
		for _, c := range []tcase{
			{"max_over_time", "gauge", "1h", 0, 0, 0.03},
			{"min_over_time", "gauge", "1h", 0, 0, 0.03},
			{"sum_over_time", "gauge", "1h", 0, 0, 0.005},
			{"count_over_time", "gauge", "1h", 0, 0, 0.003},
			{"avg_over_time", "gauge", "1h", 0, 0, 0.002},
			{"last_over_time", "gauge", "1h", 0, 0, 0.03},
			{"rate", "requests_total", "1h", 0, 0, 0.006},
			{"increase", "requests_total", "2h", 0, 0, 0.003},
			{"delta", "gauge", "1h", 0, 0, 1},
			{"resets", "requests_total", "2h", 0, 0, 0.34},
			{"changes", "gauge", "1h", 0, 0, 0.006},
		} {
			c.res, c.step = res, max(res, 600_000)
			cases = append(cases, c)
		}
	}
	start, end := env.first+2*rowkey.HourMs, env.last-(env.last%600_000)
	var report []string
	for _, c := range cases {
		qs := fmt.Sprintf("%s(%s[%s])", c.fn, c.metric, c.rng)
		raw := run(ctx, qs, start, end, c.step)
		expr, err := p.ParseExpr(qs)
		if err != nil {
			t.Fatal(err)
		}
		rq := env.eng.RewriteForRollups(expr, c.res, c.step).String()
		before := mem.reads
		got := run(WithMaxSourceResolution(ctx, c.res), rq, start, end, c.step)
		if mem.reads == before {
			t.Fatalf("%s at %d: no rollup read", qs, c.res)
		}
		if c.fn == "avg_over_time" && mem.reads != before+1 {
			// Its two halves, sums and counts, share one read (avgShare).
			t.Fatalf("%s at %d: %d rollup reads, want 1", qs, c.res, mem.reads-before)
		}
		var d diffStats
		for k, pts := range raw {
			// Differences are relative to the answer, or to the mean
			// size of the series' answers where the answer is near 0
			// (a delta).
			scale := 0.0
			for _, w := range pts {
				scale += math.Abs(w) / float64(len(pts))
			}
			for ts, w := range pts {
				d.points++
				g, ok := got[k][ts]
				switch {
				case !ok:
					d.missing++
				case g == w:
					d.equal++
				default:
					rel := math.Abs(g-w) / math.Max(math.Abs(w), scale)
					d.maxRel = max(d.maxRel, rel)
				}
			}
		}
		line := fmt.Sprintf("%-16s %-15s [%s] res %-3s step %-3s: %s", c.fn, c.metric, c.rng, FormatInterval(c.res), FormatInterval(c.step), &d)
		report = append(report, line)
		if d.missing > 0 || d.maxRel > c.bound || d.points == 0 {
			t.Errorf("%s: beyond the bound %.3g", line, c.bound)
		}
	}
	sort.Strings(report)
	t.Log("PromQL from rollups against raw, windows aligned to the resolution:\n" + strings.Join(report, "\n"))
}

func TestParseMaxSourceResolution(t *testing.T) {
	for _, c := range []struct {
		in   string
		step time.Duration
		want int64
		err  bool
	}{
		{"", time.Hour, 0, false}, {"0s", time.Hour, 0, false}, {"0", time.Hour, 0, false},
		{"5m", time.Hour, 300_000, false}, {"1h", 0, 3_600_000, false}, {"300", 0, 300_000, false},
		{"1.5", 0, 1500, false}, {"auto", time.Hour, 720_000, false}, {"auto", 0, 0, false},
		{"-5m", 0, 0, true}, {"-1", 0, 0, true}, {"soon", 0, 0, true}, {"NaN", 0, 0, true}, {"1e300", 0, 0, true},
	} {
		got, err := ParseMaxSourceResolution(c.in, c.step)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseMaxSourceResolution(%q, %s) = %d, %v; want %d, error %v", c.in, c.step, got, err, c.want, c.err)
		}
	}
}

func FuzzParseMaxSourceResolution(f *testing.F) {
	for _, s := range []string{"", "0s", "auto", "5m", "1h30m", "-1", "1.5", "NaN", "9223372036854775807", "1e19"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMaxSourceResolution(s, time.Hour)
		if err == nil && ms < 0 {
			t.Fatalf("%q: negative %d without an error", s, ms)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Fatalf("%q: error too long", s)
		}
	})
}

// TestRewriteForRollups: count_over_time and avg_over_time of a selector
// that will read rollups become sums of the buckets' counts and sums;
// others, and ranges or steps below the resolution, stay.
func TestRewriteForRollups(t *testing.T) {
	e := &Engine{}
	e.SetRollups(&memRollups{ivs: []int64{600_000, 3_600_000}}, nil)
	p := parser.NewParser(parser.Options{})
	for _, c := range []struct {
		in        string
		res, step int64
		want      string
	}{
		{`count_over_time(m[1h])`, 3_600_000, 3_600_000, `sum_over_time(m{__hourglass_rollup__="count"}[1h])`},
		{`sum by (a) (avg_over_time(m{a="b"}[2h]))`, 3_600_000, 0,
			`sum by (a) ((sum_over_time(m{__hourglass_rollup__="avg_sum",a="b"}[2h]) / sum_over_time(m{__hourglass_rollup__="avg_count",a="b"}[2h])))`},
		{`count_over_time(m[5m])`, 3_600_000, 3_600_000, `count_over_time(m[5m])`},
		{`count_over_time(m[1h])`, 3_600_000, 60_000, `count_over_time(m[1h])`},
		{`count_over_time(m[1h])`, 0, 3_600_000, `count_over_time(m[1h])`},
		{`max_over_time(m[1h])`, 3_600_000, 3_600_000, `max_over_time(m[1h])`},
		{`resets(m[2h]) + changes(m[1h])`, 3_600_000, 3_600_000,
			`sum_over_time(m{__hourglass_rollup__="resets"}[2h]) + sum_over_time(m{__hourglass_rollup__="changes"}[1h])`},
		{`count_over_time(rate(m[5m])[1h:])`, 3_600_000, 3_600_000, `count_over_time(rate(m[5m])[1h:])`},
	} {
		expr, err := p.ParseExpr(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got := e.RewriteForRollups(expr, c.res, c.step).String()
		if got != c.want {
			t.Errorf("%s (res %d, step %d):\ngot  %s\nwant %s", c.in, c.res, c.step, got, c.want)
		}
		if _, err := p.ParseExpr(got); err != nil {
			t.Errorf("%s does not parse: %v", got, err)
		}
	}
}

// TestPromRollupLimits: a selector read from rollups is held to the same
// limits as a raw one: steps × series, and the samples it loads.
func TestPromRollupLimits(t *testing.T) {
	ctx := context.Background()
	env := openGrid(t, 2)
	mem := newMemRollups(t, env, 3_600_000)
	env.eng.SetRollups(mem, nil)
	ctx = WithMaxSourceResolution(ctx, 3_600_000)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	start, end := env.first+2*rowkey.HourMs, env.first+6*rowkey.HourMs
	for _, c := range []struct {
		lim  PromLimits
		want string
	}{
		{PromLimits{MaxOutputPoints: 20}, "output points"}, // 6 series × 5 steps
		{PromLimits{MaxSamples: 10}, "samples"},
		{PromLimits{}, ""},
	} {
		qy := env.eng.Queryable(c.lim)
		before := mem.reads
		q, err := eng.NewRangeQuery(ctx, qy, nil, "max_over_time(gauge[1h])",
			time.UnixMilli(start), time.UnixMilli(end), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(ctx)
		q.Close()
		read := mem.reads > before
		switch {
		case c.want == "" && (res.Err != nil || !read):
			t.Errorf("no limit: %v, rollups read %v", res.Err, read)
		case c.want != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one about %s", c.lim, res.Err, c.want)
		case c.want == "output points" && read:
			t.Errorf("%+v: the rollups were read before the limit stopped the query", c.lim)
		case c.want == "samples" && !read:
			t.Errorf("%+v: no rollup read", c.lim)
		}
	}
}
