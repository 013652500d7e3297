package query_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"hourglass/query"
	"hourglass/rowkey"
)

// BenchmarkPromWindow runs range functions other than rate, of the kinds
// dashboards and alert rules use, over the bench data as BenchmarkPromMix
// does: an hour at 1 m steps ending an hour before the last point (in the
// store), every series, with the server's PromPushdown, summed by region;
// and instant queries over that hour's end. cpu-ns/point is per point in
// the hour read.
func BenchmarkPromWindow(b *testing.B) {
	env := openBench(b)
	for _, c := range []struct{ name, q string }{
		{"avg", `sum by (region) (avg_over_time({__name__="cpu.usage"}[5m]))`},
		{"max", `sum by (region) (max_over_time({__name__="cpu.usage"}[5m]))`},
		{"stddev", `sum by (region) (stddev_over_time({__name__="cpu.usage"}[5m]))`},
		{"deriv", `sum by (region) (deriv({__name__="cpu.usage"}[10m]))`},
		{"predict", `sum by (region) (predict_linear({__name__="cpu.usage"}[30m], 3600))`},
		{"irate", `sum by (region) (irate({__name__="cpu.usage"}[5m]))`},
		{"changes", `sum by (region) (changes({__name__="cpu.usage"}[10m]))`},
		{"quantile", `sum by (region) (quantile_over_time(0.9, {__name__="cpu.usage"}[5m]))`},
	} {
		b.Run(c.name, func(b *testing.B) { benchWindow(b, env, c.q, time.Minute) })
	}
	// Instant queries over the hour: one window per series.
	for _, c := range []struct{ name, q string }{
		{"instant-predict", `predict_linear({__name__="cpu.usage"}[1h], 3600)`},
		{"instant-deriv", `deriv({__name__="cpu.usage"}[1h])`},
		{"instant-rate", `rate({__name__="cpu.usage"}[1h])`},
		{"instant-quantile", `quantile_over_time(0.9, {__name__="cpu.usage"}[1h])`},
	} {
		b.Run(c.name, func(b *testing.B) { benchWindow(b, env, c.q, 0) })
	}
}

// benchWindow runs q over the hour ending at env.end at steps of step, or
// as an instant query at env.end when step is 0.
func benchWindow(b *testing.B, env *benchEnv, q string, step time.Duration) {
	ctx := context.Background()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(query.PromLimits{})
	end := env.end
	start := end - rowkey.HourMs
	b.ReportAllocs()
	defer reportCPU(b, startCPU(), benchSeries*int(rowkey.HourMs/benchStepMs+1))
	for b.Loop() {
		qr := benchQuery(b, ctx, eng, qy, q, start, end, step)
		res := qr.Exec(query.PromPushdown(ctx, qr.Statement()))
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		if step == 0 {
			if v, err := res.Vector(); err != nil || len(v) != benchSeries {
				b.Fatalf("%d series, %v", len(v), err)
			}
		} else {
			m, err := res.Matrix()
			if err != nil {
				b.Fatal(err)
			}
			if len(m) != 4 || len(m[0].Floats) != 61 {
				b.Fatalf("%d series, %d points in the first", len(m), len(m[0].Floats))
			}
		}
		qr.Close()
	}
}

// benchQuery is the engine's query of q: instant at end when step is 0,
// else over start..end (Unix ms) by step.
func benchQuery(b *testing.B, ctx context.Context, eng *promql.Engine, qy storage.Queryable, q string, start, end int64, step time.Duration) promql.Query {
	var qr promql.Query
	var err error
	if step == 0 {
		qr, err = eng.NewInstantQuery(ctx, qy, nil, q, time.UnixMilli(end))
	} else {
		qr, err = eng.NewRangeQuery(ctx, qy, nil, q, time.UnixMilli(start), time.UnixMilli(end), step)
	}
	if err != nil {
		b.Fatal(err)
	}
	return qr
}
