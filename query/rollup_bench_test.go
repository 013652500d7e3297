package query_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/internal/dbtest"
	"hourglass/loadtest"
	"hourglass/query"
	"hourglass/rollup"
	"hourglass/series"
)

// The rollup read path (issue 13) over the load generator's data: 30 days
// of rollBenchHosts hosts × 12 metrics at rollBenchStep, written through
// the engine with 1h rollups and flushed (every hour settled), then the
// dashboard query of loadtest/rollup.go, avg:1h-avg:<metric>{dc=*}, for
// each metric, from rollups and with ROLLUP_RAW.
const (
	rollBenchHosts = 40 // 480 series
	rollBenchDays  = 30
	rollBenchStep  = 5 * time.Minute
	rollBenchStart = int64(1_763_510_400_000) // 2025-11-19T00:00Z, as docs/benchmarks.md
)

type rollBenchEnv struct {
	env        *dbtest.Env
	eng        *query.Engine
	reader     *query.StoreRollups
	start, end int64
	points     int64
	series     int
}

var (
	rollBenchOnce sync.Once
	rollBenchData *rollBenchEnv
	rollBenchDir  string
)

func openRollBench(b *testing.B) *rollBenchEnv {
	b.Helper()
	rollBenchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hourglass-rollup-bench-")
		if err != nil {
			b.Fatal(err)
		}
		rollBenchDir = dir
		rollBenchData = buildRollBench(b, dir)
	})
	if rollBenchData == nil {
		b.Fatal("the rollup benchmark's data set failed earlier")
	}
	return rollBenchData
}

func buildRollBench(b *testing.B, dir string) *rollBenchEnv {
	ctx := context.Background()
	env := dbtest.Open(b, dir, func(o *series.Options) {
		o.Rollup = series.DefaultRollupOptions()
		o.Rollup.Intervals = []time.Duration{time.Hour}
	}, nil)
	steps := int(rollBenchDays * 24 * time.Hour / rollBenchStep)
	g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 1, Series: rollBenchHosts * len(loadtest.Metrics),
		Interval: rollBenchStep, Start: time.UnixMilli(rollBenchStart), Steps: steps})
	if err != nil {
		b.Fatal(err)
	}
	labels := map[*loadtest.Series]series.Labels{}
	var batch []series.Sample
	var points int64
	write := func() {
		errs := make([]error, len(batch))
		if err := env.DB.Append(ctx, batch, errs); err != nil {
			b.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		points += int64(len(batch))
		batch = batch[:0]
	}
	g.Each(func(p loadtest.Point) {
		l, ok := labels[p.S]
		if !ok {
			tags := make([]series.Tag, len(p.S.Tags))
			for i, t := range p.S.Tags {
				tags[i] = series.Tag{Key: t.Key, Value: t.Value}
			}
			l = series.MakeLabels(p.S.Metric, tags)
			labels[p.S] = l
		}
		v := chunk.Int(p.V.Int)
		if p.V.IsFloat {
			v = chunk.Float(p.V.Float)
		}
		batch = append(batch, series.Sample{Labels: l, T: p.T, V: v})
		if len(batch) == 5000 {
			write()
		}
	})
	write()
	if err := env.DB.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	// As a server's data after a restart: in SSTables, not the memtable.
	if err := env.Pebble.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	reader := &query.StoreRollups{Store: env.Store, Layout: env.Layout, Ivs: []int64{3_600_000}, Index: env.Index}
	eng := query.NewEngine(env.DB.Head, env.Index, env.Store, env.Layout, query.Limits{})
	eng.SetRollups(reader, nil)
	end := rollBenchStart + int64(steps)*rollBenchStep.Milliseconds() - 1
	return &rollBenchEnv{env: env, eng: eng, reader: reader, start: rollBenchStart, end: end, points: points, series: len(labels)}
}

// BenchmarkRollupQuery runs the dashboard query (all 12 metrics) through
// Engine.Run from rollups and with ROLLUP_RAW, and the rollup table's scan
// alone (StoreRollups.ReadBuckets of every series, the buckets counted;
// scan/sums reads only the sums and counts, rollup.FieldsSum):
// cpu-ns/bucket is the process's CPU per 1h bucket read.
//
//	go test ./query/ -run '^$' -bench RollupQuery -benchtime 10x
func BenchmarkRollupQuery(b *testing.B) {
	env := openRollBench(b)
	ctx := context.Background()
	spec, err := downsample.ParseSpec("1h-avg")
	if err != nil {
		b.Fatal(err)
	}
	avg, err := downsample.Lookup("avg")
	if err != nil {
		b.Fatal(err)
	}
	buckets := int64(env.series) * (env.end + 1 - env.start) / 3_600_000
	for _, usage := range []query.RollupUsage{query.RollupNoFallback, query.RollupRaw} {
		b.Run("run/"+usage.String(), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := startCPU()
			for b.Loop() {
				for _, md := range loadtest.Metrics {
					req := query.Request{
						Selector:   query.Selector{Metric: md.Name, Matchers: []series.Matcher{anyValue("dc")}, Start: env.start, End: env.end},
						Aggregator: avg, Downsample: &spec, GroupBy: []string{"dc"}, Rollup: usage,
					}
					res, err := env.eng.Run(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					if len(res) == 0 || len(res[0].Points) != rollBenchDays*24 {
						b.Fatalf("%s: %d results", md.Name, len(res))
					}
				}
			}
			reportPer(b, cpu0, buckets, "bucket")
		})
	}
	for _, res := range []time.Duration{0, time.Hour} {
		b.Run("prom/max_source_resolution="+res.String(), func(b *testing.B) { benchRollupProm(b, env, res, buckets) })
	}
	for _, f := range []struct {
		name string
		f    rollup.Fields
	}{{"scan", rollup.FieldsAll}, {"scan/sums", rollup.FieldsSum}} {
		b.Run(f.name, func(b *testing.B) { benchScan(b, env, f.f, buckets) })
	}
}

// benchRollupProm runs the dashboard query's PromQL form (loadtest's
// default, avg by (dc) (avg_over_time(<metric>[1h])) at a 1h step, every
// metric) through the Prometheus engine, rewritten and with
// max_source_resolution res as the HTTP API does it (0: raw samples).
func benchRollupProm(b *testing.B, env *rollBenchEnv, res time.Duration, buckets int64) {
	pe := promql.NewEngine(promql.EngineOpts{MaxSamples: 1 << 30, Timeout: time.Hour, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(query.PromLimits{MaxSamples: 1 << 30})
	start, end := time.UnixMilli(env.start).Add(time.Hour), time.UnixMilli(env.end+1)
	ctx := context.Background()
	if res > 0 {
		ctx = query.WithMaxSourceResolution(ctx, res.Milliseconds())
	}
	b.ReportAllocs()
	cpu0 := startCPU()
	for b.Loop() {
		for _, md := range loadtest.Metrics {
			qs := fmt.Sprintf("avg by (dc) (avg_over_time(%s[1h]))", md.Name)
			if res > 0 {
				expr, err := parser.NewParser(parser.Options{}).ParseExpr(qs)
				if err != nil {
					b.Fatal(err)
				}
				qs = env.eng.RewriteForRollups(expr, res.Milliseconds(), time.Hour.Milliseconds()).String()
			}
			q, err := pe.NewRangeQuery(ctx, qy, nil, qs, start, end, time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			r := q.Exec(ctx)
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			m, err := r.Matrix()
			if err != nil || len(m) == 0 || len(m[0].Floats) < rollBenchDays*24-1 {
				b.Fatalf("%s: %d series, %v", md.Name, len(m), err)
			}
			q.Close()
		}
	}
	reportPer(b, cpu0, buckets, "bucket")
}

// benchScan reads the buckets of every series with the fields f.
func benchScan(b *testing.B, env *rollBenchEnv, f rollup.Fields, buckets int64) {
	ctx := context.Background()
	var entries []*series.Entry
	for _, md := range loadtest.Metrics {
		entries = append(entries, env.env.Index.Select(md.Name, nil, false, env.start, env.end)...)
	}
	b.ReportAllocs()
	cpu0 := startCPU()
	for b.Loop() {
		n := make([]int64, len(entries)) // calls for one series never overlap
		err := env.reader.ReadBuckets(ctx, entries, 3_600_000, env.start, env.end+1, f, func(i int, _ *rollup.Bucket) error {
			n[i]++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		var got int64
		for _, c := range n {
			got += int64(c)
		}
		if got != buckets {
			b.Fatalf("%d buckets read, want %d", got, buckets)
		}
	}
	reportPer(b, cpu0, buckets, "bucket")
}

// closeRollBench closes and removes the data set (TestMain).
func closeRollBench() {
	if rollBenchData != nil {
		rollBenchData.env.Close()
	}
	if rollBenchDir != "" {
		os.RemoveAll(rollBenchDir)
	}
}

// reportPer reports the process's CPU time per operation and per unit.
func reportPer(b *testing.B, cpu0 time.Duration, units int64, unit string) {
	ns := float64((startCPU() - cpu0).Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	b.ReportMetric(ns/float64(units), "cpu-ns/"+unit)
}
