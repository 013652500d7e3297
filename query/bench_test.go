package query_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/internal/cputime"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// The long query of the load generator's dashboard mix (loadtest/query.go,
// KindLong) over data shaped like its own: benchSeries hosts, each in one of
// 12 dcs of 4 regions, one gauge (a random walk in hundredths) every 10 s
// for 24 h, all but the last hour flushed to a Pebble store (the last hour
// stays in the head, as the open chunks of a running server do). The query
// is 24 h ending at the last whole hour, averaged in 1 h buckets and then
// across each dc.
const (
	benchSeries = 417
	benchSteps  = 8640
	benchStepMs = 10_000
	benchT0     = int64(1_700_000_000_000) / rowkey.HourMs * rowkey.HourMs
)

type benchEnv struct {
	head       *series.DB
	st         *pebble.Store
	eng        *query.Engine
	idx        *series.Index
	layout     rowkey.Layout
	start, end int64
	points     int
	inRange    int // points in [start, end], which every benchmark reads
}

var (
	benchOnce sync.Once
	benchData *benchEnv
	benchErr  error
	benchDir  string
)

// openBench builds the data set once per process: writing 3.6 M points
// takes seconds, and the benchmarks only read it.
func openBench(b *testing.B) *benchEnv {
	b.Helper()
	benchOnce.Do(func() {
		var err error
		// Not b.TempDir: the data outlives the first benchmark.
		benchDir, err = os.MkdirTemp("", "hourglass-query-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchData, benchErr = buildBench(benchDir, benchSeries, benchSteps)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchData
}

func buildBench(dir string, nSeries, steps int) (*benchEnv, error) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
	if err != nil {
		return nil, err
	}
	layout, err := series.RecordLayout(ctx, st, rowkey.DefaultLayout())
	if err != nil {
		return nil, err
	}
	idx, err := series.LoadIndex(ctx, st, layout)
	if err != nil {
		return nil, err
	}
	// The head's clock: the wall clock (every chunk of the data, years
	// old, a late one) until the last hour, then the time of the point
	// being written, so that the last hour's chunks are open in time and
	// freeze as a running server's do (series/head_frozen.go).
	var clock atomic.Int64
	now := func() time.Time {
		if ms := clock.Load(); ms != 0 {
			return time.UnixMilli(ms)
		}
		return time.Now()
	}
	h, err := series.Open(ctx, st, uid.New(st, layout, uid.Options{}), idx, series.Options{
		Layout: layout, Logger: quiet, WAL: wal.Options{Dir: filepath.Join(dir, "wal")}, Now: now,
	})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ls := make([]series.Labels, nSeries)
	vals := make([]int64, nSeries)
	for i := range ls {
		region := i % 4
		dc := region*3 + (i/4)%3
		ls[i] = series.MakeLabels("cpu.usage", []series.Tag{
			{Key: "region", Value: fmt.Sprintf("r%d", region)},
			{Key: "dc", Value: fmt.Sprintf("dc%02d", dc)},
			{Key: "host", Value: fmt.Sprintf("h%05d", i)},
		})
		vals[i] = 5000 + rng.Int64N(2000)
	}
	samples := make([]series.Sample, nSeries)
	errs := make([]error, nSeries)
	for s := range steps {
		if s == steps-int(rowkey.HourMs/benchStepMs) {
			// The last hour stays in the head.
			if err := h.Flush(ctx); err != nil {
				return nil, err
			}
		}
		t := benchT0 + int64(s)*benchStepMs
		if s >= steps-int(rowkey.HourMs/benchStepMs) {
			clock.Store(t)
		}
		for i := range ls {
			vals[i] = min(max(vals[i]+rng.Int64N(201)-100, 0), 10000)
			samples[i] = series.Sample{Labels: ls[i], T: t, V: chunk.Float(float64(vals[i]) / 100)}
		}
		if err := h.Append(ctx, samples, errs); err != nil {
			return nil, err
		}
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
	}
	last := benchT0 + int64(steps-1)*benchStepMs
	end := last - last%rowkey.HourMs
	start := end - 24*rowkey.HourMs
	perSeries := (end-max(start, benchT0))/benchStepMs + 1
	return &benchEnv{head: h, st: st, eng: query.NewEngine(h.Head, idx, st, layout, query.Limits{}), idx: idx, layout: layout, start: start, end: end,
		points: nSeries * steps, inRange: nSeries * int(perSeries)}, nil
}

// BenchmarkLongQuery runs the long query through Engine.Run (/api/query's
// path: Fetch, then Process) and through the PromQL engine over the
// queryable (/api/v1/query_range's path).
func BenchmarkLongQuery(b *testing.B) {
	env := openBench(b)
	ctx := context.Background()
	b.Run("opentsdb", func(b *testing.B) {
		spec, err := downsample.ParseSpec("1h-avg")
		if err != nil {
			b.Fatal(err)
		}
		avg, err := downsample.Lookup("avg")
		if err != nil {
			b.Fatal(err)
		}
		req := query.Request{
			Selector:   query.Selector{Metric: "cpu.usage", Matchers: []series.Matcher{anyValue("dc")}, Start: env.start, End: env.end},
			Aggregator: avg,
			Downsample: &spec,
			GroupBy:    []string{"dc"},
		}
		b.ReportAllocs()
		defer reportCPU(b, startCPU(), env.inRange)
		for b.Loop() {
			res, err := env.eng.Run(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if len(res) != 12 || len(res[0].Points) != 24 {
				b.Fatalf("%d results, %d points in the first", len(res), len(res[0].Points))
			}
		}
	})
	b.Run("promql", func(b *testing.B) { benchPromQL(b, env, true) })
	// The same without PromPushdown: the engine folds every sample itself.
	b.Run("promql-unfolded", func(b *testing.B) { benchPromQL(b, env, false) })
	b.Run("fetch-raw", func(b *testing.B) {
		// The scan alone, without downsampling: every point materialised.
		sel := query.Selector{Metric: "cpu.usage", Start: env.start - rowkey.HourMs, End: env.end}
		b.ReportAllocs()
		defer reportCPU(b, startCPU(), env.inRange)
		for b.Loop() {
			ss, err := env.eng.Select(ctx, sel)
			if err != nil {
				b.Fatal(err)
			}
			if len(ss) != benchSeries {
				b.Fatalf("%d series", len(ss))
			}
		}
	})
}

// benchPromQL runs the long query through the PromQL engine over the
// queryable, with the context the server gives it (PromPushdown) when fold.
func benchPromQL(b *testing.B, env *benchEnv, fold bool) {
	ctx := context.Background()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(query.PromLimits{})
	b.ReportAllocs()
	defer reportCPU(b, startCPU(), env.inRange)
	for b.Loop() {
		q, err := eng.NewRangeQuery(ctx, qy, nil, `avg by (dc) (avg_over_time({__name__="cpu.usage"}[1h]))`,
			time.UnixMilli(env.start), time.UnixMilli(env.end), time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		ectx := ctx
		if fold {
			ectx = query.PromPushdown(ctx, q.Statement())
		}
		res := q.Exec(ectx)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		m, err := res.Matrix()
		if err != nil {
			b.Fatal(err)
		}
		if len(m) != 12 || len(m[0].Floats) != 24 {
			b.Fatalf("%d series, %d points in the first", len(m), len(m[0].Floats))
		}
		q.Close()
	}
}

// startCPU returns the process's CPU time so far; reportCPU reports the
// CPU time per operation since then beside the wall clock, which on a
// machine shared with other work counts time spent waiting for a CPU.
func startCPU() time.Duration {
	t, _ := cputime.Process()
	return t
}

func reportCPU(b *testing.B, start time.Duration, points int) {
	if t, ok := cputime.Process(); ok {
		ns := float64((t - start).Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns, "cpu-ns/op")
		if points > 0 {
			b.ReportMetric(ns/float64(points), "cpu-ns/point")
		}
	}
}

// anyValue matches every series that has the tag key (OpenTSDB's tag=*).
type anyValue string

func (m anyValue) Key() string                    { return string(m) }
func (m anyValue) Matches(_ string, ok bool) bool { return ok }

// literal matches the series whose tag has one value (OpenTSDB's tag=v),
// which the index answers from its postings.
type literal struct{ key, value string }

func (m literal) Key() string                    { return m.key }
func (m literal) Matches(v string, ok bool) bool { return ok && v == m.value }
func (m literal) Literals() ([]string, bool)     { return []string{m.value}, true }

// TestMain removes the benchmarks' data set.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchData != nil {
		benchData.head.Close()
		benchData.st.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	closeRollBench() // rollup_bench_test.go
	os.Exit(code)
}

// BenchmarkPromMix runs the PromQL kinds of the load generator's mix
// (loadtest/query.go) over the bench data: an hour at 1 m steps, ending an
// hour before the last point (in the store; the last hour is in the head),
// with the server's PromPushdown. rate reads the gauge as a counter (its
// drops are resets): the work is the same. cpu-ns/point is per point in
// the hour read (the selectors read 5 m more).
func BenchmarkPromMix(b *testing.B) {
	env := openBench(b)
	// The head's hour: the last hour of points, 10 s before the next
	// whole hour (the load generator's queries end at the last point).
	headEnd := env.end + rowkey.HourMs - benchStepMs
	for _, c := range []struct {
		name, q string
		k       int // series × 61 steps answered (361 for raw)
		head    bool
	}{
		{"sum", `sum by (region) ({__name__="cpu.usage"})`, 4, false},
		{"topk", `topk(5, {__name__="cpu.usage"})`, 5, false},
		{"rate", `sum by (region) (rate({__name__="cpu.usage"}[5m]))`, 4, false},
		// The same over the head's hour, and the raw kind (one series at
		// the points' own 10 s steps).
		{"head-sum", `sum by (region) ({__name__="cpu.usage"})`, 4, true},
		{"head-topk", `topk(5, {__name__="cpu.usage"})`, 5, true},
		{"head-rate", `sum by (region) (rate({__name__="cpu.usage"}[5m]))`, 4, true},
		{"head-raw", `{__name__="cpu.usage",host="h00007"}`, 1, true},
		// The head's last half hour: the range cuts the open chunks.
		{"head-half-sum", `sum by (region) ({__name__="cpu.usage"})`, 4, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
			qy := env.eng.Queryable(query.PromLimits{})
			end, step, steps, perSeries := env.end, time.Minute, 61, benchSeries
			if c.head {
				end = headEnd
			}
			if strings.HasSuffix(c.name, "raw") {
				step, steps, perSeries = benchStepMs*time.Millisecond, int(rowkey.HourMs/benchStepMs+1), 1
			}
			rng := rowkey.HourMs
			if strings.Contains(c.name, "half") {
				rng, steps = rowkey.HourMs/2, 31
			}
			start := end - rng
			b.ReportAllocs()
			defer reportCPU(b, startCPU(), perSeries*int(rng/benchStepMs+1))
			for b.Loop() {
				q, err := eng.NewRangeQuery(ctx, qy, nil, c.q, time.UnixMilli(start), time.UnixMilli(end), step)
				if err != nil {
					b.Fatal(err)
				}
				res := q.Exec(query.PromPushdown(ctx, q.Statement()))
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				m, err := res.Matrix()
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for _, s := range m {
					n += len(s.Floats)
				}
				if want := c.k * steps; n != want {
					b.Fatalf("%d series, %d points, want %d", len(m), n, want)
				}
				q.Close()
			}
		})
	}
}

// BenchmarkRunMix runs the /api/query kinds of the load generator's mix
// (loadtest/query.go) through Engine.Run over the bench data, as
// BenchmarkPromMix does through PromQL: an hour ending an hour before the
// last point (in the store), 1 m downsampling; rate reads the gauge as a
// counter; topk is each series' maximum over the hour (0all-max, no
// aggregator). The head- cases end at the last point (the head's hour,
// as the load generator's queries do); raw is one host's points. The mid-
// cases end half an hour into the head's hour, so that their hour starts
// in the middle of the store's last one, as most of the load generator's
// do (it ends its queries at the minute of the last point).
func BenchmarkRunMix(b *testing.B) {
	env := openBench(b)
	ctx := context.Background()
	parse := func(s string) *downsample.Spec {
		spec, err := downsample.ParseSpec(s)
		if err != nil {
			b.Fatal(err)
		}
		return &spec
	}
	lookup := func(s string) *downsample.Aggregator {
		a, err := downsample.Lookup(s)
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	headEnd := env.end + rowkey.HourMs - benchStepMs
	for _, c := range []struct {
		name    string
		agg     string
		ds      string
		rate    bool
		groupBy string
		host    string
		head    bool
		mid     bool
		results int
	}{
		{name: "sum", agg: "sum", ds: "1m-avg", groupBy: "region", results: 4},
		{name: "rate", agg: "sum", ds: "1m-avg", groupBy: "region", rate: true, results: 4},
		{name: "topk", agg: "none", ds: "0all-max", results: benchSeries},
		{name: "head-sum", agg: "sum", ds: "1m-avg", groupBy: "region", head: true, results: 4},
		{name: "head-rate", agg: "sum", ds: "1m-avg", groupBy: "region", rate: true, head: true, results: 4},
		{name: "head-topk", agg: "none", ds: "0all-max", head: true, results: benchSeries},
		{name: "head-raw", agg: "none", host: "h00007", head: true, results: 1},
		{name: "mid-sum", agg: "sum", ds: "1m-avg", groupBy: "region", mid: true, results: 4},
		{name: "mid-rate", agg: "sum", ds: "1m-avg", groupBy: "region", rate: true, mid: true, results: 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			end := env.end
			switch {
			case c.head:
				end = headEnd
			case c.mid:
				end = env.end + rowkey.HourMs/2
			}
			req := query.Request{
				Selector:   query.Selector{Metric: "cpu.usage", Start: end - rowkey.HourMs, End: end},
				Aggregator: lookup(c.agg),
				Rate:       c.rate,
			}
			if c.ds != "" {
				req.Downsample = parse(c.ds)
			}
			if c.groupBy != "" {
				req.Matchers = []series.Matcher{anyValue(c.groupBy)}
				req.GroupBy = []string{c.groupBy}
			}
			if c.host != "" {
				req.Matchers = []series.Matcher{literal{"host", c.host}}
			}
			req.RateOptions.Counter = true
			perSeries := int(rowkey.HourMs/benchStepMs + 1)
			n := benchSeries * perSeries
			if c.host != "" {
				n = perSeries
			}
			b.ReportAllocs()
			defer reportCPU(b, startCPU(), n)
			for b.Loop() {
				res, err := env.eng.Run(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if len(res) != c.results {
					b.Fatalf("%d results", len(res))
				}
			}
		})
	}
}
