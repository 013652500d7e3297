package query

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"hourglass/internal/procs"
)

// Range functions computed in the querier. The engine evaluates
// rate(x[5m]) at 1 m steps by copying, at every step, the window's samples
// out of its buffered iterator and walking all of them: each sample is
// handled five times, and its ring, slice and the walk cost far more than
// decoding it. The windows overlap, so folding one sample per window
// (promql_pushdown.go) does not apply; instead, once a selector's samples
// are loaded, Select computes the function at every step itself, from the
// samples in memory (a sliding window over one slice, no copies), with the
// engine's arithmetic operation for operation, and replaces the call in
// the statement by its selector x (selectWindow), whose series then hold
// one sample per step, the value computed, with the labels the function
// gives; where it cannot, rewrites the call to max_over_time(x[step])
// (last_over_time(x[step]) for last_over_time, which keeps the metric
// name): the engine then reads one sample per step and returns it as it
// is (the metric name dropped, as the function drops it). The engine's info for a rate over a name that does
// not look like a counter is given by the series set.
//
// The functions: rate, increase, delta; avg, sum, min, max, last, count,
// present, stddev and stdvar _over_time; deriv, predict_linear (with a
// number literal for its duration), irate, idelta, changes, resets;
// quantile_over_time with a number literal in [0, 1] for φ. Over floats
// alone none of the others draws an annotation.
//
// PromPushdown marks the calls that qualify: a range or instant query's
// call over a plain selector (no @, no subquery, no anchored or smoothed modifier,
// whole-millisecond range and offset), no max_source_resolution; an
// avg/sum/min/max/last_over_time whose steps do not overlap (or in an
// instant query) is left to the fold. An instant query's call is
// rewritten to max_over_time(x[1ms]), its one window's sample at the
// evaluation time (or replaced by x, its one sample at that time). Select rewrites a call only when every series it selected holds
// floats alone; with histograms the engine evaluates it as written. The
// rewrite happens while the engine populates the selectors, before it
// evaluates any; a statement whose call was rewritten must not be executed
// again.

// The functions computed here.
const (
	winRate = iota // rate, increase, delta: extrapolate
	winAvg
	winSum
	winMin
	winMax
	winLast
	winCount
	winPresent
	winStddev
	winStdvar
	winDeriv
	winPredict
	winIrate
	winIdelta
	winChanges
	winResets
	winQuantile
)

// windowCall is a call PromPushdown found that Select may compute.
type windowCall struct {
	call            *parser.Call
	sel             *parser.MatrixSelector
	rng             int64         // the range, ms
	rngDur          time.Duration // the range as the engine divides by it
	counter, isRate bool          // rate, increase, delta
	name            string        // the function
	fn              int           // win*
	offset          int64         // the selector's offset, ms: predict_linear's evaluation time is the window's end + offset
	arg             float64       // predict_linear's duration, quantile_over_time's φ
	slot            *parser.Expr  // the field that holds call, where a vector selector may replace it (nil: none)
	grid            *stepTimes    // in a subquery, its evaluator's steps (before the selector's offset); nil: the query's
	done            bool          // rewritten
}

// subqueryGrid returns the evaluation times of the evaluator of a call
// whose ancestors are path: nil for the query's own, or those of its
// innermost subquery, as the engine's subqueryTimeRange gives them from
// each enclosing evaluator's (an instant query's evaluator steps by 1 ms);
// a subquery without a step steps by noStep of its range, the engine's
// NoStepSubqueryIntervalFn (PromNoStepSubqueryInterval); false for one
// when noStep is nil. PromPushdown leaves out subqueries with @.
func subqueryGrid(es *parser.EvalStmt, path []parser.Node, noStep func(int64) int64) (*stepTimes, bool) {
	var g *stepTimes
	start, end, interval := es.Start.UnixMilli(), es.End.UnixMilli(), es.Interval.Milliseconds()
	if interval == 0 {
		interval = 1
	}
	for _, n := range path {
		sq, ok := n.(*parser.SubqueryExpr)
		if !ok {
			continue
		}
		if sq.Step < 0 || sq.Step%time.Millisecond != 0 || sq.Range%time.Millisecond != 0 || sq.OriginalOffset%time.Millisecond != 0 ||
			sq.Step == 0 && noStep == nil {
			return nil, false
		}
		off, rng, st := sq.OriginalOffset.Milliseconds(), sq.Range.Milliseconds(), sq.Step.Milliseconds()
		if st == 0 { // the engine's: its NoStepSubqueryIntervalFn of the range
			if st = noStep(rng); st <= 0 {
				return nil, false
			}
		}
		parentEnd := start + ((end-start)/interval)*interval
		end = parentEnd - off
		first := start - off - rng // the first step after it, aligned
		start = st * (first / st)
		if start <= first {
			start += st
		}
		interval = st
		g = &stepTimes{r0: start, step: st, end: end}
	}
	return g, true
}

// windowFuncs are the functions computed here, with rate's, increase's
// and delta's kinds: whether the samples are a counter, and whether the
// result is per second.
var windowFuncs = map[string]struct {
	fn              int
	counter, isRate bool
}{
	"rate":               {winRate, true, true},
	"increase":           {winRate, true, false},
	"delta":              {winRate, false, false},
	"avg_over_time":      {fn: winAvg},
	"sum_over_time":      {fn: winSum},
	"min_over_time":      {fn: winMin},
	"max_over_time":      {fn: winMax},
	"last_over_time":     {fn: winLast},
	"count_over_time":    {fn: winCount},
	"present_over_time":  {fn: winPresent},
	"stddev_over_time":   {fn: winStddev},
	"stdvar_over_time":   {fn: winStdvar},
	"deriv":              {fn: winDeriv},
	"predict_linear":     {fn: winPredict},
	"irate":              {fn: winIrate},
	"idelta":             {fn: winIdelta},
	"changes":            {fn: winChanges},
	"resets":             {fn: winResets},
	"quantile_over_time": {fn: winQuantile},
}

// numberArg returns the value of e when it is a number literal (in
// parentheses, or marked step-invariant by the engine), or arithmetic over
// number literals such as predict_linear's 4*3600 (the engine wraps it as
// step-invariant and evaluates it once, with scalarBinop's operations,
// which are these).
func numberArg(e parser.Expr) (float64, bool) {
	for {
		switch n := e.(type) {
		case *parser.NumberLiteral:
			return n.Val, true
		case *parser.ParenExpr:
			e = n.Expr
		case *parser.StepInvariantExpr:
			e = n.Expr
		case *parser.UnaryExpr:
			v, ok := numberArg(n.Expr)
			if !ok || n.Op != parser.SUB && n.Op != parser.ADD {
				return 0, false
			}
			if n.Op == parser.SUB {
				v = -v
			}
			return v, true
		case *parser.BinaryExpr:
			l, ok := numberArg(n.LHS)
			if !ok {
				return 0, false
			}
			r, ok := numberArg(n.RHS)
			if !ok {
				return 0, false
			}
			switch n.Op { // the engine's scalarBinop
			case parser.ADD:
				return l + r, true
			case parser.SUB:
				return l - r, true
			case parser.MUL:
				return l * r, true
			case parser.DIV:
				return l / r, true
			case parser.POW:
				return math.Pow(l, r), true
			case parser.MOD:
				return math.Mod(l, r), true
			case parser.ATAN2:
				return math.Atan2(l, r), true
			}
			return 0, false
		default:
			return 0, false
		}
	}
}

// windowCalls returns the calls of es's expression that Select may
// compute, at the query's steps of step ms or, in a subquery, at the
// subquery's, by the first label matcher of their selector, which the
// engine passes to Select as it is. With fold, the calls that
// promql_pushdown.go folds are left to it.
func windowCalls(ctx context.Context, es *parser.EvalStmt, step int64, fold bool) map[*labels.Matcher]*windowCall {
	if maxSourceResolution(ctx) > 0 {
		return nil
	}
	root := &es.Expr
	var out map[*labels.Matcher]*windowCall
	parser.Inspect(*root, func(n parser.Node, path []parser.Node) error {
		c, ok := n.(*parser.Call)
		if !ok || len(c.Args) == 0 {
			return nil
		}
		kind, ok := windowFuncs[c.Func.Name]
		if !ok {
			return nil
		}
		var arg float64
		mi := 0 // the range argument
		switch kind.fn {
		case winPredict:
			if len(c.Args) != 2 {
				return nil
			}
			if arg, ok = numberArg(c.Args[1]); !ok {
				return nil
			}
		case winQuantile: // φ in [0, 1]: the engine warns of any other
			if len(c.Args) != 2 {
				return nil
			}
			if arg, ok = numberArg(c.Args[0]); !ok || !(arg >= 0 && arg <= 1) {
				return nil
			}
			mi = 1
		default:
			if len(c.Args) != 1 {
				return nil
			}
		}
		ms, ok := c.Args[mi].(*parser.MatrixSelector)
		if !ok {
			return nil
		}
		vs, ok := ms.VectorSelector.(*parser.VectorSelector)
		if !ok || vs.Timestamp != nil || vs.StartOrEnd != 0 || vs.Anchored || vs.Smoothed || len(vs.LabelMatchers) == 0 ||
			ms.Range <= 0 || ms.Range%time.Millisecond != 0 || vs.OriginalOffset%time.Millisecond != 0 {
			return nil
		}
		if _, ok := foldFuncs[c.Func.Name]; ok && fold && (step == 0 || step >= ms.Range.Milliseconds()) {
			return nil // folded as the samples decode (promql_pushdown.go)
		}
		grid, ok := subqueryGrid(es, path, noStepInterval(ctx))
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == rollupMarker {
				return nil
			}
		}
		if out == nil {
			out = map[*labels.Matcher]*windowCall{}
		}
		out[vs.LabelMatchers[0]] = &windowCall{call: c, sel: ms, rng: ms.Range.Milliseconds(), rngDur: ms.Range,
			counter: kind.counter, isRate: kind.isRate, name: c.Func.Name, fn: kind.fn,
			offset: vs.OriginalOffset.Milliseconds(), arg: arg, slot: slotOf(root, path, c), grid: grid}
		return nil
	})
	return out
}

// slotOf returns the field that holds c, its parent's (the last node of
// path) or root when c is the whole expression, if the engine evaluates a
// vector selector there as it evaluates any other expression of its
// values; nil if not: timestamp and start_timestamp read a vector
// selector's sample times, absent its matchers, info its selector.
func slotOf(root *parser.Expr, path []parser.Node, c *parser.Call) *parser.Expr {
	if len(path) == 0 {
		if *root == c {
			return root
		}
		return nil
	}
	switch p := path[len(path)-1].(type) {
	case *parser.AggregateExpr:
		if p.Expr == c {
			return &p.Expr
		}
	case *parser.BinaryExpr:
		if p.LHS == c {
			return &p.LHS
		}
		if p.RHS == c {
			return &p.RHS
		}
	case *parser.ParenExpr:
		if p.Expr == c {
			return &p.Expr
		}
	case *parser.SubqueryExpr: // evaluated at the subquery's steps as any expression
		if p.Expr == c {
			return &p.Expr
		}
	case *parser.UnaryExpr:
		if p.Expr == c {
			return &p.Expr
		}
	case *parser.Call:
		switch p.Func.Name {
		case "timestamp", "start_timestamp", "absent", "info":
			return nil
		}
		for i := range p.Args {
			if p.Args[i] == c {
				return &p.Args[i]
			}
		}
	}
	return nil
}

type noStepKey struct{}

// PromNoStepSubqueryInterval returns ctx carrying fn, the engine's
// NoStepSubqueryIntervalFn, for PromPushdown: the range functions inside a
// subquery without a step (x[1h:]) are then computed at the steps fn gives
// the engine; without it they are left to the engine. fn must be the
// engine's own.
func PromNoStepSubqueryInterval(ctx context.Context, fn func(rangeMillis int64) int64) context.Context {
	return context.WithValue(ctx, noStepKey{}, fn)
}

func noStepInterval(ctx context.Context) func(int64) int64 {
	fn, _ := ctx.Value(noStepKey{}).(func(int64) int64)
	return fn
}

// windowCallFor returns the call whose selector has the matchers ms, if
// PromPushdown marked ctx with one, with the query's steps.
func windowCallFor(ctx context.Context, hints *storage.SelectHints, ms []*labels.Matcher) (*windowCall, *pushdown) {
	pd, _ := ctx.Value(pushdownKey{}).(*pushdown)
	if pd == nil || len(pd.rates) == 0 || len(ms) == 0 || hints == nil || pd.step < 0 || pd.step == 0 && pd.span != 0 || pd.span < 0 {
		return nil, nil
	}
	rc := pd.rates[ms[0]]
	if rc == nil || rc.done {
		return nil, nil // not marked, or already rewritten
	}
	return rc, pd
}

// selectWindow computes rc at every step for the series of ss (loaded over
// the hinted range: the first step's window to the last step) and rewrites
// the call; false (nothing done) when a series holds histograms.
func (q *promQuerier) selectWindow(ctx context.Context, rc *windowCall, pd *pushdown, hints *storage.SelectHints, ss []*promSeries) (storage.SeriesSet, bool) {
	for _, s := range ss {
		if s.cells != nil && s.cells.hasHist() {
			return nil, false
		}
	}
	steps := stepTimes{r0: hints.End - pd.span, step: pd.step, end: hints.End}
	if g := rc.grid; g != nil { // a subquery's steps, less the selector's offset
		steps = stepTimes{r0: g.r0 - rc.offset, step: g.step, end: g.end - rc.offset}
	}
	err := eachSeries(ctx, ss, func(w *windowWorker, s *promSeries) error { return w.series(s, rc, steps) })
	if err != nil {
		return storage.ErrSeriesSet(err), true
	}
	for _, s := range ss {
		s.computed = true
	}
	set := &promSeriesSet{series: ss, i: -1}
	if rc.counter {
		set.warn = rateInfo(rc, ss)
	}
	rc.done = true
	if rc.slot != nil && (rc.fn == winLast || sameSchema(ss)) {
		// The engine evaluates the selector itself in the call's place:
		// at each step, the computed sample at the step's time (a
		// staleness marker where the function has no value), with the
		// labels the function gives: its metric name (and type and unit)
		// dropped but for last_over_time, which no two series then share.
		// The engine's name removal is not delayed
		// (EnableDelayedNameRemoval, not set).
		if rc.fn != winLast {
			for _, s := range ss {
				s.lbls = s.lbls.DropReserved(schema.IsMetadataLabel)
			}
		}
		*rc.slot = rc.sel.VectorSelector
		return set, true
	}
	// The engine evaluates max_over_time(x[step]) instead: one sample per
	// window, at its end; last_over_time(x[step]) for last_over_time, which
	// keeps the metric name.
	if rc.fn != winLast {
		rc.call.Func = parser.Functions["max_over_time"]
	}
	rc.call.Args = []parser.Expr{rc.sel}
	rc.sel.Range = time.Duration(max(steps.step, 1)) * time.Millisecond // an instant query's: (t − 1 ms, t]
	return set, true
}

// sameSchema reports whether the series of ss have the same metric name,
// type and unit: without them they still differ.
func sameSchema(ss []*promSeries) bool {
	if len(ss) == 0 {
		return true
	}
	l0 := ss[0].lbls
	n, t, u := l0.Get(labels.MetricName), l0.Get(model.MetricTypeLabel), l0.Get(model.MetricUnitLabel)
	for _, s := range ss[1:] {
		if s.lbls.Get(labels.MetricName) != n || s.lbls.Get(model.MetricTypeLabel) != t || s.lbls.Get(model.MetricUnitLabel) != u {
			return false
		}
	}
	return true
}

// rateInfo is the engine's info for rate and increase over a series whose
// name does not end as a counter's does (and that has a result).
func rateInfo(rc *windowCall, ss []*promSeries) annotations.Annotations {
	var a annotations.Annotations
	for _, s := range ss {
		if len(s.pre) == 0 {
			continue
		}
		name := s.lbls.Get(labels.MetricName)
		if name != "" && !strings.HasSuffix(name, "_total") && !strings.HasSuffix(name, "_sum") &&
			!strings.HasSuffix(name, "_count") && !strings.HasSuffix(name, "_bucket") {
			a.Add(annotations.NewPossibleNonCounterInfo(name, rc.sel.PositionRange()))
		}
	}
	return a
}

// eachSeries calls fn for every series of ss, on up to procs.Workers()
// goroutines (a goroutine per 64 series at most), each with its own W; it
// returns the first error, or ctx's once it is done.
func eachSeries[W any](ctx context.Context, ss []*promSeries, fn func(w *W, s *promSeries) error) error {
	workers := min(procs.Workers(), (len(ss)+63)/64)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w W
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ss) {
					return
				}
				if i%64 == 0 {
					if err := ctx.Err(); err != nil {
						errs[g] = err
						return
					}
				}
				if err := fn(&w, ss[i]); err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stepTimes is the ends of a selector's windows: r0, r0+step, ... up to end.
type stepTimes struct{ r0, step, end int64 }

// staleNaN is a staleness marker.
var staleNaN = math.Float64frombits(value.StaleNaN)

// windowPoint is one step's result.
type windowPoint struct {
	t int64
	f float64
}

// windowWorker computes series one after the other with its buffers.
type windowWorker struct {
	raw    rawPoints
	ts     []int64
	fs     []float64
	resets []int     // i: fs[i] < fs[i-1]
	sorted []float64 // quantile_over_time's window, sorted
	// quantile_over_time: bad[i] counts the NaNs and zeros of fs[:i];
	// with qok, sorted holds fs[qlo:qhi] sorted.
	bad      []int32
	qlo, qhi int
	qok      bool
	// deriv, predict_linear: with secsOK, every sample's time is a whole
	// number of seconds after the first's, and p1[i], p2[i] are the sums
	// of those numbers and their squares over ts[:i] (wrapping).
	p1, p2 []int64
	secsOK bool
}

// wholeSeconds fills the sums of the samples' seconds after the first
// (secsOK when they are all whole, under 2^31).
func (w *windowWorker) wholeSeconds(ts []int64) {
	p1, p2 := append(w.p1[:0], 0), append(w.p2[:0], 0)
	var s1, s2 int64
	for _, t := range ts {
		d := t - ts[0]
		a := d / 1000
		if a*1000 != d || a >= 1<<31 {
			return
		}
		s1 += a
		s2 += a * a
		p1, p2 = append(p1, s1), append(p2, s2)
	}
	w.p1, w.p2, w.secsOK = p1, p2, true
}

// regression is deriv or predict_linear over the window ts[lo:hi] ending
// at r (at least two samples), with the sums of x and x² (wholeSecondSums)
// from the series' running sums when the window's x are whole seconds
// from its intercept time, small enough that Σx² <= 2^53 is sure: its x
// are k_i = a_i − A (a_i the seconds after the series' first sample, A
// the intercept's), Σk = Σa − nA and Σk² = Σa² − 2AΣa + nA², exact in
// wrapping int64 arithmetic since the true sums lie within its range.
func (w *windowWorker) regression(rc *windowCall, ts []int64, fs []float64, lo, hi int, r int64) float64 {
	ic := ts[lo] // deriv's intercept time
	if rc.fn == winPredict {
		ic = r + rc.offset
	}
	d := ic - ts[0]
	A := d / 1000
	n := int64(hi - lo)
	k0, k1 := (ts[lo]-ts[0])/1000-A, (ts[hi-1]-ts[0])/1000-A // the first and last x: every other lies between
	const maxK = 1 << 26
	if A*1000 != d || k0 < -maxK || k0 > maxK || k1 < -maxK || k1 > maxK || n > 1<<20 ||
		float64(n)*float64(max(k0*k0, k1*k1)) > 1<<53 {
		f, _ := rc.window(ts[lo:hi], fs[lo:hi], r, &w.sorted)
		return f
	}
	s1 := w.p1[hi] - w.p1[lo]
	s2 := w.p2[hi] - w.p2[lo]
	sumX := s1 - n*A
	sumX2 := s2 - 2*A*s1 + n*A*A
	slope, intercept := linearRegressionY(ts[lo:hi], fs[lo:hi], ic, float64(sumX), float64(sumX2))
	if rc.fn == winDeriv {
		return slope
	}
	return slope*rc.arg + intercept
}

// quantile is quantile_over_time over fs[lo:hi] (lo and hi never lower
// than the last call's for the series). Values of a window without NaNs
// and zeros have one sorted order of their bits, however they are sorted:
// the window's is kept as the window slides, by taking out the samples
// that left it and putting in those that came. A window with either is
// sorted as the engine sorts it (window).
func (w *windowWorker) quantile(rc *windowCall, fs []float64, lo, hi int) (float64, bool) {
	if hi == lo {
		return 0, false
	}
	if w.bad[hi] != w.bad[lo] {
		w.qok = false
		return rc.window(nil, fs[lo:hi], 0, &w.sorted)
	}
	v := w.sorted
	if !w.qok || w.qhi <= lo || (lo-w.qlo)+(hi-w.qhi) > (hi-lo)/2 {
		v = append(v[:0], fs[lo:hi]...)
		slices.Sort(v)
	} else {
		for _, f := range fs[w.qlo:lo] {
			j, _ := slices.BinarySearch(v, f)
			v = slices.Delete(v, j, j+1)
		}
		for _, f := range fs[w.qhi:hi] {
			j, _ := slices.BinarySearch(v, f)
			v = slices.Insert(v, j, f)
		}
	}
	w.sorted, w.qlo, w.qhi, w.qok = v, lo, hi, true
	return quantileSorted(rc.arg, v), true
}

// quantileSorted is the engine's quantile (promql/quantile.go) over the
// sorted values v, q in [0, 1].
func quantileSorted(q float64, v []float64) float64 {
	n := float64(len(v))
	rank := q * (n - 1)
	lowerIndex := math.Max(0, math.Floor(rank))
	upperIndex := math.Min(n-1, lowerIndex+1)
	weight := rank - math.Floor(rank)
	return v[int(lowerIndex)]*(1-weight) + v[int(upperIndex)]*weight
}

// series computes rc over s's samples at each step into s.pre.
func (w *windowWorker) series(s *promSeries, rc *windowCall, st stepTimes) error {
	s.pre = nil
	if !w.raw.reset(s) {
		return nil
	}
	ts, fs, resets := w.ts[:0], w.fs[:0], w.resets[:0]
	for w.raw.raw() {
		if w.raw.inHead {
			for _, p := range w.raw.hp[w.raw.hi:] {
				if f := p.V.Float(); !value.IsStaleNaN(f) {
					ts, fs = append(ts, p.T), append(fs, f)
				}
			}
			w.raw.inHead = false
			continue
		}
		if w.raw.inBlk {
			b := &w.raw.blk
			for j := w.raw.bi; j < len(b.T); j++ {
				if f := b.Float(j); !value.IsStaleNaN(f) {
					ts, fs = append(ts, b.T[j]), append(fs, f)
				}
			}
			w.raw.inBlk = false
			continue
		}
		if f := w.raw.p.v.Float(); !value.IsStaleNaN(f) {
			ts, fs = append(ts, w.raw.p.t), append(fs, f)
		}
		w.raw.one = false
	}
	if err := w.raw.p.err; err != nil {
		return corruptSeries(s.entry, err)
	}
	if rc.fn == winRate && rc.counter {
		for i := 1; i < len(fs); i++ {
			if fs[i] < fs[i-1] {
				resets = append(resets, i)
			}
		}
	}
	w.secsOK = false
	if (rc.fn == winDeriv || rc.fn == winPredict) && len(ts) > 0 {
		w.wholeSeconds(ts)
	}
	if rc.fn == winQuantile {
		w.bad = append(w.bad[:0], 0)
		c := int32(0)
		for _, f := range fs {
			if f == 0 || math.IsNaN(f) {
				c++
			}
			w.bad = append(w.bad, c)
		}
		w.qok = false
	}
	w.ts, w.fs, w.resets = ts, fs, resets
	var out []windowPoint
	lo, hi, ri := 0, 0, 0
	step := max(st.step, 1) // an instant query's one window: r0 = end
	for r := st.r0; r <= st.end; r += step {
		for hi < len(ts) && ts[hi] <= r {
			hi++
		}
		for lo < hi && ts[lo] <= r-rc.rng {
			lo++
		}
		var f float64
		ok := true
		if rc.fn == winRate {
			if ok = hi-lo >= 2; ok {
				for ri < len(resets) && resets[ri] <= lo {
					ri++
				}
				f = rc.extrapolate(ts[lo:hi], fs[lo:hi], resets[ri:], lo, r)
			}
		} else if rc.fn == winQuantile {
			f, ok = w.quantile(rc, fs, lo, hi)
		} else if (rc.fn == winDeriv || rc.fn == winPredict) && hi-lo >= 2 && w.secsOK {
			f, ok = w.regression(rc, ts, fs, lo, hi, r), true
		} else {
			f, ok = rc.window(ts[lo:hi], fs[lo:hi], r, &w.sorted)
		}
		if !ok {
			// No value: a staleness marker, so that a vector selector
			// evaluated over the results (selectWindow) does not look back
			// to the last step's.
			if out != nil {
				out = append(out, windowPoint{t: r, f: staleNaN})
			}
			continue
		}
		if out == nil {
			out = make([]windowPoint, 0, int((st.end-r)/step)+1)
		}
		out = append(out, windowPoint{t: r, f: f})
	}
	s.pre = out
	return nil
}

// extrapolate is the engine's extrapolatedRate for floats without start
// timestamps (promql/functions.go), over the window's samples ts, fs (at
// least two) ending at r; resets are the counter resets from the window's
// on, as indexes of the series' samples, of which the window's first is
// off.
func (rc *windowCall) extrapolate(ts []int64, fs []float64, resets []int, off int, r int64) float64 {
	n := len(fs) - 1
	firstT, lastT := ts[0], ts[n]
	resultFloat := fs[n] - fs[0]
	if rc.counter {
		for _, i := range resets {
			if i-off > n {
				break
			}
			resultFloat += fs[i-off-1]
		}
	}
	rangeStart, rangeEnd := r-rc.rng, r
	durationToStart := float64(firstT-rangeStart) / 1000
	durationToEnd := float64(rangeEnd-lastT) / 1000
	sampledInterval := float64(lastT-firstT) / 1000
	averageDurationBetweenSamples := sampledInterval / float64(n)
	extrapolationThreshold := averageDurationBetweenSamples * 1.1
	if durationToStart >= extrapolationThreshold {
		durationToStart = averageDurationBetweenSamples / 2
	}
	if rc.counter {
		durationToZero := durationToStart
		if resultFloat > 0 && fs[0] >= 0 {
			durationToZero = sampledInterval * (fs[0] / resultFloat)
		}
		if durationToZero < durationToStart {
			durationToStart = durationToZero
		}
	}
	if durationToEnd >= extrapolationThreshold {
		durationToEnd = averageDurationBetweenSamples / 2
	}
	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if rc.isRate {
		factor /= rc.rngDur.Seconds()
	}
	return resultFloat * factor
}

// window is the function's value over the window's samples ts, fs ending
// at r, as the engine's function computes it over floats
// (promql/functions.go); false when it has none. buf is scratch space.
func (rc *windowCall) window(ts []int64, fs []float64, r int64, buf *[]float64) (float64, bool) {
	n := len(fs)
	if n == 0 {
		return 0, false
	}
	switch rc.fn {
	case winAvg: // funcAvgOverTime
		sum, count := fs[0], 1.
		var mean, kahanC float64
		incrementalMean := false
		for i, f := range fs[1:] {
			count = float64(i + 2)
			if !incrementalMean {
				newSum, newC := kahanInc(f, sum, kahanC)
				if !math.IsInf(newSum, 0) {
					sum, kahanC = newSum, newC
					continue
				}
				incrementalMean = true
				mean = sum / (count - 1)
				kahanC /= (count - 1)
			}
			q := (count - 1) / count
			mean, kahanC = kahanInc(f/count, q*mean, float64(q*kahanC))
		}
		if incrementalMean {
			return mean + kahanC, true
		}
		return sum/count + kahanC/count, true
	case winSum: // funcSumOverTime
		var sum, c float64
		for _, f := range fs {
			sum, c = kahanInc(f, sum, c)
		}
		if math.IsInf(sum, 0) {
			return sum, true
		}
		return sum + c, true
	case winMax: // compareOverTime
		m := fs[0]
		for _, f := range fs {
			if f > m || math.IsNaN(m) {
				m = f
			}
		}
		return m, true
	case winMin:
		m := fs[0]
		for _, f := range fs {
			if f < m || math.IsNaN(m) {
				m = f
			}
		}
		return m, true
	case winLast:
		return fs[n-1], true
	case winCount:
		return float64(n), true
	case winPresent:
		return 1, true
	case winStddev, winStdvar: // varianceOverTime
		var count, mean, cMean, aux, cAux float64
		for _, f := range fs {
			count++
			delta := f - (mean + cMean)
			mean, cMean = kahanInc(delta/count, mean, cMean)
			aux, cAux = kahanInc(delta*(f-(mean+cMean)), aux, cAux)
		}
		variance := (aux + cAux) / count
		if rc.fn == winStddev {
			return math.Sqrt(variance), true
		}
		return variance, true
	case winDeriv: // funcDeriv
		if n < 2 {
			return 0, false
		}
		slope, _ := linearRegression(ts, fs, ts[0])
		return slope, true
	case winPredict: // funcPredictLinear, at the evaluation time
		if n < 2 {
			return 0, false
		}
		slope, intercept := linearRegression(ts, fs, r+rc.offset)
		return slope*rc.arg + intercept, true
	case winIrate, winIdelta: // instantValue over floats
		if n < 2 {
			return 0, false
		}
		sampledInterval := ts[n-1] - ts[n-2]
		if sampledInterval == 0 {
			return 0, false
		}
		f := fs[n-1]
		if rc.fn == winIdelta || !(fs[n-1] < fs[n-2]) {
			f = fs[n-1] - fs[n-2]
		}
		if rc.fn == winIrate {
			f /= float64(sampledInterval) / 1000
		}
		return f, true
	case winChanges: // funcChanges over floats
		c := 0
		for i := 1; i < n; i++ {
			if fs[i] != fs[i-1] && !(math.IsNaN(fs[i]) && math.IsNaN(fs[i-1])) {
				c++
			}
		}
		return float64(c), true
	case winQuantile: // funcQuantileOverTime and quantile, φ in [0, 1]
		// Sorted as the engine sorts (sort.Sort, NaN first), so that even
		// zeros of both signs end in the same places.
		v := append((*buf)[:0], fs...)
		*buf = v
		sort.Sort(byValueNaNFirst(v))
		return quantileSorted(rc.arg, v), true
	case winResets: // funcResets over floats, no start timestamps
		c := 0
		for i := 1; i < n; i++ {
			if fs[i] < fs[i-1] {
				c++
			}
		}
		return float64(c), true
	}
	return 0, false
}

// byValueNaNFirst sorts as the engine's vectorByValueHeap does.
type byValueNaNFirst []float64

func (s byValueNaNFirst) Len() int { return len(s) }
func (s byValueNaNFirst) Less(i, j int) bool {
	if math.IsNaN(s[i]) {
		return true
	}
	return s[i] < s[j]
}
func (s byValueNaNFirst) Swap(i, j int) { s[i], s[j] = s[j], s[i] }

// kahanInc is kahansum.Inc (util/kahansum), written again so that it
// inlines (kahansum.Inc does not; linearRegression makes four calls per
// sample). The conversions round every argument and result to
// float64, as Inc's do (c where a caller passes a product), so no
// operation fuses across it and the result is Inc's, bit for bit (Inc
// itself has no multiplication to fuse).
func kahanInc(inc, sum, c float64) (float64, float64) {
	inc, sum = float64(inc), float64(sum)
	t := sum + inc
	switch {
	case t > math.MaxFloat64 || t < -math.MaxFloat64:
		return t, 0
	case math.Abs(sum) >= math.Abs(inc):
		return t, c + ((sum - t) + inc)
	}
	return t, c + ((inc - t) + sum)
}

// linearRegression is the engine's, over the samples ts, fs (at least
// two).
func linearRegression(ts []int64, fs []float64, interceptTime int64) (slope, intercept float64) {
	if sumX, sumX2, ok := wholeSecondSums(ts, interceptTime); ok {
		return linearRegressionY(ts, fs, interceptTime, sumX, sumX2)
	}
	var (
		n          float64
		sumX, cX   float64
		sumY, cY   float64
		sumXY, cXY float64
		sumX2, cX2 float64
		initY      float64
		constY     bool
	)
	initY = fs[0]
	constY = true
	for i, f := range fs {
		if constY && i > 0 && f != initY {
			constY = false
		}
		n += 1.0
		x := float64(ts[i]-interceptTime) / 1e3
		sumX, cX = kahanInc(x, sumX, cX)
		sumY, cY = kahanInc(f, sumY, cY)
		sumXY, cXY = kahanInc(x*f, sumXY, cXY)
		sumX2, cX2 = kahanInc(x*x, sumX2, cX2)
	}
	if constY {
		return flatLine(initY)
	}
	sumX += cX
	sumY += cY
	sumXY += cXY
	sumX2 += cX2
	return regressionLine(n, sumX, sumY, sumXY, sumX2)
}

// flatLine is the engine's linearRegression of a window whose values are
// all initY.
func flatLine(initY float64) (slope, intercept float64) {
	if math.IsInf(initY, 0) {
		return math.NaN(), math.NaN()
	}
	return 0, initY
}

// regressionLine is the end of the engine's linearRegression, from its
// compensated sums.
func regressionLine(n, sumX, sumY, sumXY, sumX2 float64) (slope, intercept float64) {
	covXY := sumXY - sumX*sumY/n
	varX := sumX2 - sumX*sumX/n

	slope = covXY / varX
	intercept = sumY/n - slope*sumX/n
	return slope, intercept
}

// wholeSecondSums returns the sums of x and x² over the samples' times ts
// as linearRegression's x (seconds from interceptTime), when every x is a
// whole number of seconds and every partial sum of either is a whole
// number below 2^53: then every one of the engine's Kahan increments of
// them is exact, leaves the compensation +0, and the engine's compensated
// sum is the integer sum. Scrapes at whole seconds and queries at whole
// seconds (benchmarks, generated data) give such windows; others are
// summed as the engine sums them.
func wholeSecondSums(ts []int64, interceptTime int64) (sumX, sumX2 float64, ok bool) {
	const maxK = 1 << 26 // k² < 2^52
	var sk, sk2 int64
	for _, t := range ts {
		d := t - interceptTime
		k := d / 1000
		if k*1000 != d || k > maxK || k < -maxK {
			return 0, 0, false
		}
		sk += k
		sk2 += k * k
		// Σ|k| <= Σk² (whole k): the partial sums of k stay within 2^53
		// while those of k² do.
		if sk2 > 1<<53 {
			return 0, 0, false
		}
	}
	return float64(sk), float64(sk2), true
}

// linearRegressionY is linearRegression for windows whose sums of x and x²
// wholeSecondSums gave: the Kahan sums of y and x·y alone.
func linearRegressionY(ts []int64, fs []float64, interceptTime int64, sumX, sumX2 float64) (slope, intercept float64) {
	var (
		n          float64
		sumY, cY   float64
		sumXY, cXY float64
	)
	initY := fs[0]
	constY := true
	for i, f := range fs {
		if constY && i > 0 && f != initY {
			constY = false
		}
		n += 1.0
		x := float64(ts[i]-interceptTime) / 1e3
		sumY, cY = kahanInc(f, sumY, cY)
		sumXY, cXY = kahanInc(x*f, sumXY, cXY)
	}
	if constY {
		return flatLine(initY)
	}
	sumY += cY
	sumXY += cXY
	return regressionLine(n, sumX, sumY, sumXY, sumX2)
}

// preIterator is a chunkenc.Iterator over a series' computed results.
type preIterator[T ~int64] struct {
	pushed
	pre []windowPoint
	i   int
}

func (it *preIterator[T]) Next() chunkenc.ValueType {
	if it.i >= len(it.pre) {
		it.state = iterDone
		return chunkenc.ValNone
	}
	it.t, it.f, it.state = it.pre[it.i].t, it.pre[it.i].f, iterAt
	it.i++
	return chunkenc.ValFloat
}

func (it *preIterator[T]) Seek(t T) chunkenc.ValueType { return it.seek(int64(t), it.Next) }

var _ chunkenc.Iterator = (*preIterator[int64])(nil)
