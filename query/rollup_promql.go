package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/series"
)

// PromQL over rollups (max_source_resolution, as Thanos' query API). The
// Prometheus engine evaluates functions over the samples the querier
// returns, so for a selector inside a function that a bucket answers, the
// querier returns one or two synthetic samples per bucket that make the
// engine's function come out as over the raw samples, up to the window
// edges (docs/rollups.md has the measured differences):
//
//	max_over_time, min_over_time   Max, Min at LastT
//	sum_over_time, last_over_time  Sum, Last at LastT
//	count_over_time(x[r])          rewritten to sum_over_time of Count at LastT
//	avg_over_time(x[r])            rewritten to sum_over_time(Sum) / sum_over_time(Count)
//	resets(x[r]), changes(x[r])    rewritten to sum_over_time of Resets (Changes) at
//	                               LastT, plus one where the bucket's first point drops
//	                               from (differs from) the previous bucket's last
//	rate, increase                 (FirstT, First) and (LastT, Last), counter-corrected
//	                               across the query so no reset is left for the engine
//	delta                          (FirstT, First) and (LastT, Last)
//
// A sample at LastT falls in the window (t−r, t] when its bucket's last
// point does: a window's answer takes whole buckets. It differs from the
// raw answer only where the window's edges cut a bucket: the bucket at the
// left edge counts whole (its points at or before t−r too), the one at the
// right edge not at all unless its last point is at or before t. With t and
// r multiples of the resolution that is only points exactly on the edges.
// Rollups are read only for ranges and steps at least the resolution.
// The hours the head still holds come from raw samples, as for OpenTSDB.

type maxResKey struct{}

// WithMaxSourceResolution returns ctx asking PromQL selectors to read
// rollups of an interval up to ms (0: raw samples only). Call it once per
// query: the selectors of one rewritten avg_over_time share one read of
// the buckets through it.
func WithMaxSourceResolution(ctx context.Context, ms int64) context.Context {
	ctx = context.WithValue(ctx, maxResKey{}, ms)
	return context.WithValue(ctx, avgShareKey{}, &avgShare{kept: map[string][]*rollupPromSeries{}})
}

type avgShareKey struct{}

// avgShare passes the samples of one selector of a rewritten
// avg_over_time (sum_over_time of the sums over sum_over_time of the
// counts) to the other: the first to be selected reads the buckets once
// for both, the second takes its samples from here.
type avgShare struct {
	mu   sync.Mutex
	kept map[string][]*rollupPromSeries // by kind and selector (avgShareKeyOf)
}

func avgShareKeyOf(kind string, iv, start, end int64, ms []*labels.Matcher) string {
	return fmt.Sprintf("%s %d %d %d %v", kind, iv, start, end, ms)
}

// take returns and forgets the samples kept for key.
func (a *avgShare) take(key string) ([]*rollupPromSeries, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out, ok := a.kept[key]
	delete(a.kept, key)
	return out, ok
}

func (a *avgShare) put(key string, ss []*rollupPromSeries) {
	a.mu.Lock()
	a.kept[key] = ss
	a.mu.Unlock()
}

func maxSourceResolution(ctx context.Context) int64 {
	ms, _ := ctx.Value(maxResKey{}).(int64)
	return ms
}

// ParseMaxSourceResolution parses the max_source_resolution parameter as
// Thanos does: "" and "0s" raw, a duration (Prometheus' form or float
// seconds), or "auto": a fifth of the step of a range query (step 0, an
// instant query: raw). A negative value is an error.
func ParseMaxSourceResolution(s string, step time.Duration) (int64, error) {
	switch s {
	case "":
		return 0, nil
	case "auto":
		return (step / 5).Milliseconds(), nil
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("cannot parse %s to a valid duration", quoteShort(s))
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		pd, err := model.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("cannot parse %s to a valid duration", quoteShort(s))
		}
		d = time.Duration(pd)
	}
	if d < 0 {
		return 0, errors.New("negative 'max_source_resolution' is not accepted. Try a positive integer")
	}
	return d.Milliseconds(), nil
}

// quoteShort quotes s, cut to its first 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// rollupResolution returns the largest rollup interval at most res that a
// selector with the range and step (0 for an instant query) may read: not
// longer than either.
func (e *Engine) rollupResolution(res, rng, step int64) int64 {
	if e.ru.reader == nil || res <= 0 {
		return 0
	}
	best := int64(0)
	for _, iv := range e.ru.reader.Intervals() {
		if iv <= res && iv <= rng && (step == 0 || iv <= step) {
			best = max(best, iv)
		}
	}
	return best
}

// rollupMarker is the label matcher RewriteForRollups adds to a selector
// whose samples must be a bucket field: its value names the field.
const rollupMarker = "__hourglass_rollup__"

// RewriteForRollups rewrites the count_over_time, avg_over_time, resets
// and changes of a matrix selector that will read rollups (its range and
// the step at least a rollup interval up to res): count_over_time, resets
// and changes into a sum_over_time of the buckets' counts, resets and
// changes, avg_over_time into a sum of sums over a sum of counts. Other queries come back unchanged. step is 0 for an instant
// query.
func (e *Engine) RewriteForRollups(expr parser.Expr, res, step int64) parser.Expr {
	if e.rollupResolution(res, math.MaxInt64, step) == 0 {
		return expr
	}
	return e.rewrite(expr, res, step)
}

func (e *Engine) rewrite(expr parser.Expr, res, step int64) parser.Expr {
	switch n := expr.(type) {
	case *parser.AggregateExpr:
		n.Expr = e.rewrite(n.Expr, res, step)
		if n.Param != nil {
			n.Param = e.rewrite(n.Param, res, step)
		}
	case *parser.BinaryExpr:
		n.LHS, n.RHS = e.rewrite(n.LHS, res, step), e.rewrite(n.RHS, res, step)
	case *parser.ParenExpr:
		n.Expr = e.rewrite(n.Expr, res, step)
	case *parser.UnaryExpr:
		n.Expr = e.rewrite(n.Expr, res, step)
	case *parser.SubqueryExpr:
		// The inner query runs at the subquery's step.
		n.Expr = e.rewrite(n.Expr, res, n.Step.Milliseconds())
	case *parser.StepInvariantExpr:
		n.Expr = e.rewrite(n.Expr, res, step)
	case *parser.Call:
		for i := range n.Args {
			n.Args[i] = e.rewrite(n.Args[i], res, step)
		}
		return e.rewriteCall(n, res, step)
	}
	return expr
}

func (e *Engine) rewriteCall(c *parser.Call, res, step int64) parser.Expr {
	if c.Func == nil || len(c.Args) != 1 {
		return c
	}
	switch c.Func.Name {
	case "count_over_time", "avg_over_time", "resets", "changes":
	default:
		return c
	}
	ms, ok := c.Args[0].(*parser.MatrixSelector)
	if !ok || e.rollupResolution(res, ms.Range.Milliseconds(), step) == 0 {
		return c
	}
	sumOf := func(field string) *parser.Call {
		cp, err := parser.NewParser(parser.Options{}).ParseExpr(ms.String())
		if err != nil {
			panic(err) // a printed selector always parses
		}
		m := cp.(*parser.MatrixSelector)
		vs := m.VectorSelector.(*parser.VectorSelector)
		vs.LabelMatchers = append(vs.LabelMatchers, labels.MustNewMatcher(labels.MatchEqual, rollupMarker, field))
		return &parser.Call{Func: parser.Functions["sum_over_time"], Args: parser.Expressions{m}, PosRange: c.PosRange}
	}
	switch c.Func.Name {
	case "count_over_time":
		return sumOf("count")
	case "resets", "changes":
		return sumOf(c.Func.Name)
	}
	// The two halves of an average share one read of the buckets (avgShare).
	return &parser.ParenExpr{Expr: &parser.BinaryExpr{Op: parser.DIV, LHS: sumOf(avgSum), RHS: sumOf(avgCount),
		VectorMatching: &parser.VectorMatching{Card: parser.CardOneToOne}, ReturnBool: false}, PosRange: c.PosRange}
}

// The markers of the two halves of a rewritten avg_over_time.
const (
	avgSum   = "avg_sum"
	avgCount = "avg_count"
)

// promRollupKind is what synthetic samples a selector's buckets become.
func promRollupKind(fn, marker string) string {
	switch marker {
	case avgSum:
		return "sum"
	case avgCount:
		return "count"
	case "":
	default:
		return marker // "count", "resets" or "changes": the field, for sum_over_time
	}
	switch fn {
	case "max_over_time":
		return "max"
	case "min_over_time":
		return "min"
	case "sum_over_time":
		return "sum"
	case "last_over_time":
		return "last"
	case "rate", "increase":
		return "counter"
	case "delta":
		return "gauge"
	}
	return ""
}

// selectRollups answers Select from rollups when the query asked for them
// (WithMaxSourceResolution) and the selector is a function's argument that
// buckets answer; ok is false to read raw samples.
func (q *promQuerier) selectRollups(ctx context.Context, hints *storage.SelectHints, ms []*labels.Matcher) (_ storage.SeriesSet, ok bool) {
	marker := ""
	for i, m := range ms {
		if m.Name == rollupMarker {
			marker = m.Value
			ms = append(ms[:i:i], ms[i+1:]...)
			break
		}
	}
	if hints == nil || (marker == "" && (maxSourceResolution(ctx) <= 0 || q.e.ru.reader == nil)) {
		return nil, false
	}
	kind := promRollupKind(hints.Func, marker)
	if kind == "" {
		return nil, false
	}
	iv := q.e.rollupResolution(maxSourceResolution(ctx), hints.Range, hints.Step)
	if iv == 0 && marker == "" {
		return nil, false
	}
	start, end := clampRange(max(hints.Start, q.mint), min(hints.End, q.maxt))
	// The other half of an average: kinds[1], read with this one.
	kinds := []string{kind}
	share, _ := ctx.Value(avgShareKey{}).(*avgShare)
	var otherKey string
	if share != nil && (marker == avgSum || marker == avgCount) {
		other := map[string]string{avgSum: "count", avgCount: "sum"}[marker]
		if out, ok := share.take(avgShareKeyOf(kind, iv, start, end, ms)); ok {
			if err := q.countSamples(out); err != nil {
				return storage.ErrSeriesSet(err), true
			}
			return q.rollupSet(out, iv, hints), true
		}
		kinds, otherKey = append(kinds, other), avgShareKeyOf(other, iv, start, end, ms)
	}
	entries, err := q.selectEntries(ctx, ms, start, end)
	if err != nil {
		return storage.ErrSeriesSet(err), true
	}
	if err := q.checkSteps(hints, len(entries)); err != nil {
		return storage.ErrSeriesSet(err), true
	}
	outs, err := q.rollupSamples(ctx, entries, kinds, iv, start, end)
	if err != nil {
		return storage.ErrSeriesSet(err), true
	}
	if err := q.countSamples(outs[0]); err != nil {
		return storage.ErrSeriesSet(err), true
	}
	if len(outs) > 1 {
		share.put(otherKey, outs[1])
	}
	return q.rollupSet(outs[0], iv, hints), true
}

// rollupSet is the series set of the samples out, read from rollups of
// iv (0: raw).
func (q *promQuerier) rollupSet(out []*rollupPromSeries, iv int64, hints *storage.SelectHints) storage.SeriesSet {
	set := &rollupSeriesSet{series: out, i: -1}
	if iv > 0 {
		q.e.countRollupRead(iv)
		set.warn = fmt.Errorf("%w: %s read from %s rollups (max_source_resolution)", annotations.PromQLInfo, hints.Func, FormatInterval(iv))
	}
	return set
}

// countSamples counts the samples of ss against the query's budget.
func (q *promQuerier) countSamples(ss []*rollupPromSeries) error {
	n := 0
	for _, s := range ss {
		n += len(s.pts)
	}
	return q.addSamples(n)
}

// rollupSamples returns, for each of kinds, the synthetic samples of that
// kind of entries in [start, end]: from buckets of iv up to the first
// hour the head holds for each series, raw samples after (iv 0: raw
// samples only, as the kind wants them); the series with samples only,
// sorted by labels. The buckets and raw samples are read once for all
// kinds. The caller counts the samples against the budget.
func (q *promQuerier) rollupSamples(ctx context.Context, entries []*series.Entry, kinds []string, iv, start, end int64) ([][]*rollupPromSeries, error) {
	outs := make([][]*rollupPromSeries, len(kinds))
	us := make([]int64, len(entries))
	from := start
	if iv > 0 {
		from = floorTo(start, iv)
	}
	tailFrom := end + 1
	for i, en := range entries {
		u := end + 1
		if h, ok := q.e.firstHeadHour(en.Labels, start, end); ok {
			u = h
		}
		if iv > 0 {
			u = max(from, floorTo(rowkey.HourOf(u), iv))
		} else {
			u = start
		}
		us[i] = u
		tailFrom = min(tailFrom, u)
	}
	// The sums and counts are at LastT: the rest of a bucket need not be
	// decoded (rollup.FieldsSumTimes).
	fields := rollup.FieldsSumTimes
	for k, kind := range kinds {
		outs[k] = make([]*rollupPromSeries, len(entries))
		lbls := labels.EmptyLabels()
		perBucket := int64(1)
		if kind == "counter" || kind == "gauge" {
			perBucket = 2
		}
		if kind != "sum" && kind != "count" {
			fields = rollup.FieldsAll
		}
		for i, en := range entries {
			if k == 0 {
				lbls = promLabels(en.Labels)
			} else {
				lbls = outs[0][i].lbls
			}
			s := &rollupPromSeries{lbls: lbls, kind: kind}
			if iv > 0 {
				s.pts = make([]chunk.Point, 0, min(max(us[i]-from, 0)/iv*perBucket+1, 1<<16))
			}
			outs[k][i] = s
		}
	}
	if iv > 0 {
		// Buckets become samples as they are read (a series' buckets come
		// in order, never two of one series at once).
		err := q.e.ru.reader.ReadBuckets(ctx, entries, iv, from, end+1, fields, func(i int, b *rollup.Bucket) error {
			if b.Start < us[i] {
				for k := range outs {
					outs[k][i].addBucket(b)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if tailFrom <= end {
		raw, err := q.e.read(ctx, entries, tailFrom, end, q.e.rawLimit())
		if err != nil {
			return nil, err
		}
		byTSUID := make(map[string]int, len(entries))
		for i, en := range entries {
			byTSUID[string(en.TSUID)] = i
		}
		for _, s := range raw {
			i := byTSUID[string(s.TSUID)]
			for _, p := range s.Points {
				if p.T >= us[i] {
					for k := range outs {
						outs[k][i].addRaw(p)
					}
				}
			}
		}
	}
	for k, out := range outs {
		kept := out[:0]
		for _, s := range out {
			if len(s.pts) > 0 {
				kept = append(kept, s)
			}
		}
		sort.Slice(kept, func(i, j int) bool { return labels.Compare(kept[i].lbls, kept[j].lbls) < 0 })
		outs[k] = kept
	}
	return outs, nil
}

// rollupPromSeries is one series of synthetic samples.
type rollupPromSeries struct {
	lbls labels.Labels
	kind string
	pts  []chunk.Point // values as float64 bits

	// counter: the correction so far and the last raw value.
	corr    float64
	prev    float64
	hasPrev bool
}

func (s *rollupPromSeries) add(t int64, v float64) {
	if n := len(s.pts); n > 0 && s.pts[n-1].T >= t {
		return // never out of order (a point on a bucket edge)
	}
	s.pts = append(s.pts, chunk.Point{T: t, V: chunk.Float(v)})
}

// addBucket adds the samples of the next bucket b, in time order.
func (s *rollupPromSeries) addBucket(b *rollup.Bucket) {
	{
		if b.N() == 0 {
			if s.kind == "count" && b.Count > 0 {
				s.add(b.Start, float64(b.Count)) // NaNs only: no LastT
			}
			return
		}
		switch s.kind {
		case "max":
			s.add(b.LastT, b.Max.Float())
		case "min":
			s.add(b.LastT, b.Min.Float())
		case "sum":
			s.add(b.LastT, b.Sum.Float())
		case "last":
			s.add(b.LastT, b.Last.Float())
		case "count":
			s.add(b.LastT, float64(b.Count))
		case "resets", "changes":
			// The bucket's own, and the one between its first point and
			// the previous bucket's last.
			n := b.Resets
			if s.kind == "changes" {
				n = b.Changes
			}
			if f := b.First.Float(); s.hasPrev && (f < s.prev || s.kind == "changes" && f != s.prev) {
				n++
			}
			s.prev, s.hasPrev = b.Last.Float(), true
			s.add(b.LastT, float64(n))
		case "gauge":
			s.add(firstAt(b), b.First.Float())
			if b.N() > 1 {
				s.add(b.LastT, b.Last.Float())
			}
		case "counter":
			first := b.First.Float()
			if s.hasPrev && first < s.prev {
				s.corr += s.prev
			}
			s.add(firstAt(b), first+s.corr)
			if b.N() > 1 {
				s.corr += b.Correction
				s.add(b.LastT, b.Last.Float()+s.corr)
			}
			s.prev, s.hasPrev = b.Last.Float(), true
		}
	}
}

// firstAt is the timestamp of a bucket's first sample: FirstT, or one
// millisecond later when the point lies on the bucket's start, so that a
// window (t−r, t] with t−r on that edge holds it, as it holds the bucket's
// other samples: the window then reads as [t−r, t), the same span of
// points as the raw one shifted by one.
func firstAt(b *rollup.Bucket) int64 {
	if b.FirstT == b.Start && b.LastT > b.FirstT+1 {
		return b.FirstT + 1
	}
	return b.FirstT
}

// addRaw adds one raw sample after the buckets.
func (s *rollupPromSeries) addRaw(p chunk.Point) {
	f := p.V.Float()
	if rollup.IsStale(p.V) {
		s.pts = append(s.pts, chunk.Point{T: p.T, V: chunk.Float(math.Float64frombits(value.StaleNaN))})
		return
	}
	switch s.kind {
	case "count":
		f = 1
	case "resets", "changes":
		if f != f {
			return // buckets keep no NaN either
		}
		n := 0.0
		if s.hasPrev && (f < s.prev || s.kind == "changes" && f != s.prev) {
			n = 1
		}
		s.prev, s.hasPrev = f, true
		f = n
	case "counter":
		if f == f {
			if s.hasPrev && f < s.prev {
				s.corr += s.prev
			}
			s.prev, s.hasPrev = f, true
			f += s.corr
		}
	}
	s.add(p.T, f)
}

func (s *rollupPromSeries) Labels() labels.Labels { return s.lbls }

func (s *rollupPromSeries) Iterator(chunkenc.Iterator) chunkenc.Iterator {
	return &sliceIterator[int64]{pts: s.pts, i: -1}
}

type rollupSeriesSet struct {
	series []*rollupPromSeries
	i      int
	warn   error
}

func (s *rollupSeriesSet) Next() bool         { s.i++; return s.i < len(s.series) }
func (s *rollupSeriesSet) At() storage.Series { return s.series[s.i] }
func (s *rollupSeriesSet) Err() error         { return nil }
func (s *rollupSeriesSet) Warnings() annotations.Annotations {
	if s.warn == nil {
		return nil
	}
	var a annotations.Annotations
	return a.Add(s.warn)
}

// sliceIterator is a chunkenc.Iterator over float samples in memory,
// generic for go vet's sake as promIterator is.
type sliceIterator[T ~int64] struct {
	pts []chunk.Point
	i   int
}

func (it *sliceIterator[T]) Next() chunkenc.ValueType {
	if it.i+1 >= len(it.pts) {
		it.i = len(it.pts)
		return chunkenc.ValNone
	}
	it.i++
	return chunkenc.ValFloat
}

func (it *sliceIterator[T]) Seek(t T) chunkenc.ValueType {
	if it.i < 0 {
		it.i = 0
	}
	for ; it.i < len(it.pts); it.i++ {
		if it.pts[it.i].T >= int64(t) {
			return chunkenc.ValFloat
		}
	}
	return chunkenc.ValNone
}

func (it *sliceIterator[T]) At() (int64, float64) { return it.pts[it.i].T, it.pts[it.i].V.Float() }
func (it *sliceIterator[T]) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return it.pts[it.i].T, nil
}
func (it *sliceIterator[T]) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.pts[it.i].T, nil
}
func (it *sliceIterator[T]) AtT() int64  { return it.pts[it.i].T }
func (it *sliceIterator[T]) AtST() int64 { return 0 }
func (it *sliceIterator[T]) Err() error  { return nil }
