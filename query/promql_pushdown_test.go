package query

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/kahansum"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestPromPushdownMatchesEngine runs random range and instant queries with
// range functions over the equivalence data (cells that overlap, head
// points over store points, NaN, integers) and a series with staleness
// markers, with and without PromPushdown, and requires the same answer bit
// for bit: folded (a step at least the range, or an instant query) and
// not (overlapping steps, subqueries, functions not folded).
func TestPromPushdownMatchesEngine(t *testing.T) {
	ctx := context.Background()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true})
	funcs := []string{"avg_over_time", "sum_over_time", "min_over_time", "max_over_time", "last_over_time", "count_over_time",
		"rate", "increase", "delta", "present_over_time", "stddev_over_time", "stdvar_over_time", "deriv",
		"predict_linear", "irate", "idelta", "changes", "resets", "quantile_over_time"}
	ranges := []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, time.Hour, 90 * time.Minute}
	folded, rated := 0, 0
	for seed := range uint64(2) {
		env := openEquiv(t, seed)
		addStale(t, env)
		qy := env.eng.Queryable(PromLimits{})
		r := rand.New(rand.NewPCG(seed, 9))
		for n := range 300 {
			fn := funcs[r.IntN(len(funcs))]
			rng := ranges[r.IntN(len(ranges))]
			step := []time.Duration{rng, 2 * rng, rng + 7*time.Second, time.Hour, rng / 2, 0}[r.IntN(6)]
			sel := fmt.Sprintf("m[%s]", promDur(rng))
			switch r.IntN(6) {
			case 0:
				sel += " offset 17m"
			case 1:
				sel += " offset -3m"
			case 2:
				sel = fmt.Sprintf("m[%s:1m]", promDur(rng)) // a subquery: never folded
			}
			expr := windowExpr(r, fn, sel)
			// Not summed: the order a binary operation's samples are summed
			// in varies, and with it which NaN's bits a sum keeps.
			switch r.IntN(8) {
			case 0: // the same selector twice
				expr = fmt.Sprintf("%s - %s", expr, windowExpr(r, funcs[r.IntN(len(funcs))], sel))
			case 1:
				expr = fmt.Sprintf("%s / on (host, dc) m", expr)
			default:
				if r.IntN(3) == 0 {
					expr = fmt.Sprintf("sum by (dc) (%s)", expr)
				}
			}
			start, end := env.randomRange(r)
			start, end = start/1000*1000, end/1000*1000
			if r.IntN(8) == 0 {
				expr = windowExpr(r, fn, fmt.Sprintf("m[%s] @ %d", promDur(rng), end/1000))
			}
			if r.IntN(2) == 0 {
				// Instant vector selectors, thinned to the last sample per
				// step (never with an @ anywhere, or a subquery).
				expr = []string{"m", "sum by (dc) (m)", "topk(3, m)", "m offset 17m", "timestamp(m)",
					"m - m offset 1m", "count(m)", "max(m @ " + fmt.Sprint(end/1000) + ")", "m + max_over_time(m[1m:20s])",
					"rate(m[5m]) * m", "absent(m{host=\"nope\"})"}[r.IntN(11)]
				if step == 0 && r.IntN(2) == 0 {
					step = []time.Duration{10 * time.Second, time.Minute, 7 * time.Minute}[r.IntN(3)]
				}
			}
			var opts promql.QueryOpts
			if r.IntN(3) == 0 {
				opts = promql.NewPrometheusQueryOpts(false, []time.Duration{30 * time.Second, 90 * time.Second, 20 * time.Minute}[r.IntN(3)])
			}
			mk := func() (promql.Query, error) {
				if step == 0 {
					return eng.NewInstantQuery(ctx, qy, opts, expr, time.UnixMilli(end))
				}
				return eng.NewRangeQuery(ctx, qy, opts, expr, time.UnixMilli(start), time.UnixMilli(end), step)
			}
			want := runQuery(t, mk, func(promql.Query) context.Context { return ctx })
			var stmt parser.Statement
			var before string
			got := runQuery(t, mk, func(q promql.Query) context.Context {
				stmt = q.Statement()
				before = stmt.String()
				pc := PromPushdown(ctx, stmt)
				if pc.Value(pushdownKey{}) != nil && step < rng && step != 0 {
					return pc // overlapping: Select must not fold
				}
				if _, ok := foldFuncs[fn]; ok && pc.Value(pushdownKey{}) != nil {
					folded++
				}
				return pc
			})
			if stmt.String() != before {
				rated++ // computed by Select (promql_window.go), the call rewritten
			}
			if got != want {
				t.Fatalf("seed %d case %d: %s, [%d, %d] step %s:\n%s", seed, n, expr, start, end, step, firstDiff(got, want))
			}
		}
	}
	if folded < 50 {
		t.Fatalf("only %d of the queries could fold", folded)
	}
	t.Logf("%d folded, %d rated", folded, rated)
	if rated < 20 {
		t.Fatalf("only %d of the queries had their rates computed by Select", rated)
	}
}

// windowExpr is fn over the range selector sel, with predict_linear's
// duration.
func windowExpr(r *rand.Rand, fn, sel string) string {
	if fn == "predict_linear" {
		return fmt.Sprintf("predict_linear(%s, %s)", sel, []string{"600", "-90.5", "(3600)", "0"}[r.IntN(4)])
	}
	if fn == "quantile_over_time" {
		return fmt.Sprintf("quantile_over_time(%s, %s)", []string{"0.9", "0", "1", "(0.5)", "0.37"}[r.IntN(5)], sel)
	}
	return fmt.Sprintf("%s(%s)", fn, sel)
}

// runPushed runs the query mk makes twice, by the engine alone (want) and
// with PromPushdown (got), and returns both answers and the statement's
// expression before and after PromPushdown rewrote it.
func runPushed(t *testing.T, ctx context.Context, mk func() (promql.Query, error)) (got, want, before, after string) {
	t.Helper()
	want = runQuery(t, mk, func(promql.Query) context.Context { return ctx })
	var pushed promql.Query
	got = runQuery(t, mk, func(q promql.Query) context.Context {
		pushed, before = q, q.Statement().(*parser.EvalStmt).Expr.String()
		return PromPushdown(ctx, q.Statement())
	})
	return got, want, before, pushed.Statement().(*parser.EvalStmt).Expr.String()
}

// runQuery runs the query mk makes with the context ctxFor gives and
// returns its answer with every float's bits.
func runQuery(t *testing.T, mk func() (promql.Query, error), ctxFor func(promql.Query) context.Context) string {
	t.Helper()
	q, err := mk()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	res := q.Exec(ctxFor(q))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var out strings.Builder
	switch v := res.Value.(type) {
	case promql.Matrix:
		for _, s := range v {
			out.WriteString(s.Metric.String())
			for _, p := range s.Floats {
				fmt.Fprintf(&out, " %d:%x", p.T, math.Float64bits(p.F))
			}
			out.WriteString("\n")
		}
	case promql.Vector:
		for _, s := range v {
			fmt.Fprintf(&out, "%s %d:%x\n", s.Metric, s.T, math.Float64bits(s.F))
		}
	default:
		t.Fatalf("answer of type %T", res.Value)
	}
	var ws []string
	for _, w := range res.Warnings {
		ws = append(ws, w.Error())
	}
	slices.Sort(ws)
	return out.String() + strings.Join(ws, "\n")
}

// promDur writes d as PromQL does.
func promDur(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// addStale writes a series of m to the head whose samples are now and then
// Prometheus' staleness marker, and one of huge values and infinities.
func addStale(t *testing.T, env *equivEnv) {
	t.Helper()
	l := series.MakeLabels("m", []series.Tag{{Key: "host", Value: "stale"}, {Key: "dc", Value: "d0"}})
	var samples []series.Sample
	for i, tt := 0, env.last-2*rowkey.HourMs; tt <= env.last; i, tt = i+1, tt+15_000 {
		v := chunk.Float(float64(i % 17))
		if i%5 == 0 {
			v = chunk.Float(math.Float64frombits(value.StaleNaN))
		}
		samples = append(samples, series.Sample{Labels: l, T: tt, V: v})
	}
	// And one whose sums overflow: avg_over_time goes over to its
	// incremental mean, sum_over_time to ±Inf.
	huge := series.MakeLabels("m", []series.Tag{{Key: "host", Value: "huge"}, {Key: "dc", Value: "d1"}})
	for i, tt := 0, env.last-3*rowkey.HourMs; tt <= env.last; i, tt = i+1, tt+10_000 {
		v := []float64{1.5e308, 1.2e308, -1e308, 7, math.Inf(1), 1.7e308, -1.7e308, 3}[i%8]
		if i%23 == 0 {
			v = math.Inf(-1)
		}
		samples = append(samples, series.Sample{Labels: huge, T: tt, V: chunk.Float(v)})
	}
	errs := make([]error, len(samples))
	if err := env.head.Append(context.Background(), samples, errs); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// To the store, where they are read a block at a time.
	if err := env.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPromPushdownFolds: a marked context and hints of non-overlapping
// windows give one sample per window with samples; a subquery, or no
// mark, leaves the samples as they are.
func TestPromPushdownFolds(t *testing.T) {
	env := openEquiv(t, 0)
	ctx := context.Background()
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	q, err := env.eng.Queryable(PromLimits{}).Querier(env.first, env.last)
	if err != nil {
		t.Fatal(err)
	}
	count := func(ctx context.Context, h *storage.SelectHints) (samples, series int) {
		ss := q.Select(ctx, true, h, name)
		for ss.Next() {
			series++
			it := ss.At().Iterator(nil)
			for it.Next() != 0 {
				samples++
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
		if ss.Err() != nil {
			t.Fatal(ss.Err())
		}
		return samples, series
	}
	h := &storage.SelectHints{Start: env.first + 1, End: env.last, Step: rowkey.HourMs, Range: rowkey.HourMs, Func: "avg_over_time"}
	raw, _ := count(ctx, h)
	expr, err := promqlParse("avg_over_time(m[1h])")
	if err != nil {
		t.Fatal(err)
	}
	marked := PromPushdown(ctx, expr)
	got, n := count(marked, h)
	windows := int((env.last-env.first)/rowkey.HourMs) + 1
	if got == 0 || got > n*windows || raw < 10*got {
		t.Fatalf("folded: %d samples of %d series over %d windows, %d raw", got, n, windows, raw)
	}
	sub, err := promqlParse("max_over_time(avg_over_time(m[1h])[6h:1h])")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := count(PromPushdown(ctx, sub), h); got != raw {
		t.Fatalf("a subquery's selector: %d samples, want the %d raw", got, raw)
	}
	overlap := *h
	overlap.Step = rowkey.HourMs / 2
	if got, _ := count(marked, &overlap); got != raw {
		t.Fatalf("overlapping windows: %d samples, want the %d raw", got, raw)
	}
}

// promqlParse parses an expression into the statement PromPushdown takes.
func promqlParse(s string) (parser.Statement, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(s)
	return &parser.EvalStmt{Expr: e}, err
}

// TestFoldSumsMatchAdd holds addSums, the block loop of avg and sum, to
// add point by point (funcAvgOverTime's and funcSumOverTime's operations):
// over blocks of decimals, integers, -0, huge values that overflow the sum,
// ±Inf, NaN and staleness markers, windows that end inside a block, and
// a fold carried over from an earlier block, the same state bit for bit.
func TestFoldSumsMatchAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	stale := math.Float64frombits(value.StaleNaN)
	draw := func(kind int) chunk.Value {
		switch kind {
		case 0: // the common case: decimals
			return chunk.Float(float64(r.IntN(100000)) / 100)
		case 1:
			return chunk.Int(r.Int64N(1000) - 500)
		}
		specials := []float64{1.7e308, -1.7e308, 1e308, math.Inf(1), math.Inf(-1), math.NaN(), stale, math.Copysign(0, -1), 5e-324}
		if r.IntN(4) == 0 {
			return chunk.Float(specials[r.IntN(len(specials))])
		}
		return chunk.Float(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
	}
	base := int64(1_700_000_000_000) / rowkey.HourMs * rowkey.HourMs
	var it chunk.Iterator
	checked := 0
	for n := range 3000 {
		kind := []int{0, 0, 0, 1, 2}[r.IntN(5)]
		pts := make([]chunk.Point, 1+r.IntN(300))
		for i := range pts {
			v := draw(kind)
			if kind != 2 && r.IntN(50) == 0 {
				v = draw(2)
			}
			pts[i] = chunk.Point{T: base + int64(i)*10_000, V: v}
		}
		data, err := chunk.Append(nil, base, pts)
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range []int{foldAvg, foldSum} {
			// Windows ending at random points of the chunk, the fold of
			// each carried from the last, as foldIterator.window does.
			got, want := fold{fn: fn}, fold{fn: fn}
			if err := it.Reset(data, base); err != nil {
				t.Fatal(err)
			}
			wi := 0
			ends := []int64{base + r.Int64N(int64(len(pts)))*10_000, base + r.Int64N(int64(len(pts)))*10_000, math.MaxInt64}
			slices.Sort(ends)
			for ok := it.Next(); ok; ok = it.Next() {
				b := it.Block()
				for j := 0; j < b.Len(); {
					end := ends[wi]
					if !got.incrMean {
						j = got.addSums(&b, j, end)
					}
					for ; j < b.Len() && b.T[j] <= end; j++ {
						if f := b.Float(j); !value.IsStaleNaN(f) {
							got.add(b.T[j], f)
						}
					}
					if j < b.Len() {
						wi++
					}
				}
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			for _, p := range pts {
				if f := p.V.Float(); !value.IsStaleNaN(f) {
					want.add(p.T, f)
				}
			}
			g, w := foldState(&got), foldState(&want)
			if g != w {
				t.Fatalf("case %d (kind %d, fn %d, %d points): got %s, want %s", n, kind, fn, len(pts), g, w)
			}
			checked++
		}
	}
	t.Logf("%d folds", checked)
}

// TestKahanFloatsMatchInc holds kahanFloats' comparisons to kahansum.Inc's
// math.Abs on every pair of signed zeros, tiny, ordinary, equal-magnitude
// and huge values, and NaN: the same sum and compensation, bit for bit,
// wherever the sum stays finite (addSums' assumption).
func TestKahanFloatsMatchInc(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 1, -1, 0.1, -0.1, 3, -3, 1e16, -1e16,
		1.7e308, -1.7e308, math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, sum := range vals {
		for _, f := range vals {
			for _, c := range []float64{0, 1e-17, -2.5} {
				gs, gc := kahanFloats([]float64{f}, sum, c)
				ws, wc := kahansum.Inc(f, sum, c)
				if math.IsInf(ws, 0) || math.IsNaN(ws) {
					continue
				}
				if math.Float64bits(gs) != math.Float64bits(ws) || math.Float64bits(gc) != math.Float64bits(wc) {
					t.Errorf("sum %v + %v (c %v): got %v, %v, want %v, %v", sum, f, c, gs, gc, ws, wc)
				}
			}
			// kahanInc (promql_window.go), which also handles an
			// overflowing sum, as Inc does.
			for _, c := range []float64{0, 1e-17, -2.5} {
				gs, gc := kahanInc(f, sum, c)
				ws, wc := kahansum.Inc(f, sum, c)
				if !sameBitsOrNaN(gs, ws) || !sameBitsOrNaN(gc, wc) {
					t.Errorf("kahanInc: sum %v + %v (c %v): got %v, %v, want %v, %v", sum, f, c, gs, gc, ws, wc)
				}
			}
		}
	}
}

// sameBitsOrNaN reports whether a and b have the same bits, or are both
// NaN (which NaN an operation returns depends on its operands' order).
func sameBitsOrNaN(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// foldState writes a's state with its floats' bits, every NaN as one:
// which NaN an addition of two returns depends on the order the compiler
// gives its operands (it may swap them), and the API answers any as NaN.
func foldState(a *fold) string {
	bits := func(f float64) uint64 {
		if math.IsNaN(f) {
			return math.Float64bits(math.NaN())
		}
		return math.Float64bits(f)
	}
	return fmt.Sprintf("n %d t %d sum %x c %x mean %x incr %v result %x", a.n, a.t, bits(a.sum), bits(a.c),
		bits(a.mean), a.incrMean, bits(a.result()))
}

// firstDiff shows where the answers got and want first differ.
func firstDiff(got, want string) string {
	g, w := strings.Fields(got), strings.Fields(want)
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("word %d: pushed %s engine %s (after %s)", i, g[i], w[i], strings.Join(g[max(0, i-3):i], " "))
		}
	}
	return fmt.Sprintf("pushed %d words, engine %d: pushed %.300s engine %.300s", len(g), len(w), got, want)
}

// BenchmarkFoldSums is addSums alone over decoded blocks of the long
// query's gauge (a random walk in hundredths, an hour at 10 s: 360 points,
// one window): the fold's per-point work, without the decoding.
func BenchmarkFoldSums(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	base := int64(1_700_000_000_000) / rowkey.HourMs * rowkey.HourMs
	pts := make([]chunk.Point, 360)
	m := int64(5000)
	for i := range pts {
		m = min(max(m+r.Int64N(201)-100, 0), 10000)
		pts[i] = chunk.Point{T: base + int64(i)*10_000, V: chunk.Float(float64(m) / 100)}
	}
	data, err := chunk.Append(nil, base, pts)
	if err != nil {
		b.Fatal(err)
	}
	var blocks []chunk.Block
	var its [6]chunk.Iterator // a block's slices are the iterator's buffers
	for i := range its {
		if err := its[i].Reset(data, base); err != nil {
			b.Fatal(err)
		}
		for j := 0; j <= i && its[i].Next(); j++ {
			if j == i {
				blocks = append(blocks, its[i].Block())
			} else {
				its[i].Block()
			}
		}
	}
	n := 0
	for _, blk := range blocks {
		n += blk.Len()
	}
	var sink float64
	cpu0, _ := cputime.Process()
	for b.Loop() {
		a := fold{fn: foldAvg}
		for k := range blocks {
			a.addSums(&blocks[k], 0, math.MaxInt64)
		}
		sink += a.result()
	}
	if cpu1, ok := cputime.Process(); ok {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/point")
	}
	if n != len(pts) || sink == 0 {
		b.Fatalf("%d points in the blocks, want %d", n, len(pts))
	}
}
