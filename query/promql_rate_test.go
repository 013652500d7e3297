package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestPromRateManySeries: rate, increase and delta over enough series that
// Select computes them on several goroutines (eachSeries: one per 64
// series), half in the store and half in the head, counters with resets
// and a name that draws the engine's non-counter info, answer the same,
// bit for bit and with the same annotations, as the engine over the raw
// samples; and Select did compute them (the call was rewritten).
func TestPromRateManySeries(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 3)
	const nSeries, nPoints = 150, 240 // 40 minutes at 10 s
	t0 := env.last - 2*rowkey.HourMs
	for _, name := range []string{"c_total", "c"} {
		var samples []series.Sample
		for i := range nSeries {
			l := series.MakeLabels(name, []series.Tag{{Key: "host", Value: fmt.Sprintf("h%03d", i)}, {Key: "dc", Value: fmt.Sprintf("d%d", i%3)}})
			v := 0.0
			for p := range nPoints {
				v += float64((i*7+p*13)%50) / 4
				if (p+i)%97 == 0 {
					v = float64(p % 5) // a reset
				}
				samples = append(samples, series.Sample{Labels: l, T: t0 + int64(p)*10_000 + int64(i), V: chunk.Float(v)})
			}
		}
		errs := make([]error, len(samples))
		if err := env.head.Append(ctx, samples, errs); err != nil {
			t.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if name == "c_total" {
			// The first metric to the store, the second stays in the head.
			if err := env.head.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	start, end := time.UnixMilli(t0+3*60_000), time.UnixMilli(t0+int64(nPoints)*10_000+60_000)
	for _, expr := range []string{
		"sum by (dc) (rate(c_total[5m]))", "rate(c[2m])", "increase(c_total[90s] offset 1m)",
		"delta(c[5m])", "rate({__name__=~\"c_total|nope\"}[1m])",
	} {
		for _, step := range []time.Duration{time.Minute, 10 * time.Second, 7 * time.Minute} {
			mk := func() (promql.Query, error) { return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step) }
			want := runQuery(t, mk, func(promql.Query) context.Context { return ctx })
			var pushed promql.Query
			got := runQuery(t, mk, func(q promql.Query) context.Context {
				pushed = q
				return PromPushdown(ctx, q.Statement())
			})
			if got != want {
				t.Fatalf("%s step %s:\ncomputed %s\nengine   %s", expr, step, got, want)
			}
			if !strings.Contains(want, "{") {
				t.Fatalf("%s step %s: an empty answer", expr, step)
			}
			if !strings.Contains(pushed.Statement().String(), "max_over_time") {
				t.Fatalf("%s step %s: not computed by Select (%s)", expr, step, pushed.Statement())
			}
		}
	}
}
