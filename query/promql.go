package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"hourglass/chunk"
	"hourglass/series"
)

// The Prometheus dialect reads through a storage.Queryable over the same
// index and scans as OpenTSDB queries: a series is Prometheus' label set
// {__name__=<metric>, <tag>=<value>...}. A selector's __name__ matchers pick
// metrics (an equality one metric, a regex set its members, anything else
// every metric, filtered); its other matchers become series.Matchers that
// the index answers, literal ones from its postings; the time range becomes
// the engine's per-salt-bucket scans, merged with the head. Nothing is
// copied into a second store.

// PromLimits bound what one PromQL query (or one remote-read request)
// may load from storage, over all its selectors. Zero means the engine's
// Limits.MaxSeries and Limits.MaxPoints.
type PromLimits struct {
	MaxSeries  int
	MaxSamples int
	// MaxOutputPoints bounds steps × series of each selector of a range
	// query, checked once the series are known and before their samples
	// are read. Zero means the engine's Limits.MaxOutputPoints.
	MaxOutputPoints int
	// LookbackDelta is the PromQL engine's (default 5 minutes): a
	// selector's hinted range starts that much before the first step.
	LookbackDelta time.Duration
}

// MaxPromTimestamp is the latest timestamp the store can hold (ms): row keys
// hold the hour in 32-bit seconds. Earlier than 0 cannot be stored either.
const MaxPromTimestamp = int64(math.MaxUint32)*1000 + 999

// Queryable returns a storage.Queryable over e, for the PromQL engine and
// remote read. It is safe for concurrent use; each Querier counts the
// series and samples of one query against l.
func (e *Engine) Queryable(l PromLimits) storage.Queryable {
	if l.MaxSeries <= 0 {
		l.MaxSeries = e.limits.MaxSeries
	}
	if l.MaxSamples <= 0 {
		l.MaxSamples = e.limits.MaxPoints
	}
	if l.MaxOutputPoints <= 0 {
		l.MaxOutputPoints = e.limits.MaxOutputPoints
	}
	if l.LookbackDelta <= 0 {
		l.LookbackDelta = 5 * time.Minute
	}
	return &promQueryable{e: e, lim: l}
}

type promQueryable struct {
	e   *Engine
	lim PromLimits
}

func (q *promQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	return &promQuerier{e: q.e, lim: q.lim, mint: mint, maxt: maxt}, nil
}

// promQuerier answers the selectors of one query. Its Select may be called
// concurrently.
type promQuerier struct {
	e          *Engine
	lim        PromLimits
	mint, maxt int64

	mu      sync.Mutex
	series  int // selected so far
	samples int // loaded so far

	// The cells of every Select, released by Close: the engine and
	// remote read are done with the series then.
	arenas keptArenas
}

func clampRange(start, end int64) (int64, int64) {
	return max(start, 0), min(end, MaxPromTimestamp)
}

// Select returns the series the matchers select, with their samples in the
// hinted range (the querier's range without hints). Series are always
// sorted by their labels.
func (q *promQuerier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if ss, ok := q.selectRollups(ctx, hints, ms); ok { // rollup_promql.go
		return ss
	}
	start, end := q.mint, q.maxt
	if hints != nil {
		start, end = max(hints.Start, q.mint), min(hints.End, q.maxt)
	}
	start, end = clampRange(start, end)
	entries, err := q.selectEntries(ctx, ms, start, end)
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	// The series in one allocation, their labels built by one builder.
	out := make([]*promSeries, len(entries))
	all := make([]promSeries, len(entries))
	var lb labels.ScratchBuilder
	for i, en := range entries {
		all[i] = promSeries{lbls: appendPromLabels(&lb, en.Labels), entry: en}
		out[i] = &all[i]
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].lbls, out[j].lbls) < 0 })
	if hints != nil && hints.Limit > 0 && len(out) > hints.Limit {
		out = out[:hints.Limit]
	}
	if hints != nil && hints.Func == "series" {
		// Labels only (/api/v1/series): no samples are read.
		return &promSeriesSet{series: out, i: -1}
	}
	if err := q.checkSteps(hints, len(out)); err != nil {
		return storage.ErrSeriesSet(err)
	}
	rc, pd := windowCallFor(ctx, hints, ms) // promql_window.go
	ot, fold := overTimeFor(ctx, hints)
	ls, thin := lastFor(ctx, hints)
	// Series read by a thinIterator (below) may have their head points
	// thinned as it thins them, which it then takes the same from.
	var th *series.Thin
	if thin && rc == nil && !fold {
		th = &series.Thin{T0: ls.t0, Step: ls.step, End: ls.end}
	}
	if err := q.load(ctx, out, start, end, th); err != nil {
		return storage.ErrSeriesSet(err)
	}
	if rc != nil {
		if set, ok := q.selectWindow(ctx, rc, pd, hints, out); ok {
			return set
		}
	}
	if fold {
		if err := foldSeries(ctx, ot, out); err != nil { // promql_pushdown.go
			return storage.ErrSeriesSet(err)
		}
	} else if thin {
		for _, s := range out {
			s.ls = &ls
		}
	}
	return &promSeriesSet{series: out, i: -1}
}

// load reads the samples of ss in [start, end], within the sample budget,
// their head points thinned as thin says when not nil (Engine.scanThin).
func (q *promQuerier) load(ctx context.Context, ss []*promSeries, start, end int64, thin *series.Thin) error {
	if len(ss) == 0 || end < start {
		return nil
	}
	entries := make([]*series.Entry, len(ss))
	for i, s := range ss {
		entries[i] = s.entry
	}
	budget := 0 // no limit
	if q.lim.MaxSamples > 0 {
		q.mu.Lock()
		budget = q.lim.MaxSamples - q.samples
		q.mu.Unlock()
		if budget <= 0 {
			return q.e.exceeded(q.samplesError())
		}
	}
	scs, err := q.e.scanThin(ctx, entries, start, end, thin, pointLimit{max: budget, what: "samples"}, nil, &q.arenas)
	if err != nil {
		var le *LimitError
		switch {
		case errors.As(err, &le):
			return q.samplesError()
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return err
		}
		// The PromQL API answers a storage error as "internal" (500), or
		// "unavailable" when the storage asks for a retry.
		return promql.ErrStorage{Err: err}
	}
	n := 0
	for i := range scs {
		n += scs[i].n + scs[i].histCount() // hook: histogram.go
	}
	if err := q.addSamples(n); err != nil {
		return err
	}
	for i, s := range ss {
		s.cells, s.start, s.end = &scs[i], start, end
	}
	return nil
}

// addSamples counts n more samples read by the query against its
// -prom-query-max-samples budget, raw or from rollups alike, and returns
// the limit's error once the budget is passed.
func (q *promQuerier) addSamples(n int) error {
	q.mu.Lock()
	q.samples += n
	over := q.lim.MaxSamples > 0 && q.samples > q.lim.MaxSamples
	q.mu.Unlock()
	if over {
		return q.e.exceeded(q.samplesError())
	}
	return nil
}

// samplesError is the error of a query past its sample budget; the caller
// counts it (the scan already has when it found it).
func (q *promQuerier) samplesError() *LimitError {
	return &LimitError{What: "samples", Limit: q.lim.MaxSamples, Flag: "-prom-query-max-samples"}
}

// checkSteps refuses a selector of a range query whose n series would
// take more than the output limit at one point per step: the engine
// evaluates a selector at every step of the range before it aggregates.
func (q *promQuerier) checkSteps(hints *storage.SelectHints, n int) error {
	limit := int64(q.lim.MaxOutputPoints)
	if hints == nil || hints.Step <= 0 || limit <= 0 || n == 0 {
		return nil
	}
	// The hinted range is the steps' less the lookback (a vector
	// selector) or the range (a matrix selector).
	span := hints.End - hints.Start
	if hints.Range > 0 {
		span -= hints.Range
	} else {
		span -= q.lim.LookbackDelta.Milliseconds()
	}
	steps := max(span, 0)/hints.Step + 1
	if steps <= limit/int64(n) {
		return nil
	}
	return q.e.exceeded(&LimitError{What: "output points", Limit: q.lim.MaxOutputPoints, Flag: "-query-max-output-points",
		Need: steps * int64(n), Why: fmt.Sprintf("%d series × %d steps of %d ms", n, steps, hints.Step)})
}

// selectEntries resolves matchers to index entries with data on a day of
// [start, end], within the series budget: those the light lane's check
// selected when ctx carries them (lane.go), else from the index. No
// matchers select nothing.
func (q *promQuerier) selectEntries(ctx context.Context, ms []*labels.Matcher, start, end int64) ([]*series.Entry, error) {
	if len(ms) == 0 || end < start {
		return nil, nil
	}
	out, ok := promSelectionsFrom(ctx).get(ms, start, end)
	if !ok {
		out, _ = q.e.promSelect(ms, start, end, q.lim.MaxSeries)
	}
	if q.lim.MaxSeries > 0 {
		q.mu.Lock()
		q.series += len(out)
		over := q.series > q.lim.MaxSeries
		q.mu.Unlock()
		if over {
			return nil, q.e.exceeded(&LimitError{What: "series", Limit: q.lim.MaxSeries, Flag: "-prom-query-max-series"})
		}
	}
	return out, nil
}

// promSelect resolves PromQL matchers to the index's entries with data on a
// day of [start, end]: the __name__ matchers pick the metrics, the others
// filter their series. With limit > 0 it stops once more than limit are
// found and reports over.
func (e *Engine) promSelect(ms []*labels.Matcher, start, end int64, limit int) (out []*series.Entry, over bool) {
	nameMs, tagMs := splitPromMatchers(ms)
	metrics, _ := metricsFor(e.index, nameMs, true)
	for _, metric := range metrics {
		out = append(out, e.index.Select(metric, tagMs, false, start, end)...)
		if limit > 0 && len(out) > limit {
			return out, true
		}
	}
	return out, false
}

// splitPromMatchers splits PromQL matchers into the __name__ ones and the
// others, as the index takes them.
func splitPromMatchers(ms []*labels.Matcher) (nameMs []*labels.Matcher, tagMs []series.Matcher) {
	for _, m := range ms {
		if m.Name == labels.MetricName {
			nameMs = append(nameMs, m)
		} else {
			tagMs = append(tagMs, promMatcher{m})
		}
	}
	return nameMs, tagMs
}

// metricsFor returns the metrics whose names satisfy every __name__
// matcher. Without an equality or a regex set among them, the candidates
// are every metric the index knows: only when all is true (ok false
// otherwise, and nothing listed).
func metricsFor(ix *series.Index, nameMs []*labels.Matcher, all bool) (metrics []string, ok bool) {
	var cands []string
	found := false
	for _, m := range nameMs {
		if m.Type == labels.MatchEqual {
			cands, found = []string{m.Value}, true
			break
		}
	}
	if !found {
		for _, m := range nameMs {
			if m.Type == labels.MatchRegexp {
				if set := m.SetMatches(); len(set) > 0 {
					cands, found = slices.Compact(slices.Sorted(slices.Values(set))), true
					break
				}
			}
		}
	}
	if !found {
		if !all {
			return nil, false
		}
		cands = ix.Metrics("")
	}
	out := cands[:0:0]
	for _, c := range cands {
		if c == "" {
			continue
		}
		ok := true
		for _, m := range nameMs {
			if !m.Matches(c) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, true
}

// promMatcher is a Prometheus label matcher as the index takes it: a label
// a series lacks has the empty value.
type promMatcher struct{ m *labels.Matcher }

func (p promMatcher) Key() string { return p.m.Name }

func (p promMatcher) Matches(value string, present bool) bool {
	if !present {
		value = ""
	}
	return p.m.Matches(value)
}

// Literals lets the index answer equality and regex-set matchers from its
// postings; matchers that accept the empty value match series without the
// label and cannot be.
func (p promMatcher) Literals() ([]string, bool) {
	switch p.m.Type {
	case labels.MatchEqual:
		if p.m.Value != "" {
			return []string{p.m.Value}, true
		}
	case labels.MatchRegexp:
		set := p.m.SetMatches()
		if len(set) > 0 && !slices.Contains(set, "") {
			return set, true
		}
	}
	return nil, false
}

// promLabels returns the Prometheus labels of a series. A tag that is itself
// called __name__ (possible over OpenTSDB) yields to the metric.
func promLabels(l series.Labels) labels.Labels {
	b := labels.NewScratchBuilder(l.NumTags() + 1)
	return appendPromLabels(&b, l)
}

// appendPromLabels is promLabels through b, which it resets first.
func appendPromLabels(b *labels.ScratchBuilder, l series.Labels) labels.Labels {
	b.Reset()
	b.Add(labels.MetricName, l.Metric())
	l.Range(func(k, v string) bool {
		if k != labels.MetricName {
			b.Add(k, v)
		}
		return true
	})
	b.Sort()
	return b.Labels()
}

// LabelValues returns the values of the label name among the series the
// matchers select in the querier's range; without matchers, among every
// series the index knows (the range is not consulted).
func (q *promQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	ix := q.e.index
	var vals []string
	if len(ms) == 0 {
		if name == labels.MetricName {
			vals = ix.Metrics("")
		} else {
			vals = ix.TagValues("", name)
		}
	} else {
		start, end := clampRange(q.mint, q.maxt)
		entries, err := q.selectEntries(ctx, ms, start, end)
		if err != nil {
			return nil, nil, err
		}
		set := map[string]struct{}{}
		for _, e := range entries {
			if name == labels.MetricName {
				set[e.Labels.Metric()] = struct{}{}
			} else if v, ok := e.Labels.Get(name); ok && v != "" {
				set[v] = struct{}{}
			}
		}
		vals = make([]string, 0, len(set))
		for v := range set {
			vals = append(vals, v)
		}
		slices.Sort(vals)
	}
	if hints != nil && hints.Limit > 0 && len(vals) > hints.Limit {
		vals = vals[:hints.Limit]
	}
	return vals, nil, nil
}

// LabelNames returns the label names of the series the matchers select
// (every series without matchers), __name__ included, sorted.
func (q *promQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	ix := q.e.index
	set := map[string]struct{}{}
	if len(ms) == 0 {
		if ix.Len() > 0 {
			set[labels.MetricName] = struct{}{}
		}
		for _, k := range ix.TagKeys("") {
			set[k] = struct{}{}
		}
	} else {
		start, end := clampRange(q.mint, q.maxt)
		entries, err := q.selectEntries(ctx, ms, start, end)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			set[labels.MetricName] = struct{}{}
			e.Labels.Range(func(k, _ string) bool {
				set[k] = struct{}{}
				return true
			})
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	if hints != nil && hints.Limit > 0 && len(names) > hints.Limit {
		names = names[:hints.Limit]
	}
	return names, nil, nil
}

// Close releases the cells the querier's series read from; their
// iterators must not be used after it.
func (q *promQuerier) Close() error {
	q.arenas.release()
	return nil
}

// promSeriesSet is the answer of one Select, already in memory.
type promSeriesSet struct {
	series []*promSeries
	i      int
	warn   annotations.Annotations
}

func (s *promSeriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *promSeriesSet) At() storage.Series                { return s.series[s.i] }
func (s *promSeriesSet) Err() error                        { return nil }
func (s *promSeriesSet) Warnings() annotations.Annotations { return s.warn }

type promSeries struct {
	lbls       labels.Labels
	entry      *series.Entry
	cells      *seriesCells // nil: no samples
	start, end int64
	ls         *lastPerStep  // not nil: thinned to the last sample per step (same)
	pre        []windowPoint // with computed: its samples computed ahead (promql_window.go, promql_pushdown.go)
	computed   bool
}

func (s *promSeries) Labels() labels.Labels { return s.lbls }

// Iterator returns an iterator that decodes the series' cells as it goes,
// merged with the head's points: integers written over OpenTSDB read as
// floats, floats bit for bit (staleness markers included, which the PromQL
// engine then honours).
func (s *promSeries) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	if s.cells != nil && s.cells.hasHist() { // hook: histogram.go
		return newPromHistIterator(s)
	}
	if s.computed {
		it, ok := reuse.(*preIterator[int64])
		if !ok {
			it = &preIterator[int64]{}
		}
		*it = preIterator[int64]{pushed: pushed{s: s}, pre: s.pre}
		return it
	}
	if s.ls != nil {
		it, ok := reuse.(*thinIterator[int64])
		if !ok {
			it = &thinIterator[int64]{}
		}
		it.reset(s)
		return it
	}
	it, ok := reuse.(*promIterator[int64])
	if !ok {
		it = &promIterator[int64]{}
	}
	it.s, it.state, it.err, it.inBlk = s, iterFresh, nil, false
	if s.cells == nil {
		it.state = iterDone
		return it
	}
	it.minFirst = it.p.reset(s.cells, s.start, s.end, it.minFirst)
	return it
}

const (
	iterFresh = iota // before the first Next or Seek
	iterAt           // at a sample
	iterDone         // exhausted
)

// promIterator is a chunkenc.Iterator over one promSeries. It takes the
// points a run at a time where it can (a decoded block of a cell, see
// points.run), so that Next is an index increment and At two slice reads.
// It is generic over the timestamp type only because go vet's stdmethods
// check takes any method Seek(int64...) for io.Seeker's; it is only used
// as promIterator[int64].
type promIterator[T ~int64] struct {
	s        *promSeries
	p        points
	minFirst []int64
	blk      chunk.Block // the run it is in, when inBlk
	bi       int         // the current point's index in blk
	inBlk    bool
	state    int
	err      error
}

func (it *promIterator[T]) Next() chunkenc.ValueType {
	if it.inBlk {
		if it.bi+1 < len(it.blk.T) {
			it.bi++
			return chunkenc.ValFloat
		}
		it.inBlk = false
	}
	if it.state == iterDone {
		return chunkenc.ValNone
	}
	if b, ok := it.p.run(); ok {
		it.blk, it.bi, it.inBlk, it.state = b, 0, true, iterAt
		return chunkenc.ValFloat
	}
	if !it.p.next() {
		it.done()
		return chunkenc.ValNone
	}
	it.state = iterAt
	return chunkenc.ValFloat
}

func (it *promIterator[T]) done() {
	it.state, it.inBlk = iterDone, false
	if err := it.p.err; err != nil {
		it.err = promql.ErrStorage{Err: corruptSeries(it.s.entry, err)}
	}
}

func (it *promIterator[T]) Seek(t T) chunkenc.ValueType {
	switch it.state {
	case iterDone:
		return chunkenc.ValNone
	case iterAt:
		if it.AtT() >= int64(t) {
			return chunkenc.ValFloat
		}
	}
	if it.inBlk {
		// Within the run, then run by run.
		ts := it.blk.T
		if ts[len(ts)-1] >= int64(t) {
			for ts[it.bi] < int64(t) {
				it.bi++
			}
			return chunkenc.ValFloat
		}
		it.bi = len(ts) - 1
	}
	for it.Next() != chunkenc.ValNone {
		if it.inBlk {
			if ts := it.blk.T; ts[len(ts)-1] < int64(t) {
				it.bi = len(ts) - 1
				continue
			}
			for it.blk.T[it.bi] < int64(t) {
				it.bi++
			}
			return chunkenc.ValFloat
		}
		if it.p.t >= int64(t) {
			return chunkenc.ValFloat
		}
	}
	return chunkenc.ValNone
}

func (it *promIterator[T]) At() (int64, float64) {
	if it.inBlk {
		return it.blk.T[it.bi], it.blk.Float(it.bi)
	}
	return it.p.t, it.p.v.Float()
}

func (it *promIterator[T]) AtT() int64 {
	if it.inBlk {
		return it.blk.T[it.bi]
	}
	return it.p.t
}

func (it *promIterator[T]) AtST() int64 { return 0 }
func (it *promIterator[T]) Err() error  { return it.err }

var _ chunkenc.Iterator = (*promIterator[int64])(nil)

func (it *promIterator[T]) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return it.AtT(), nil
}

func (it *promIterator[T]) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.AtT(), nil
}
