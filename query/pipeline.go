package query

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/rowkey"
	"hourglass/series"
)

// Request is one OpenTSDB sub-query in engine terms: which series, and what
// to do with them. Per series: downsample, then rate; then aggregate across
// the series of each group (OpenTSDB's order, AggregationIterator.create).
type Request struct {
	Selector
	Aggregator  *downsample.Aggregator
	Downsample  *downsample.Spec // nil: none
	Rate        bool
	RateOptions downsample.RateOptions
	GroupBy     []string       // tag keys whose values split the result
	Location    *time.Location // for calendar downsampling; nil is UTC
	// Entries, when not nil, are the series to read instead of those the
	// index selects for the Selector's metric and matchers (OpenTSDB's
	// tsuid sub-queries); the Selector's range still applies.
	Entries []*series.Entry
	// Rollup is the request's rollupUsage (rollup.go).
	Rollup RollupUsage
}

// Result is one output series: a group of input series aggregated, or one
// series with the `none` aggregator.
type Result struct {
	Metric        string
	Tags          []series.Tag // the tags every member that has the key agrees on
	AggregateTags []string     // keys whose values differ among the members
	TSUIDs        [][]byte     // the members, sorted
	Points        []chunk.Point
}

// Run executes the request: Fetch, then Process.
func (e *Engine) Run(ctx context.Context, req Request) ([]Result, error) {
	ss, err := e.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.Process(ctx, req, ss)
}

// Fetch reads the series of the request: req.Entries when it names them,
// else those the index selects. Downsampling and rates read from the start
// aligned down to the interval and then the hour, as OpenTSDB does, so the
// first bucket is whole and the first rate in range has a predecessor;
// Process trims the result to the range at the end.
//
// With a downsample spec, Fetch returns each series downsampled: its
// points go into their buckets as they are decoded, and are never held
// all at once. Series.RawPoints still counts the points read; Process
// knows not to downsample these series again. Of the buckets before
// req.Start only those Process needs are kept (keepBefore): the points
// of the others are skipped as they come.
func (e *Engine) Fetch(ctx context.Context, req Request) ([]Series, error) {
	sel := req.Selector
	if req.Downsample != nil || req.Rate {
		sel.Start = scanStart(req)
	}
	entries := req.Entries
	if entries != nil {
		if e.limits.MaxSeries > 0 && len(entries) > e.limits.MaxSeries {
			return nil, e.exceeded(&LimitError{What: "series", Limit: e.limits.MaxSeries, Flag: "-query-max-series", Need: int64(len(entries))})
		}
	} else {
		var err error
		if entries, err = e.selectEntries(sel); err != nil {
			return nil, err
		}
	}
	if req.Downsample == nil {
		return e.read(ctx, entries, sel.Start, sel.End, e.rawOutputLimit())
	}
	if err := e.planDownsample(*req.Downsample, sel.Start, sel.End, len(entries)); err != nil {
		return nil, err
	}
	if ss, ok, err := e.fetchRollups(ctx, req, entries, sel.Start, sel.End); ok {
		return ss, err
	}
	return e.readDownsampled(ctx, entries, sel.Start, sel.End, *req.Downsample, req.Location, req.Start, keepBefore(req))
}

// keepBefore is how many of a series' buckets before req.Start Process
// needs (Fetch reads from further back, scanStart), 0 for all of them:
// the last one, the base of the aggregation's interpolation at the first
// times in range (and of the first rate in range when not aggregated);
// with a rate and an aggregation the last two, so that the last rate
// before the start is there (a series' rate at a time in range without a
// point of its own is its previous one). With dropResets that rate may be
// from any bucket before (a dropped rate makes no point): all are kept.
func keepBefore(req Request) int {
	agg := req.Aggregator != nil && !req.Aggregator.IsNone()
	switch {
	case !req.Rate:
		return 1
	case !agg:
		return 1
	case req.RateOptions.DropResets:
		return 0
	}
	return 2
}

// readDownsampled is read with each series downsampled with spec over
// [start, end] as its points are decoded. With keep > 0, of the buckets
// before keepFrom only the last keep are needed (downsample.KeepBefore):
// the points before them are skipped as they come, in whole blocks.
func (e *Engine) readDownsampled(ctx context.Context, entries []*series.Entry, start, end int64, spec downsample.Spec, loc *time.Location, keepFrom int64, keep int) ([]Series, error) {
	if len(entries) == 0 || end < start {
		return nil, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	out := make([]Series, len(entries))
	for i, en := range entries {
		out[i] = Series{Labels: en.Labels, TSUID: en.TSUID, downsampled: true}
	}
	// Each series' buckets are taken from the output budget before they
	// are made: all of the range's with a fill policy, no more than its
	// points without (spec.Buckets bounds them). The Downsampler is held
	// to what it got, so a loose calendar bound costs nothing and a bound
	// past the budget stops the query, not the process.
	_, hi := spec.Buckets(start, end)
	capHint := int(min(hi, 1<<16))
	b := newBudget(e.limits.MaxOutputPoints)
	var seen atomic.Int64 // series with data so far, for the error
	_, err := e.scan(ctx, entries, start, end, e.rawLimit(), func(w *worker, idx []int, scs []seriesCells) error {
		for _, i := range idx {
			sc := &scs[i]
			out[i].RawPoints = sc.n
			if sc.n == 0 {
				continue
			}
			seen.Add(1)
			want := hi
			if spec.Fill == downsample.FillNone {
				want = min(want, int64(sc.n))
			}
			got := b.take(want)
			var dst []chunk.Point
			switch {
			case spec.Calendar:
			case spec.Fill != downsample.FillNone:
				dst = make([]chunk.Point, 0, got) // exactly its buckets
			default:
				dst = make([]chunk.Point, 0, min(int64(capHint), got))
			}
			w.ds.Reset(dst, spec, start, end, loc)
			if keep > 0 {
				w.ds.KeepBefore(keepFrom, keep)
			}
			if b.limited {
				w.ds.Limit(got)
			}
			w.minFirst = w.pts.reset(sc, start, end, w.minFirst)
			for k := 1; ; k++ {
				if b, ok := w.pts.run(); ok {
					w.ds.AddBlock(&b)
				} else if h, ok := w.pts.headRun(); ok {
					// In pieces of a decoded block's 64 points, so that
					// the context is looked at as often as for the
					// store's (ctxEveryRun).
					for ; len(h) > 64; h = h[64:] {
						w.ds.AddPoints(h[:64])
						if k++; k%ctxEveryRun == 0 && ctx.Err() != nil {
							return ctx.Err()
						}
					}
					w.ds.AddPoints(h)
				} else if w.pts.next() {
					w.ds.Add(w.pts.t, w.pts.v)
				} else {
					break
				}
				if k%ctxEveryRun == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
			}
			out[i].Points = w.ds.Finish()
			over := w.ds.Over()
			b.give(got - int64(len(out[i].Points)))
			if err := w.pts.err; err != nil {
				return corruptSeries(entries[i], err)
			}
			if over {
				// Not counted here: several workers may stop on the same
				// query; it is counted once below.
				return outputLimit(e.limits.MaxOutputPoints, 0, fmt.Sprintf("%d series with points in the range so far, each up to %d buckets of %s", seen.Load(), want, spec))
			}
			sc.cells = nil
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if le := (*LimitError)(nil); errors.As(err, &le) {
		return nil, e.exceeded(le)
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}

// Process runs the per-series and cross-series steps of the request over
// series read by Fetch (it may reorder and modify ss).
func (e *Engine) Process(ctx context.Context, req Request, ss []Series) ([]Result, error) {
	sel := req.Selector
	if req.Downsample != nil || req.Rate {
		sel.Start = scanStart(req)
	}
	// A series without a point in the range is not part of the answer
	// (the index knows series by day, not by the millisecond).
	kept := ss[:0]
	for _, s := range ss {
		if len(s.Points) > 0 || s.downsampled && s.RawPoints > 0 {
			kept = append(kept, s)
		}
	}
	ss = kept
	loc := req.Location
	if loc == nil {
		loc = time.UTC
	}
	if err := e.checkProcess(req, sel.Start, ss); err != nil {
		return nil, err
	}
	// Per series: downsample, then rate.
	for i := range ss {
		pts := ss[i].Points
		if req.Downsample != nil && !ss[i].downsampled {
			pts = downsample.Downsample(nil, pts, *req.Downsample, sel.Start, req.End, loc)
		}
		if req.Rate && len(pts) > 1 {
			// In place: the series' points are the request's own
			// (read, downsampled or made from rollups for it), and
			// each rate is written over a point already read.
			pts = downsample.Rate(pts[:0], pts, req.RateOptions)
		} else if req.Rate {
			pts = nil
		}
		ss[i].Points = pts
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if req.Aggregator == nil || req.Aggregator.IsNone() {
		out := make([]Result, 0, len(ss))
		for _, s := range ss {
			if pts := trim(s.Points, req.Start, req.End); len(pts) > 0 {
				out = append(out, Result{Metric: s.Labels.Metric(), Tags: s.Labels.Tags(), TSUIDs: [][]byte{s.TSUID}, Points: pts})
			}
		}
		return out, nil
	}
	groups := map[string][]int{}
	var order []string
	for i, s := range ss {
		var key strings.Builder
		for _, k := range req.GroupBy {
			v, _ := s.Labels.Get(k)
			key.WriteString(k)
			key.WriteByte(0)
			key.WriteString(v)
			key.WriteByte(0)
		}
		k := key.String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	sort.Strings(order)
	out := make([]Result, 0, len(order))
	for _, k := range order {
		members := groups[k]
		in := make([][]chunk.Point, len(members))
		r := Result{Metric: req.Metric}
		most := 0 // the output has at least the points of its longest input
		for j, i := range members {
			in[j] = ss[i].Points
			most = max(most, len(in[j]))
			r.TSUIDs = append(r.TSUIDs, ss[i].TSUID)
		}
		r.Tags, r.AggregateTags = groupTags(ss, members)
		agg, err := downsample.AggregateContext(ctx, make([]chunk.Point, 0, most), in, req.Aggregator, req.Rate)
		if err != nil {
			return nil, err
		}
		for j := range in {
			in[j], ss[members[j]].Points = nil, nil // let the inputs go as the output is written
		}
		r.Points = trim(agg, req.Start, req.End)
		if len(r.Points) == 0 {
			continue
		}
		sort.Slice(r.TSUIDs, func(a, b int) bool { return string(r.TSUIDs[a]) < string(r.TSUIDs[b]) })
		out = append(out, r)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// groupTags splits the members' tag keys: a key whose members all agree
// (counting only members that have it) is a tag; one they disagree on is an
// aggregated tag. This is OpenTSDB's SpanGroup.computeTags.
func groupTags(ss []Series, members []int) ([]series.Tag, []string) {
	vals := map[string]string{}
	differ := map[string]bool{}
	for _, i := range members {
		ss[i].Labels.Range(func(k, v string) bool {
			if old, ok := vals[k]; ok && old != v {
				differ[k] = true
			}
			vals[k] = v
			return true
		})
	}
	tags := []series.Tag{}
	aggs := []string{}
	for k, v := range vals {
		if differ[k] {
			aggs = append(aggs, k)
		} else {
			tags = append(tags, series.Tag{Key: k, Value: v})
		}
	}
	sort.Slice(tags, func(a, b int) bool { return tags[a].Key < tags[b].Key })
	sort.Strings(aggs)
	return tags, aggs
}

// scanStart is where a request with downsampling or a rate reads from: its
// start aligned down to the downsample interval (when it has a fixed one),
// then to the hour.
func scanStart(req Request) int64 {
	start := req.Start
	if d := req.Downsample; d != nil && d.All {
		return start // one bucket, stamped with the query start
	}
	if d := req.Downsample; d != nil && !d.All && !d.Calendar && d.Interval > 0 {
		start -= ((start % d.Interval) + d.Interval) % d.Interval
	}
	return rowkey.HourOf(start)
}

// trim returns the points of pts in [start, end].
func trim(pts []chunk.Point, start, end int64) []chunk.Point {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].T >= start })
	j := sort.Search(len(pts), func(i int) bool { return pts[i].T > end })
	return pts[i:j]
}

// checkProcess bounds, before Process makes them, the buckets of the
// series it downsamples itself (those Fetch did not).
func (e *Engine) checkProcess(req Request, start int64, ss []Series) error {
	limit := int64(e.limits.MaxOutputPoints)
	if req.Downsample == nil || limit <= 0 {
		return nil
	}
	spec := *req.Downsample
	_, hi := spec.Buckets(start, req.End)
	var total int64
	for _, s := range ss {
		if s.downsampled {
			total += int64(len(s.Points))
			continue
		}
		n := hi
		if spec.Fill == downsample.FillNone {
			n = min(n, int64(len(s.Points)))
		}
		if total += n; total > limit || total < 0 {
			return e.outputError(0, fmt.Sprintf("%d series, each up to %d buckets of %s", len(ss), hi, spec))
		}
	}
	return nil
}
