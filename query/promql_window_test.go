package query

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/kahansum"
	"slices"

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
			tags := []series.Tag{{Key: "host", Value: fmt.Sprintf("h%03d", i)}, {Key: "dc", Value: fmt.Sprintf("d%d", i%3)}}
			if name == "c" { // the two names' series differ without them
				tags = append(tags, series.Tag{Key: "k", Value: "c"})
			}
			l := series.MakeLabels(name, tags)
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
	// What the call is rewritten to: its selector where the engine
	// evaluates one as any expression and the series share their name;
	// max_over_time(x[step]) where not.
	for expr, rewritten := range map[string]string{
		"sum by (dc) (rate(c_total[5m]))":          "sum by (dc) (c_total)",
		"rate(c[2m])":                              "c",
		"increase(c_total[90s] offset 1m)":         "c_total offset 1m",
		"delta(c[5m]) > 0":                         "c > 0",
		"rate({__name__=~\"c_total|nope\"}[1m])":   "{__name__=~\"c_total|nope\"}",
		"rate({__name__=~\"c_total|c\"}[1m])":      "max_over_time({__name__=~\"c_total|c\"}[",
		"timestamp(rate(c[2m]))":                   "timestamp(max_over_time(c[",
		"absent(rate(c_total{host=\"nope\"}[5m]))": "absent(max_over_time(c_total{host=\"nope\"}[",
		"-irate(c[2m]) + on (host) rate(c[3m])":    "-c + on (host) c",
	} {
		for _, step := range []time.Duration{time.Minute, 10 * time.Second, 7 * time.Minute} {
			mk := func() (promql.Query, error) { return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step) }
			got, want, before, after := runPushed(t, ctx, mk)
			if got != want {
				t.Fatalf("%s step %s:\ncomputed %s\nengine   %s", expr, step, got, want)
			}
			if !strings.Contains(want, "{") {
				t.Fatalf("%s step %s: an empty answer", expr, step)
			}
			if after == before || !strings.HasPrefix(after, rewritten) {
				t.Fatalf("%s step %s: not computed by Select as %s... (%s)", expr, step, rewritten, after)
			}
		}
	}
}

// TestPromWindowFuncsComputed: every function Select computes besides the
// rates, over counters with resets in the store and gauges in the head,
// answers as the engine does, bit for bit, and was computed (its call
// rewritten) when the steps overlap, and in an instant query but for the
// five functions folded.
func TestPromWindowFuncsComputed(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 4)
	addStale(t, env)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	start, end := time.UnixMilli(env.last-3*rowkey.HourMs), time.UnixMilli(env.last-rowkey.HourMs/2)
	r := rand.New(rand.NewPCG(4, 4))
	for name := range windowFuncs {
		for _, step := range []time.Duration{time.Minute, 10 * time.Second, 7 * time.Minute, 0} {
			for _, c := range []struct {
				sel string
				rng time.Duration
			}{{"m[5m]", 5 * time.Minute}, {"m[10m] offset 3m", 10 * time.Minute}, {"m{host=~\"h0.|stale|huge\"}[90s]", 90 * time.Second}} {
				sel := c.sel
				expr := windowExpr(r, name, sel)
				mk := func() (promql.Query, error) {
					if step == 0 { // an instant query
						return eng.NewInstantQuery(ctx, qy, nil, expr, end)
					}
					return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step)
				}
				got, want, before, after := runPushed(t, ctx, mk)
				if got != want {
					t.Fatalf("%s step %s:\n%s", expr, step, firstDiff(got, want))
				}
				if !strings.Contains(want, "{") {
					t.Fatalf("%s step %s: an empty answer", expr, step)
				}
				_, folds := foldFuncs[name]
				if rewritten := after != before; rewritten == (folds && (step == 0 || step >= c.rng)) {
					t.Fatalf("%s step %s: rewritten %v (%s)", expr, step, rewritten, after)
				}
			}
		}
	}
}

// FuzzPromWindowMatchesEngine: a series made of the input (values with
// NaN, ±Inf, staleness markers, huge values, drops; gaps and repeated
// timestamps), half in the store and half in the head, and a range
// function over it at some range, offset and step (or in an instant
// query): Select's answer
// (PromPushdown) is the engine's, bit for bit.
func FuzzPromWindowMatchesEngine(f *testing.F) {
	f.Add([]byte("\x05\x10\x20\x31\x42\x53\x64\x75\x86\x97\xa8\xb9\xca\xdb"), uint8(0), uint16(300), uint16(60), int16(0))
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"), uint8(3), uint16(45), uint16(10), int16(-30))
	f.Add([]byte("\xff\x00\xff\x00\x7f\x80\x7f\x80\x30\x30\x30\x30"), uint8(9), uint16(600), uint16(7), int16(120))
	f.Add([]byte("\x11\x27\x21\x37\x31\x47\x41\x57\x00\x67\x51\x06"), uint8(7), uint16(120), uint16(5), int16(0))
	f.Add([]byte("\x13\x23\x33\x43\x53\x63\x73\x83\x93\xa3\xb3\xc3\xd3\xe3\xf3"), uint8(12), uint16(90), uint16(30), int16(5))
	names := make([]string, 0, len(windowFuncs))
	for name := range windowFuncs {
		names = append(names, name)
	}
	slices.Sort(names)
	f.Fuzz(func(t *testing.T, data []byte, fn uint8, rngS, stepS uint16, offS int16) {
		if len(data) < 2 || len(data) > 600 || rngS == 0 || stepS == 0 {
			return
		}
		ctx := context.Background()
		env := openEquiv(t, 0)
		l := series.MakeLabels("fz", []series.Tag{{Key: "host", Value: "f"}})
		t0 := env.last - rowkey.HourMs
		tt, v := t0, 0.0
		var samples []series.Sample
		for i := 0; i+1 < len(data); i += 2 {
			a, b := data[i], data[i+1]
			tt += int64(a>>4) * 4_000 // 0: the same timestamp again
			switch b & 15 {
			case 0:
				v = math.NaN()
			case 1:
				v = math.Inf(1)
			case 2:
				v = math.Inf(-1)
			case 3:
				v = math.Float64frombits(value.StaleNaN)
			case 4:
				v = 1.7e308
			case 5:
				v = -1.7e308
			case 6:
				v = float64(a & 15) // a drop: a counter reset
			default:
				if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e300 {
					v = 0
				}
				v += float64(b>>4) / 4
			}
			samples = append(samples, series.Sample{Labels: l, T: tt, V: chunk.Float(v)})
		}
		appendHalfFlushed(t, ctx, env.head, samples)
		name := names[int(fn)%len(names)]
		sel := fmt.Sprintf("fz[%ds]", rngS%3600+1)
		if offS != 0 {
			sel += fmt.Sprintf(" offset %ds", offS%600)
		}
		expr := windowExpr(rand.New(rand.NewPCG(uint64(fn), 1)), name, sel)
		step := time.Duration(stepS%900+1) * time.Second
		start, end := time.UnixMilli(t0-10*60_000), time.UnixMilli(tt+10*60_000)
		eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, EnableNegativeOffset: true})
		qy := env.eng.Queryable(PromLimits{})
		mk := func() (promql.Query, error) {
			if stepS%5 == 0 { // an instant query, at the last point plus the step
				return eng.NewInstantQuery(ctx, qy, nil, expr, time.UnixMilli(tt).Add(step))
			}
			return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step)
		}
		want := runQuery(t, mk, func(promql.Query) context.Context { return ctx })
		got := runQuery(t, mk, func(q promql.Query) context.Context { return PromPushdown(ctx, q.Statement()) })
		if got != want {
			t.Fatalf("%s step %s:\n%s", expr, step, firstDiff(got, want))
		}
	})
}

// TestPromQuantileOverTimeLeft: quantile_over_time with φ outside [0, 1]
// (the engine's warning), or not a number literal, is left to the engine
// as written, with its answer.
func TestPromQuantileOverTimeLeft(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 4)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	start, end := time.UnixMilli(env.last-3*rowkey.HourMs), time.UnixMilli(env.last-rowkey.HourMs/2)
	for _, expr := range []string{"quantile_over_time(1.5, m[5m])", "quantile_over_time(-0.1, m[5m])",
		"quantile_over_time(NaN, m[5m])", "quantile_over_time(scalar(m{host=\"h00\"}), m[5m])"} {
		mk := func() (promql.Query, error) { return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, time.Minute) }
		got, want, before, after := runPushed(t, ctx, mk)
		if got != want {
			t.Fatalf("%s:\n%s", expr, firstDiff(got, want))
		}
		if after != before {
			t.Fatalf("%s: rewritten to %s", expr, after)
		}
	}
}

// TestPromQuantileOverTimeSliding: quantile_over_time over windows that
// slide by a sample or several (the sorted window kept as it slides), over
// values with many repeats, negatives, infinities, and now and then a zero
// or a NaN that enters the window and leaves it (sorted as the engine
// sorts while it is in), in the store and in the head: the engine's
// answer, bit for bit.
func TestPromQuantileOverTimeSliding(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 5)
	const nSeries, nPoints = 12, 400
	t0 := env.last - 2*rowkey.HourMs
	var samples []series.Sample
	for i := range nSeries {
		l := series.MakeLabels("q", []series.Tag{{Key: "host", Value: fmt.Sprintf("h%02d", i)}})
		for p := range nPoints {
			v := float64((i*31+p*17)%(7+i)) - 3 // repeats, negatives, zeros
			if v == 0 && i%3 != 0 {
				v = 0.5 // no zeros in most series: the sliding path throughout
			}
			switch {
			case i%4 == 1 && p%97 == 50:
				v = math.NaN()
			case i%4 == 2 && p%61 == 7:
				v = math.Inf(1 - 2*(p%2))
			case i == 11 && p%89 == 3:
				v = math.Copysign(0, -1)
			}
			samples = append(samples, series.Sample{Labels: l, T: t0 + int64(p)*10_000 + int64(i%3)*1000, V: chunk.Float(v)})
		}
	}
	appendHalfFlushed(t, ctx, env.head, samples)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	start, end := time.UnixMilli(t0-60_000), time.UnixMilli(t0+nPoints*10_000+60_000)
	for _, expr := range []string{"quantile_over_time(0.9, q[5m])", "quantile_over_time(0, q[30m])",
		"quantile_over_time(0.5, q[1m])", "quantile_over_time(1, q[10m])", "quantile_over_time(0.33, q[20s])"} {
		for _, step := range []time.Duration{10 * time.Second, time.Minute, 130 * time.Second, 7 * time.Minute} {
			mk := func() (promql.Query, error) { return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step) }
			got, want, before, after := runPushed(t, ctx, mk)
			if got != want {
				t.Fatalf("%s step %s:\n%s", expr, step, firstDiff(got, want))
			}
			if after == before {
				t.Fatalf("%s step %s: not computed", expr, step)
			}
		}
	}
}

// appendHalfFlushed appends the first half of samples to head and flushes
// it to the store, then appends the rest, which stays in the head.
func appendHalfFlushed(t *testing.T, ctx context.Context, head interface {
	Append(context.Context, []series.Sample, []error) error
	Flush(context.Context) error
}, samples []series.Sample) {
	t.Helper()
	half := len(samples) / 2
	if err := head.Append(ctx, samples[:half], make([]error, half)); err != nil {
		t.Fatal(err)
	}
	if err := head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := head.Append(ctx, samples[half:], make([]error, len(samples)-half)); err != nil {
		t.Fatal(err)
	}
}

// TestPromWindowConstantArgs: predict_linear's duration and
// quantile_over_time's φ written as arithmetic over number literals (the
// node-exporter mixin's predict_linear(x[6h], 4*60*60)), which the engine
// wraps as step-invariant, are computed by Select as a literal is, with the
// engine's answer; φ outside [0, 1] after the arithmetic is left to it.
func TestPromWindowConstantArgs(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 4)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	start, end := time.UnixMilli(env.last-3*rowkey.HourMs), time.UnixMilli(env.last-rowkey.HourMs/2)
	for expr, computed := range map[string]bool{
		"predict_linear(m[10m], 4*60*60) < 1e9":           true,
		"predict_linear(m[30m], -(3600 / 7))":             true,
		"predict_linear(m[30m], 2^10 % 1000 + 1)":         true,
		"quantile_over_time(1/3, m[5m])":                  true,
		"quantile_over_time(1 atan2 2, m[5m])":            true,
		"quantile_over_time(scalar(vector(0.25)), m[5m])": false, // not arithmetic over literals
		"quantile_over_time(3/2, m[5m])":                  false,
		"quantile_over_time(-(0.5), m[5m])":               false,
	} {
		for _, step := range []time.Duration{time.Minute, 0} {
			mk := func() (promql.Query, error) {
				if step == 0 {
					return eng.NewInstantQuery(ctx, qy, nil, expr, end)
				}
				return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step)
			}
			got, want, before, after := runPushed(t, ctx, mk)
			if got != want {
				t.Fatalf("%s step %s:\n%s", expr, step, firstDiff(got, want))
			}
			if !strings.Contains(want, "{") {
				t.Fatalf("%s step %s: an empty answer", expr, step)
			}
			if rewritten := after != before; rewritten != computed {
				t.Fatalf("%s step %s: rewritten %v (%s)", expr, step, rewritten, after)
			}
		}
	}
}

// engineLinearRegression is the engine's linearRegression over floats
// (promql/functions.go), with util/kahansum's Inc.
func engineLinearRegression(ts []int64, fs []float64, interceptTime int64) (slope, intercept float64) {
	var n, sumX, cX, sumY, cY, sumXY, cXY, sumX2, cX2 float64
	initY := fs[0]
	constY := true
	for i, f := range fs {
		if constY && i > 0 && f != initY {
			constY = false
		}
		n += 1.0
		x := float64(ts[i]-interceptTime) / 1e3
		sumX, cX = kahansum.Inc(x, sumX, cX)
		sumY, cY = kahansum.Inc(f, sumY, cY)
		sumXY, cXY = kahansum.Inc(x*f, sumXY, cXY)
		sumX2, cX2 = kahansum.Inc(x*x, sumX2, cX2)
	}
	if constY {
		if math.IsInf(initY, 0) {
			return math.NaN(), math.NaN()
		}
		return 0, initY
	}
	sumX += cX
	sumY += cY
	sumXY += cXY
	sumX2 += cX2
	covXY := sumXY - sumX*sumY/n
	varX := sumX2 - sumX*sumX/n
	slope = covXY / varX
	intercept = sumY/n - slope*sumX/n
	return slope, intercept
}

// TestLinearRegressionWholeSeconds: linearRegression, whose sums of x and
// x² are integer sums when every x is a whole number of seconds
// (wholeSecondSums), gives the engine's bits over windows of whole and
// fractional seconds, x of both signs, x and Σx² near the bounds where the
// integer sums stop (2^26, 2^53), constant and non-finite values; and the
// integer sums are taken for whole seconds within the bounds.
func TestLinearRegressionWholeSeconds(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	whole := 0
	for c := range 4000 {
		n := 2 + r.IntN(300)
		step := int64(1000 * (1 + r.IntN(30)))
		var t0 int64
		switch c % 5 {
		case 0: // far from the intercept: x near 2^26 s
			t0 = int64(1<<26-r.IntN(3*int(step/1000)*n)) * 1000
		case 1:
			step += int64(r.IntN(3)) // fractional seconds now and then
		case 2: // Σx² near 2^53: n x² of about 2^53/n
			t0 = int64(math.Sqrt(float64(1<<53)/float64(n))) * 1000 * int64(1-2*r.IntN(2))
		}
		ts := make([]int64, n)
		fs := make([]float64, n)
		v := r.Float64() * 100
		for i := range n {
			ts[i] = t0 + int64(i)*step + int64(r.IntN(2))*1000
			if i > 0 && ts[i] <= ts[i-1] {
				ts[i] = ts[i-1] + 1000
			}
			switch r.IntN(40) {
			case 0:
				v = math.NaN()
			case 1:
				v = math.Inf(1 - 2*r.IntN(2))
			case 2, 3, 4, 5, 6, 7, 8, 9: // unchanged: constant windows now and then
			default:
				if math.IsNaN(v) || math.IsInf(v, 0) {
					v = 0
				}
				v += float64(r.IntN(2001)-1000) / 100
			}
			if c%7 == 0 {
				v = 42.5 // constant
			}
			fs[i] = v
		}
		ic := ts[r.IntN(n)] + int64(r.IntN(3))*1000*int64(1-2*r.IntN(2))
		switch {
		case c%3 == 0:
			ic = ts[0]
		case c%11 == 1: // an offset of years: x of up to 2^32 s
			ic = ts[0] + int64(1-2*r.IntN(2))*r.Int64N(1<<32)*1000
		}
		if _, _, ok := wholeSecondSums(ts, ic); ok {
			whole++
		}
		gs, gi := linearRegression(ts, fs, ic)
		ws, wi := engineLinearRegression(ts, fs, ic)
		// Any NaN as one: which NaN an operation returns depends on the
		// order the compiler gives its operands (sameBitsOrNaN).
		if !sameBitsOrNaN(gs, ws) || !sameBitsOrNaN(gi, wi) {
			t.Fatalf("case %d (n %d, t0 %d, step %d, ic %d): %x %x, engine %x %x", c, n, t0, step, ic,
				math.Float64bits(gs), math.Float64bits(gi), math.Float64bits(ws), math.Float64bits(wi))
		}
	}
	if whole < 1000 || whole > 3800 {
		t.Fatalf("the integer sums were taken in %d cases of 4000", whole)
	}
}

// TestPromWindowInSubquery: the range functions Select computes inside a
// subquery, at the subquery's own steps (aligned to its step, as the
// engine's subqueryTimeRange aligns them), nested in another or beside a
// call outside any, in range and instant queries, with offsets on the
// subquery and the selector, answer as the engine does, bit for bit, and
// were computed; a subquery without a step or with @ is left to the
// engine.
func TestPromWindowInSubquery(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 4)
	addStale(t, env)
	// The engine's step for a subquery without one: 1 m, or 45 s over
	// ranges under an hour (any function of the range will do).
	noStep := func(rng int64) int64 {
		if rng < 3_600_000 {
			return 45_000
		}
		return 60_000
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, NoStepSubqueryIntervalFn: noStep})
	qy := env.eng.Queryable(PromLimits{})
	// Times off the subqueries' step grids, so that alignment matters.
	start, end := time.UnixMilli(env.last-3*rowkey.HourMs+7_000), time.UnixMilli(env.last-rowkey.HourMs/2+13_000)
	for expr, computed := range map[string]bool{
		"max_over_time(rate(m[5m])[1h:1m])":                                          true,
		"avg_over_time(sum by (host) (irate(m[2m]))[30m:45s] offset 7m)":             true,
		"max_over_time(deriv(rate(m[5m])[20m:1m])[1h:5m])":                           true,
		"min_over_time(avg_over_time(m[10m] offset 90s)[25m:2m])":                    true,
		"quantile_over_time(0.9, stddev_over_time(m[3m])[40m:30s])":                  true,
		"rate(m[5m]) - on (host) avg_over_time(rate(m[5m])[1h:1m])":                  true,
		"sum_over_time(max_over_time(m[1m])[10m:1m])":                                true,
		"predict_linear(avg_over_time(m[5m])[30m:1m], 600)":                          true,
		"max_over_time(timestamp(last_over_time(m[5m]))[10m:1m])":                    true,
		"max_over_time(rate(m[5m])[1h:])":                                            true, // the engine's default step (PromNoStepSubqueryInterval)
		"max_over_time(rate(m[5m])[50m:] offset 2m)":                                 true,
		"max_over_time(rate(m[5m])[1h:1m] @ " + fmt.Sprint(env.last/1000-3600) + ")": false,
	} {
		for _, step := range []time.Duration{time.Minute, 7 * time.Minute, 0} {
			mk := func() (promql.Query, error) {
				if step == 0 {
					return eng.NewInstantQuery(ctx, qy, nil, expr, end)
				}
				return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, step)
			}
			// Whether Select computed a call: the engine itself leaves a
			// subquery's expression changed after it runs, so the
			// statement's text does not tell.
			want := runQuery(t, mk, func(promql.Query) context.Context { return ctx })
			var pd *pushdown
			got := runQuery(t, mk, func(q promql.Query) context.Context {
				c := PromPushdown(PromNoStepSubqueryInterval(ctx, noStep), q.Statement())
				pd, _ = c.Value(pushdownKey{}).(*pushdown)
				return c
			})
			rewritten := false
			for _, rc := range pd.rates {
				rewritten = rewritten || rc.done
			}
			if step == 0 {
				// An instant vector from a subquery's matrix comes in the
				// engine's map order.
				got, want = sortedLines(got), sortedLines(want)
			}
			if got != want {
				t.Fatalf("%s step %s:\n%s", expr, step, firstDiff(got, want))
			}
			if !strings.Contains(want, "{") {
				t.Fatalf("%s step %s: an empty answer", expr, step)
			}
			if rewritten != computed {
				t.Fatalf("%s step %s: computed %v", expr, step, rewritten)
			}
		}
	}
	// Without the engine's default step, a subquery without one is left
	// to the engine.
	expr := "max_over_time(rate(m[5m])[1h:])"
	mk := func() (promql.Query, error) { return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, time.Minute) }
	var pd *pushdown
	runQuery(t, mk, func(q promql.Query) context.Context {
		c := PromPushdown(ctx, q.Statement())
		pd, _ = c.Value(pushdownKey{}).(*pushdown)
		return c
	})
	for _, rc := range pd.rates {
		if rc.done {
			t.Fatalf("%s: computed without the engine's default step", expr)
		}
	}
}

// sortedLines returns s's lines sorted.
func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// TestPromPredictFarIntercept: predict_linear with an offset of years has
// its x (seconds from the evaluation time) in the hundreds of millions,
// where the sums of x and x² are no longer exact integers in a float64:
// Select sums them as the engine does then, with its answer, bit for bit.
func TestPromPredictFarIntercept(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 4)
	// Whole seconds apart (the integer sums' case), beside m's others.
	var samples []series.Sample
	for i := range 3 {
		l := series.MakeLabels("w", []series.Tag{{Key: "host", Value: fmt.Sprintf("h%d", i)}})
		for p := range 1500 {
			samples = append(samples, series.Sample{Labels: l, T: env.last - 4*rowkey.HourMs + int64(p)*10_000 + int64(i)*1000,
				V: chunk.Float(float64((p*37+i*11)%1000) / 100)})
		}
	}
	appendHalfFlushed(t, ctx, env.head, samples)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(PromLimits{})
	for _, off := range []string{"1d", "400d", "3y", "10y"} {
		d, err := model.ParseDuration(off)
		if err != nil {
			t.Fatal(err)
		}
		shift := time.Duration(d).Milliseconds()
		start, end := time.UnixMilli(env.last-3*rowkey.HourMs+shift), time.UnixMilli(env.last-rowkey.HourMs/2+shift)
		for _, expr := range []string{"predict_linear(m[10m] offset " + off + ", 600)", "predict_linear(m[1h] offset " + off + ", -60)",
			"predict_linear(w[10m] offset " + off + ", 600)", "predict_linear(w[1h] offset " + off + ", -60)"} {
			mk := func() (promql.Query, error) { return eng.NewRangeQuery(ctx, qy, nil, expr, start, end, time.Minute) }
			got, want, before, after := runPushed(t, ctx, mk)
			if got != want {
				t.Fatalf("%s:\n%s", expr, firstDiff(got, want))
			}
			if !strings.Contains(want, "{") || after == before {
				t.Fatalf("%s: an empty answer, or not computed (%s)", expr, after)
			}
		}
	}
}
