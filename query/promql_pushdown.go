package query

import (
	"context"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/kahansum"

	"hourglass/chunk"
)

// Folding a range function into the scan. The PromQL engine evaluates
// avg_over_time(x[1h]) at each step by copying every sample of the window
// through its buffered iterator into a slice and then folding the slice;
// for a day of 10-second samples that per-sample work costs more than
// reading them. When the windows of the steps do not overlap (a step at
// least the range, or an instant query), each window's fold can be done
// here instead, as the samples decode, and the engine given one sample per
// window whose fold is the same value: the window's average, sum, maximum,
// minimum or last sample. The engine then folds that one sample and gets
// the same answer, bit for bit (the folds below are the engine's own,
// operation for operation). Select folds every series' windows before it
// returns, its series spread over the query's workers (foldSeries).
//
// Select sees only hints, not the expression, so the caller vouches for
// the expression with PromPushdown: a subquery evaluates its selectors at
// its own steps, and anchored or smoothed selectors read other windows,
// so an expression with either is never folded (with a subquery, the
// range functions Select computes are computed at the steps of their own
// evaluator: promql_window.go).

type pushdownKey struct{}

// PromPushdown returns ctx marked so that the Queryable's Select may fold
// the samples of a range function's windows (see above) for the query whose
// statement is stmt, when the expression allows it. Pass the result to the
// query's Exec.
func PromPushdown(ctx context.Context, stmt parser.Statement) context.Context {
	es, ok := stmt.(*parser.EvalStmt)
	if !ok {
		return ctx
	}
	safe, at, subq := true, false, false
	parser.Inspect(es.Expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.SubqueryExpr:
			subq = true
			if n.Timestamp != nil || n.StartOrEnd != 0 {
				at = true
			}
		case *parser.VectorSelector:
			if n.Anchored || n.Smoothed {
				safe = false
			}
			if n.Timestamp != nil || n.StartOrEnd != 0 {
				at = true
			}
		}
		return nil
	})
	if !safe {
		return ctx
	}
	pd := &pushdown{span: es.End.Sub(es.Start).Milliseconds(), step: es.Interval.Milliseconds(), at: at, subq: subq}
	if (pd.step > 0 || pd.step == 0 && pd.span == 0) && !at { // a range or an instant query
		pd.rates = windowCalls(ctx, es, pd.step, !subq) // promql_window.go
	}
	return context.WithValue(ctx, pushdownKey{}, pd)
}

// pushdown is what PromPushdown marks a context with: the query's
// evaluation times (its span end − start and its step), and whether a
// selector has an @ modifier, which evaluates it at other times; whether
// the expression has a subquery, whose selectors are evaluated at its own
// steps (nothing is folded or thinned then); and the range function calls
// Select may compute (promql_window.go), at their evaluator's steps.
type pushdown struct {
	span, step int64
	at, subq   bool
	rates      map[*labels.Matcher]*windowCall
}

// The range functions folded here.
const (
	foldAvg = iota + 1
	foldSum
	foldMin
	foldMax
	foldLast
)

var foldFuncs = map[string]int{
	"avg_over_time":  foldAvg,
	"sum_over_time":  foldSum,
	"min_over_time":  foldMin,
	"max_over_time":  foldMax,
	"last_over_time": foldLast,
}

// overTime is the windows of one selector: (r-rng, r] for r = r0, r0+step,
// ... up to end (one window when step is 0), folded with fn.
type overTime struct {
	fn                 int
	r0, step, rng, end int64
}

// overTimeFor returns the windows of a selector whose samples can be
// folded: a folded function over a range, steps that do not overlap, a
// context marked by PromPushdown.
func overTimeFor(ctx context.Context, hints *storage.SelectHints) (overTime, bool) {
	pd, _ := ctx.Value(pushdownKey{}).(*pushdown)
	if hints == nil || hints.Range <= 0 || hints.Step < 0 || pd == nil || pd.subq {
		return overTime{}, false
	}
	fn, ok := foldFuncs[hints.Func]
	if !ok || hints.Step > 0 && hints.Step < hints.Range {
		return overTime{}, false
	}
	// The engine reads [first step - range + 1, last step] (less the
	// offset): the first window ends range - 1 after the hinted start.
	return overTime{fn: fn, r0: hints.Start + hints.Range - 1, step: hints.Step, rng: hints.Range, end: hints.End}, true
}

// lastFor returns the evaluation times of an instant vector selector
// whose samples can be thinned to the last one before each: a selector
// without range (the engine takes, at each step, the newest sample within
// the lookback), no @ in the expression, a context marked by PromPushdown.
// The steps are end − span, end − span + step, ... (less the selector's
// offset, which hints.End already holds).
func lastFor(ctx context.Context, hints *storage.SelectHints) (lastPerStep, bool) {
	pd, _ := ctx.Value(pushdownKey{}).(*pushdown)
	if pd == nil || pd.at || pd.subq || hints == nil || hints.Range != 0 || hints.Func == "series" || pd.span < 0 || pd.step < 0 {
		return lastPerStep{}, false
	}
	if pd.span > 0 && pd.step == 0 {
		return lastPerStep{}, false
	}
	return lastPerStep{t0: hints.End - pd.span, step: pd.step, end: hints.End}, true
}

// lastPerStep is the evaluation times t0, t0+step, ... up to end (t0 alone
// when step is 0) of an instant vector selector.
type lastPerStep struct{ t0, step, end int64 }

// fold is one window's fold, as the engine's function computes it.
type fold struct {
	fn       int
	n        int
	t        int64   // the sample it answers with
	v        float64 // min, max, last
	sum, c   float64 // Kahan sum and compensation (avg, sum)
	mean     float64 // avg after an overflow
	incrMean bool
}

func (a *fold) add(t int64, f float64) {
	a.n++
	switch a.fn {
	case foldAvg: // funcAvgOverTime
		a.t = t
		if a.n == 1 {
			a.sum = f
			return
		}
		count := float64(a.n)
		if !a.incrMean {
			s, c := kahansum.Inc(f, a.sum, a.c)
			if !math.IsInf(s, 0) {
				a.sum, a.c = s, c
				return
			}
			a.incrMean = true
			a.mean = a.sum / (count - 1)
			a.c /= count - 1
		}
		q := (count - 1) / count
		a.mean, a.c = kahansum.Inc(f/count, q*a.mean, q*a.c)
	case foldSum: // funcSumOverTime
		a.t = t
		a.sum, a.c = kahansum.Inc(f, a.sum, a.c)
	case foldMax: // compareOverTime
		if a.n == 1 || f > a.v || math.IsNaN(a.v) {
			a.t, a.v = t, f
		}
	case foldMin:
		if a.n == 1 || f < a.v || math.IsNaN(a.v) {
			a.t, a.v = t, f
		}
	case foldLast:
		a.t, a.v = t, f
	}
}

// addSums is add for avg and sum over the points of b from j on up to r,
// kahansum.Inc written out in the loop (the same operations, in the same
// order: only additions and subtractions, which no compiler fuses). It
// returns the index of the first point it did not take: past r, or after
// the point whose sum overflowed an average (the caller goes on with add).
//
// It first sums the points as if none were a staleness marker and no sum
// overflowed: Inc's other cases all start from a sum or a point that is
// not finite (a marker is a NaN, an overflow ±Inf), and a sum that is not
// finite stays so (NaN and ±Inf absorb every finite addend, and ±Inf + ∓Inf
// is NaN). So when the last sum is finite, every sum was and no point was
// a marker, and the loop did exactly what Inc would have; otherwise the
// points are summed again one by one, with every case (sumsChecked).
func (a *fold) addSums(b *chunk.Block, j int, r int64) int {
	ts := b.T
	k := len(ts)
	if ts[k-1] > r {
		k = j
		for k < len(ts) && ts[k] <= r {
			k++
		}
	}
	if j >= k {
		return j
	}
	sum, c, i := a.sum, a.c, j
	if a.n == 0 && a.fn == foldAvg {
		sum, i = b.Float(j), j+1 // the first point is the sum
	}
	if fs, ok := b.Floats(); ok {
		sum, c = kahanFloats(fs[i:k], sum, c)
	} else {
		for ; i < k; i++ {
			f := b.Float(i)
			t := sum + f
			if math.Abs(sum) >= math.Abs(f) {
				c += (sum - t) + f
			} else {
				c += (f - t) + sum
			}
			sum = t
		}
	}
	if sum-sum != 0 { // NaN or ±Inf
		return a.sumsChecked(b, j, k)
	}
	a.sum, a.c, a.n, a.t = sum, c, a.n+k-j, ts[k-1]
	return k
}

// kahanFloats is kahansum.Inc over fs from sum and c, on the assumption
// addSums makes (no marker, no overflow). |sum| >= |f| is tested as
// sum >= |f| or -sum >= |f| with comparisons alone, which decide it as
// math.Abs does (±0 equal, false with a NaN) without moving the floats
// to integer registers and back: a third less time per point
// (BenchmarkFoldSums).
func kahanFloats(fs []float64, sum, c float64) (float64, float64) {
	for _, f := range fs {
		t := sum + f
		if sum >= f && sum >= -f || -sum >= f && -sum >= -f {
			c += (sum - t) + f
		} else {
			c += (f - t) + sum
		}
		sum = t
	}
	return sum, c
}

// sumsChecked is addSums over points j to k-1 of b one by one: staleness
// markers skipped, an overflowing sum handled as Inc and funcAvgOverTime
// handle it.
func (a *fold) sumsChecked(b *chunk.Block, j, k int) int {
	ts := b.T
	sum, c, n := a.sum, a.c, a.n
	avg := a.fn == foldAvg
	for ; j < k; j++ {
		f := b.Float(j)
		if value.IsStaleNaN(f) {
			continue
		}
		if n == 0 && avg {
			sum, n, a.t = f, 1, ts[j]
			continue
		}
		t := sum + f
		if t > math.MaxFloat64 || t < -math.MaxFloat64 {
			a.sum, a.c, a.n = sum, c, n
			a.add(ts[j], f)
			if a.incrMean {
				return j + 1
			}
			sum, c, n = a.sum, a.c, a.n
			continue
		}
		if math.Abs(sum) >= math.Abs(f) {
			c += (sum - t) + f
		} else {
			c += (f - t) + sum
		}
		sum = t
		n++
		a.t = ts[j]
	}
	a.sum, a.c, a.n = sum, c, n
	return j
}

func (a *fold) result() float64 {
	switch a.fn {
	case foldAvg:
		if a.incrMean {
			return a.mean + a.c
		}
		count := float64(a.n)
		return a.sum/count + a.c/count
	case foldSum:
		if math.IsInf(a.sum, 0) {
			return a.sum
		}
		return a.sum + a.c
	}
	return a.v
}

// rawPoints reads a series' points with one pending at a time, a decoded
// block of them where it can (points.run), a run of the head's points
// (points.headRun) where it can.
type rawPoints struct {
	p        points
	minFirst []int64

	blk    chunk.Block // the raw points being read, when inBlk
	bi     int
	inBlk  bool
	hp     []chunk.Point // the head's points being read, when inHead
	hi     int
	inHead bool
	one    bool // a raw point from points.next is pending
	eof    bool
}

// reset points r at s's points, keeping its buffers; false: s has none.
func (r *rawPoints) reset(s *promSeries) bool {
	*r = rawPoints{p: r.p, minFirst: r.minFirst}
	if s.cells == nil {
		return false
	}
	r.minFirst = r.p.reset(s.cells, s.start, s.end, r.minFirst)
	return true
}

// raw makes a raw point pending and reports whether there is one.
func (r *rawPoints) raw() bool {
	if r.inBlk || r.inHead || r.one {
		return true
	}
	if r.eof {
		return false
	}
	if b, ok := r.p.run(); ok {
		r.blk, r.bi, r.inBlk = b, 0, true
		return true
	}
	if h, ok := r.p.headRun(); ok {
		r.hp, r.hi, r.inHead = h, 0, true
		return true
	}
	if r.p.next() {
		r.one = true
		return true
	}
	r.eof = true
	return false
}

// rawT is the pending raw point's timestamp, rawF its value.
func (r *rawPoints) rawT() int64 {
	switch {
	case r.inBlk:
		return r.blk.T[r.bi]
	case r.inHead:
		return r.hp[r.hi].T
	}
	return r.p.t
}

func (r *rawPoints) rawF() float64 {
	switch {
	case r.inBlk:
		return r.blk.Float(r.bi)
	case r.inHead:
		return r.hp[r.hi].V.Float()
	}
	return r.p.v.Float()
}

// skip drops the pending raw point.
func (r *rawPoints) skip() {
	switch {
	case r.inBlk:
		if r.bi++; r.bi == len(r.blk.T) {
			r.inBlk = false
		}
	case r.inHead:
		if r.hi++; r.hi == len(r.hp) {
			r.inHead = false
		}
	default:
		r.one = false
	}
}

// pushed is what the iterators of a pushed-down selector (foldIterator,
// thinIterator) share: the raw points they read, the sample they are at,
// and the chunkenc.Iterator methods that only report it. Each has its own
// Next, and a Seek that steps through it.
type pushed struct {
	rawPoints
	s     *promSeries
	t     int64
	f     float64
	state int
	err   error
}

// reset returns the state of an iterator over s's points, at its start,
// keeping p's buffers.
func (p *pushed) reset(s *promSeries) pushed {
	n := pushed{rawPoints: p.rawPoints, s: s}
	if !n.rawPoints.reset(s) {
		n.state = iterDone
	}
	return n
}

// done ends the iteration, with the scan's error if it had one.
func (p *pushed) done() chunkenc.ValueType {
	p.state = iterDone
	if err := p.p.err; err != nil {
		p.err = promql.ErrStorage{Err: corruptSeries(p.s.entry, err)}
	}
	return chunkenc.ValNone
}

// seek calls next until the sample it is at is at or after t.
func (p *pushed) seek(t int64, next func() chunkenc.ValueType) chunkenc.ValueType {
	switch p.state {
	case iterDone:
		return chunkenc.ValNone
	case iterAt:
		if p.t >= t {
			return chunkenc.ValFloat
		}
	}
	for next() != chunkenc.ValNone {
		if p.t >= t {
			return chunkenc.ValFloat
		}
	}
	return chunkenc.ValNone
}

func (p *pushed) At() (int64, float64) { return p.t, p.f }
func (p *pushed) AtT() int64           { return p.t }
func (p *pushed) AtST() int64          { return 0 }
func (p *pushed) Err() error           { return p.err }

func (p *pushed) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return p.t, nil
}

func (p *pushed) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return p.t, nil
}

// foldIterator is a chunkenc.Iterator over one promSeries whose samples
// are folded by window: one sample per window with samples. Generic for
// the reason promIterator is.
type foldIterator[T ~int64] struct {
	pushed
	ot overTime
	r  int64 // the current window's end
}

func (it *foldIterator[T]) reset(s *promSeries, ot *overTime) {
	*it = foldIterator[T]{pushed: it.pushed.reset(s), ot: *ot, r: ot.r0}
}

// window folds the pending raw points up to the window's end r into a.
func (it *foldIterator[T]) window(a *fold, r int64) {
	for it.raw() {
		if it.inHead {
			hp := it.hp
			j := it.hi
			for ; j < len(hp) && hp[j].T <= r; j++ {
				if f := hp[j].V.Float(); !value.IsStaleNaN(f) {
					a.add(hp[j].T, f)
				}
			}
			if j < len(hp) {
				it.hi = j
				return
			}
			it.inHead = false
			continue
		}
		if !it.inBlk {
			if it.p.t > r {
				return
			}
			if f := it.p.v.Float(); !value.IsStaleNaN(f) {
				a.add(it.p.t, f)
			}
			it.one = false
			continue
		}
		ts := it.blk.T
		j := it.bi
		if a.fn == foldSum || a.fn == foldAvg && !a.incrMean {
			j = a.addSums(&it.blk, j, r)
		}
		for ; j < len(ts) && ts[j] <= r; j++ {
			if f := it.blk.Float(j); !value.IsStaleNaN(f) {
				a.add(ts[j], f)
			}
		}
		if j < len(ts) {
			it.bi = j
			return
		}
		it.inBlk = false
	}
}

func (it *foldIterator[T]) Next() chunkenc.ValueType {
	if it.state == iterDone {
		return chunkenc.ValNone
	}
	ot := &it.ot
	for it.raw() {
		t := it.rawT()
		if t > it.r {
			// On to the window that holds t, if there is one.
			if ot.step == 0 {
				break
			}
			it.r += (t - it.r + ot.step - 1) / ot.step * ot.step
			if it.r > ot.end {
				break
			}
		}
		if t <= it.r-ot.rng {
			it.skip() // between two windows
			continue
		}
		a := fold{fn: ot.fn}
		it.window(&a, it.r)
		if a.n > 0 {
			it.t, it.f, it.state = a.t, a.result(), iterAt
			return chunkenc.ValFloat
		}
	}
	return it.done()
}

func (it *foldIterator[T]) Seek(t T) chunkenc.ValueType { return it.seek(int64(t), it.Next) }

var _ chunkenc.Iterator = (*foldIterator[int64])(nil)

// foldSeries folds the windows ot of every series of ss ahead, on up to
// procs.Workers() goroutines (eachSeries, promql_window.go), into the
// series' computed samples (s.pre, read by preIterator): the engine then
// reads one sample per window, as it would from a foldIterator, and a
// long query's decoding and folding use every core that is free. The
// folded samples are few (one per window with samples, at most one per
// step). A series with histograms is left to its own iterator.
func foldSeries(ctx context.Context, ot overTime, ss []*promSeries) error {
	nWin := 1
	if ot.step > 0 && ot.end >= ot.r0 {
		nWin = int(min((ot.end-ot.r0)/ot.step+1, 1<<12))
	}
	return eachSeries(ctx, ss, func(w *foldWorker, s *promSeries) error {
		if s.cells != nil && s.cells.hasHist() {
			return nil
		}
		it := &w.it
		it.reset(s, &ot)
		if cap(w.buf)-len(w.buf) < nWin {
			w.buf = make([]windowPoint, 0, max(nWin, min(nWin*len(ss), 1024)))
		}
		first := len(w.buf)
		for it.Next() == chunkenc.ValFloat {
			w.buf = append(w.buf, windowPoint{t: it.t, f: it.f})
		}
		if it.err != nil {
			return it.err
		}
		s.pre, s.computed = w.buf[first:len(w.buf):len(w.buf)], true
		return nil
	})
}

// foldWorker folds series one after the other with one iterator, into
// slabs of windowPoints that the series' samples share.
type foldWorker struct {
	it  foldIterator[int64]
	buf []windowPoint
}

// thinIterator is a chunkenc.Iterator over one promSeries read by an
// instant vector selector: of the samples after one evaluation time and up
// to the next, only the last, which is the one the engine takes at the
// next (the newest at or before it; a staleness marker is kept like any
// sample). Samples after the last evaluation time are all kept.
type thinIterator[T ~int64] struct {
	pushed
	ls lastPerStep
}

func (it *thinIterator[T]) reset(s *promSeries) {
	*it = thinIterator[T]{pushed: it.pushed.reset(s), ls: *s.ls}
}

// stepOf returns the first evaluation time at or after t, and false past
// the last.
func (ls *lastPerStep) stepOf(t int64) (int64, bool) {
	if t <= ls.t0 {
		return ls.t0, true
	}
	if ls.step == 0 {
		return 0, false
	}
	r := ls.t0 + (t-ls.t0+ls.step-1)/ls.step*ls.step
	return r, r <= ls.end
}

func (it *thinIterator[T]) Next() chunkenc.ValueType {
	if it.state == iterDone || !it.raw() {
		return it.done()
	}
	r, ok := it.ls.stepOf(it.rawT())
	if !ok {
		r = it.rawT() // past the last step: as it is
	}
	for it.raw() && it.rawT() <= r {
		switch {
		case it.inBlk:
			// The block's last point up to r, without reading the others.
			ts := it.blk.T
			j := it.bi
			for j+1 < len(ts) && ts[j+1] <= r {
				j++
			}
			it.bi = j
		case it.inHead:
			hp := it.hp
			j := it.hi
			for j+1 < len(hp) && hp[j+1].T <= r {
				j++
			}
			it.hi = j
		}
		it.t, it.f = it.rawT(), it.rawF()
		it.skip()
	}
	it.state = iterAt
	return chunkenc.ValFloat
}

func (it *thinIterator[T]) Seek(t T) chunkenc.ValueType { return it.seek(int64(t), it.Next) }

var _ chunkenc.Iterator = (*thinIterator[int64])(nil)
