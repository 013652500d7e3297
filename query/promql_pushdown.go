package query

import (
	"context"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
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
// operation for operation).
//
// Select sees only hints, not the expression, so the caller vouches for
// the expression with PromPushdown: a subquery evaluates its selectors at
// its own steps, and anchored or smoothed selectors read other windows,
// so an expression with either is never folded.

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
	safe := true
	parser.Inspect(es.Expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.SubqueryExpr:
			safe = false
		case *parser.VectorSelector:
			if n.Anchored || n.Smoothed {
				safe = false
			}
		}
		return nil
	})
	if !safe {
		return ctx
	}
	return context.WithValue(ctx, pushdownKey{}, true)
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
	if hints == nil || hints.Range <= 0 || hints.Step < 0 || ctx.Value(pushdownKey{}) == nil {
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
func (a *fold) addSums(b *chunk.Block, j int, r int64) int {
	ts := b.T
	sum, c, n := a.sum, a.c, a.n
	avg := a.fn == foldAvg
	for ; j < len(ts) && ts[j] <= r; j++ {
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

// foldIterator is a chunkenc.Iterator over one promSeries whose samples
// are folded by window: one sample per window with samples. Generic for
// the reason promIterator is.
type foldIterator[T ~int64] struct {
	s        *promSeries
	p        points
	minFirst []int64
	ot       overTime
	r        int64 // the current window's end

	blk   chunk.Block // the raw points being read, when inBlk
	bi    int
	inBlk bool
	one   bool // a raw point from points.next is pending
	eof   bool

	t     int64
	f     float64
	state int
	err   error
}

func (it *foldIterator[T]) reset(s *promSeries) {
	*it = foldIterator[T]{s: s, p: it.p, minFirst: it.minFirst, ot: *s.ot, r: s.ot.r0}
	if s.cells == nil {
		it.state = iterDone
		return
	}
	it.minFirst = it.p.reset(s.cells, s.start, s.end, it.minFirst)
}

// raw makes a raw point pending and reports whether there is one.
func (it *foldIterator[T]) raw() bool {
	if it.inBlk || it.one {
		return true
	}
	if it.eof {
		return false
	}
	if b, ok := it.p.run(); ok {
		it.blk, it.bi, it.inBlk = b, 0, true
		return true
	}
	if it.p.next() {
		it.one = true
		return true
	}
	it.eof = true
	return false
}

// rawT is the pending raw point's timestamp.
func (it *foldIterator[T]) rawT() int64 {
	if it.inBlk {
		return it.blk.T[it.bi]
	}
	return it.p.t
}

// skip drops the pending raw point.
func (it *foldIterator[T]) skip() {
	if it.inBlk {
		if it.bi++; it.bi == len(it.blk.T) {
			it.inBlk = false
		}
		return
	}
	it.one = false
}

// window folds the pending raw points up to the window's end r into a.
func (it *foldIterator[T]) window(a *fold, r int64) {
	for it.raw() {
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
	it.state = iterDone
	if err := it.p.err; err != nil {
		it.err = promql.ErrStorage{Err: corruptSeries(it.s.entry, err)}
	}
	return chunkenc.ValNone
}

func (it *foldIterator[T]) Seek(t T) chunkenc.ValueType {
	switch it.state {
	case iterDone:
		return chunkenc.ValNone
	case iterAt:
		if it.t >= int64(t) {
			return chunkenc.ValFloat
		}
	}
	for it.Next() != chunkenc.ValNone {
		if it.t >= int64(t) {
			return chunkenc.ValFloat
		}
	}
	return chunkenc.ValNone
}

func (it *foldIterator[T]) At() (int64, float64) { return it.t, it.f }
func (it *foldIterator[T]) AtT() int64           { return it.t }
func (it *foldIterator[T]) AtST() int64          { return 0 }
func (it *foldIterator[T]) Err() error           { return it.err }

func (it *foldIterator[T]) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return it.t, nil
}

func (it *foldIterator[T]) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.t, nil
}

var _ chunkenc.Iterator = (*foldIterator[int64])(nil)
