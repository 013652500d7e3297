package query_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"hourglass/query"
	"hourglass/rowkey"
)

// BenchmarkPromBeyond runs PromQL questions beyond compare.sh's mix, of the
// shapes dashboards and alert rules ask (TSBS devops, the node-exporter
// mixin, Grafana's Node Exporter Full), over the bench data as
// BenchmarkPromWindow does, with the server's PromPushdown: range queries
// ending an hour before the last point (span and step per case), instant
// queries at that time. Each case checks only that the query succeeds and
// answers something.
func BenchmarkPromBeyond(b *testing.B) {
	env := openBench(b)
	x := `{__name__="cpu.usage"}`
	for _, c := range []struct {
		name, q    string
		span, step time.Duration // step 0: an instant query
	}{
		{"pred6h", `predict_linear(` + x + `[6h], 4*3600)`, time.Hour, time.Minute},
		{"instant-pred6h", `predict_linear(` + x + `[6h], 4*3600) < 0`, 0, 0},
		{"instant-deriv6h", `deriv(` + x + `[6h])`, 0, 0},
		{"quantile-by", `quantile by (region) (0.9, ` + x + `)`, time.Hour, time.Minute},
		{"stddev-by", `stddev by (region) (` + x + `)`, time.Hour, time.Minute},
		{"count-values", `count_values("v", round(` + x + `))`, time.Hour, time.Minute},
		{"subquery-instant", `max_over_time(rate(` + x + `[5m])[1h:1m])`, 0, 0},
		{"subquery-range", `max_over_time(rate(` + x + `[5m])[1h:1m])`, time.Hour, 5 * time.Minute},
		{"subquery-nostep", `max_over_time(rate(` + x + `[5m])[1h:])`, 0, 0},
		{"subquery-sum", `avg_over_time(sum by (region) (rate(` + x + `[5m]))[1h:1m])`, 0, 0},
		{"max1h-12h-re", `max by (host) (max_over_time({__name__="cpu.usage",host=~"h00001|h00007|h00013|h00042|h00100|h00200|h00300|h00400"}[1h]))`, 12 * time.Hour, time.Hour},
		{"avg5m-12h", `avg by (host) (avg_over_time(` + x + `[5m]))`, 12 * time.Hour, 5 * time.Minute},
		{"highcpu-12h", x + ` > 90`, 12 * time.Hour, time.Minute},
		{"binop-raw", `100 - avg by (host) (` + x + ` + ` + x + `)`, time.Hour, time.Minute},
		{"group-left", `sum by (dc) (rate(` + x + `[5m])) / on() group_left sum(rate(` + x + `[5m]))`, time.Hour, time.Minute},
		{"topk-rate", `topk(5, rate(` + x + `[5m]))`, time.Hour, time.Minute},
		{"delta", `delta(` + x + `[10m])`, time.Hour, time.Minute},
		{"resets", `sum by (region) (resets(` + x + `[1h]))`, 6 * time.Hour, 5 * time.Minute},
	} {
		b.Run(c.name, func(b *testing.B) { benchBeyond(b, env, c.q, c.span, c.step) })
	}
}

func benchBeyond(b *testing.B, env *benchEnv, q string, span, step time.Duration) {
	ctx := context.Background()
	noStep := func(int64) int64 { return time.Minute.Milliseconds() }
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		NoStepSubqueryIntervalFn: noStep})
	qy := env.eng.Queryable(query.PromLimits{})
	end := env.end
	start := end - span.Milliseconds()
	b.ReportAllocs()
	defer reportCPU(b, startCPU(), benchSeries*int(max(span.Milliseconds(), rowkey.HourMs)/benchStepMs+1))
	for b.Loop() {
		qr := benchQuery(b, ctx, eng, qy, q, start, end, step)
		// The server's: a subquery without a step steps by 1 m.
		res := qr.Exec(query.PromPushdown(query.PromNoStepSubqueryInterval(ctx, noStep), qr.Statement()))
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		qr.Close()
	}
}
