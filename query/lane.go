package query

import (
	"context"
	"encoding/binary"
	"errors"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// A query is light when, before any of its data is read, it is known to
// read at most Lanes.LightMaxPoints points and to produce at most as many:
// the index gives its series, the cells' headers in the store the points
// each holds (nothing is decoded or copied), the request its steps or
// buckets per series. A light query takes a slot of the light lane
// (admit.go), so a dashboard's cheap panel does not wait behind the heavy
// queries that hold -query-max-concurrent's slots. What a light query
// holds is bounded by its points: LightMaxPoints points read (16 bytes
// each decoded, fewer encoded) and as many produced, plus the head's
// points of its series, which are in memory already; LightMaxConcurrent
// such queries run at once at most.
//
// The check reads at most lightMaxCells cells' headers, and looks at
// most lightMaxVisit series up in the index: a query over more series ×
// hours, or whose selection would look at more series (a regular
// expression over a metric of many series, a selector that names no
// metric), is heavy without reading or selecting any more, so the work
// done before the queue is bounded. What a light query's check selected
// is what it reads: PromQL's Selects take it from the query's context
// (promSelections), OpenTSDB's sub-queries come back planned with their
// series (AdmitRequests), so a query selects and plans once. A series
// created between the check and the read is not read; the head's new
// points of the selected series are. A heavy query is handed nothing and
// selects when it runs, as without a light lane.

// Lanes configure the light lane.
type Lanes struct {
	// LightMaxConcurrent is the light lane's slots (0: no light lane,
	// every query takes one of Limits.MaxConcurrent's).
	LightMaxConcurrent int
	// LightMaxPoints bounds the points a light query reads, and the
	// points it produces (steps × series, buckets × series, raw points).
	LightMaxPoints int
}

// DefaultLanes are the binary's defaults: four light queries at once, each
// of at most 100,000 points (a panel of ten series over a day at a point
// every ten seconds is 86,400): 1.6 MB decoded each.
func DefaultLanes() Lanes { return Lanes{LightMaxConcurrent: 4, LightMaxPoints: 100_000} }

// lightMaxCells bounds the series × hours a light query may cover, and so
// the cell headers one check reads.
const lightMaxCells = 256

// lightMaxVisit bounds the series one check looks at in the index (and the
// metrics a selector's __name__ names): past it the query is heavy.
const lightMaxVisit = 4 * lightMaxCells

// SetLanes configures the light lane. Call it once, before RegisterMetrics
// and before the engine is used.
func (e *Engine) SetLanes(ln Lanes) { e.admit = newLanes(e.limits, ln) }

// AdmitPromQL is Admit for a PromQL query whose statement is st: a light
// query (see above) takes a light slot; any other, a subquery or an @
// modifier among them, takes a heavy one. The query runs in the context
// it returns: a light query's carries the series its check selected, for
// its Selects (promSelections), until release.
func (e *Engine) AdmitPromQL(ctx context.Context, st parser.Statement) (qctx context.Context, release func(), err error) {
	var sel *promSelections
	if e.admit.lightOn() {
		sel = e.newLightCheck().prom(ctx, st)
	}
	rel, err := e.admit.take(ctx, sel != nil)
	if err != nil || sel == nil {
		return ctx, rel, err
	}
	return withPromSelections(ctx, sel), func() { sel.drop(); rel() }, nil
}

// AdmitRequests is Admit for an OpenTSDB query of n sub-queries, plan
// planning the i-th (ok false: the query takes a heavy slot); plan is
// called only when the light lane is on, and stops at the first sub-query
// that makes the query heavy. A light query's sub-queries come back
// planned, each with the series its check selected (Request.Entries), to
// run as they are; a heavy query's come back nil, to be planned when it
// runs.
func (e *Engine) AdmitRequests(ctx context.Context, n int, plan func(i int) (Request, bool)) (reqs []Request, release func(), err error) {
	light := false
	if e.admit.lightOn() {
		reqs, light = e.newLightCheck().requests(ctx, n, plan)
	}
	if release, err = e.admit.take(ctx, light); err != nil || !light {
		return nil, release, err
	}
	return reqs, release, nil
}

// lightCheck adds up what a query's selectors read and produce.
type lightCheck struct {
	e              *Engine
	max            int64
	cells          int64
	points, output int64
	visited        int // series (and metrics) looked at in the index
}

func (e *Engine) newLightCheck() *lightCheck { return &lightCheck{e: e, max: e.admit.lightMax} }

// add counts entries over [start, end], each producing perSeries points
// (-1: as many as it reads), and reports whether the query is still light.
func (c *lightCheck) add(ctx context.Context, entries []*series.Entry, start, end, perSeries int64) bool {
	if len(entries) == 0 || end < start {
		return true
	}
	hours := (rowkey.HourOf(end)-rowkey.HourOf(start))/rowkey.HourMs + 1
	if hours > lightMaxCells || c.cells+int64(len(entries))*hours > lightMaxCells {
		return false
	}
	c.cells += int64(len(entries)) * hours
	if perSeries > c.max || c.output+int64(len(entries))*perSeries > c.max {
		return false
	}
	n, ok := c.e.countPoints(ctx, entries, start, end, c.max-c.points)
	if !ok {
		return false
	}
	c.points += n
	if perSeries < 0 {
		c.output += n
	} else {
		c.output += int64(len(entries)) * perSeries
	}
	return c.points <= c.max && c.output <= c.max
}

// countPoints adds up the points the store's cells of entries in [start,
// end] hold, from the cells' headers (a cell the range cuts counts
// whole); ok is false past max, on a histogram cell or on an error (the
// query then takes a heavy slot, and its run reports the error).
func (e *Engine) countPoints(ctx context.Context, entries []*series.Entry, start, end, max int64) (n int64, ok bool) {
	l := e.layout
	var keys []byte
	var ranges []store.KeyRange
	for h := rowkey.HourOf(start); h <= end; h += rowkey.HourMs {
		for _, en := range entries {
			k := len(keys)
			keys = l.AppendRowKey(keys, en.TSUID, h)
			ke := len(keys)
			keys = append(append(keys, keys[k:ke]...), 0)
			ranges = append(ranges, store.KeyRange{Start: keys[k:ke:ke], End: keys[ke:len(keys):len(keys)]})
		}
	}
	sort.Slice(ranges, func(a, b int) bool { return string(ranges[a].Start) < string(ranges[b].Start) })
	ok = true
	var tsuid []byte
	err := e.st.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
		var hour int64
		var err error
		if _, hour, tsuid, err = l.ParseRowKey(tsuid[:0], c.Row); err != nil || chunk.IsHistogramChunk(c.Value) {
			ok = false
			return false
		}
		k, _, err := chunk.Peek(c.Value, hour)
		if err != nil {
			ok = false
			return false
		}
		n += int64(k)
		ok = n <= max
		return ok
	})
	return n, ok && err == nil
}

// selectSeries is series.Index.Select within the check's bounds: ok is
// false when it would look at more series than the check has left, or
// selects more than maxOut, and it stops as soon as it knows.
func (c *lightCheck) selectSeries(metric string, ms []series.Matcher, explicitTags bool, start, end int64, maxOut int) ([]*series.Entry, bool) {
	out, visited, ok := c.e.index.SelectBounded(metric, ms, explicitTags, start, end, lightMaxVisit-c.visited, maxOut)
	c.visited += visited
	return out, ok
}

// seriesLeft is how many series over [start, end] the check's cells have
// room for: a selection of more makes the query heavy.
func (c *lightCheck) seriesLeft(start, end int64) int {
	hours := (rowkey.HourOf(end)-rowkey.HourOf(start))/rowkey.HourMs + 1
	return int(max(lightMaxCells-c.cells, 0) / max(hours, 1))
}

// promSelect is what promQuerier.selectEntries selects for ms, without
// its limit and within the check's bounds: ok is false past them, or when
// the __name__ matchers name no metric (every metric would be looked at).
func (c *lightCheck) promSelect(ms []*labels.Matcher, start, end int64) ([]*series.Entry, bool) {
	nameMs, tagMs := splitPromMatchers(ms)
	metrics, ok := metricsFor(c.e.index, nameMs, false)
	if !ok || len(metrics) > lightMaxVisit-c.visited {
		return nil, false
	}
	left := c.seriesLeft(start, end)
	var out []*series.Entry
	for _, m := range metrics {
		c.visited++
		es, ok := c.selectSeries(m, tagMs, false, start, end, left-len(out))
		if !ok {
			return nil, false
		}
		out = append(out, es...)
	}
	return out, true
}

// prom returns what the PromQL statement st's selectors select when st is
// light, nil when it is not.
func (c *lightCheck) prom(ctx context.Context, st parser.Statement) *promSelections {
	es, ok := st.(*parser.EvalStmt)
	if !ok {
		return nil
	}
	steps := int64(1)
	if es.Interval > 0 {
		steps = int64(es.End.Sub(es.Start)/es.Interval) + 1
	}
	sel := &promSelections{byKey: map[string][]*series.Entry{}}
	light := true
	parser.Inspect(es.Expr, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.SubqueryExpr:
			light = false
		case *parser.VectorSelector:
			if n.Timestamp != nil || n.StartOrEnd != 0 {
				light = false
				break
			}
			var rng time.Duration
			if len(path) > 0 {
				if ms, ok := path[len(path)-1].(*parser.MatrixSelector); ok {
					rng = ms.Range
				}
			}
			start, end := clampRange(promSelectorRange(es, n, rng))
			if end < start {
				break // selects nothing (promQuerier.selectEntries)
			}
			entries, ok := c.promSelect(n.LabelMatchers, start, end)
			light = ok && c.add(ctx, entries, start, end, steps)
			sel.byKey[string(appendPromSelectionKey(nil, n.LabelMatchers, start, end))] = entries
		}
		if !light {
			return errNotLight
		}
		return nil
	})
	if !light {
		return nil
	}
	return sel
}

// errNotLight stops prom's walk.
var errNotLight = errors.New("not light")

// promSelectorRange is the range the PromQL engine hints to the Select of
// the selector n (getTimeRangesForSelector in promql/engine.go), outside
// any subquery and without @; evalRange is the range of the matrix
// selector around n, 0 for none.
func promSelectorRange(es *parser.EvalStmt, n *parser.VectorSelector, evalRange time.Duration) (int64, int64) {
	start, end := es.Start.UnixMilli(), es.End.UnixMilli()
	lookback := es.LookbackDelta
	if lookback <= 0 {
		lookback = 5 * time.Minute
	}
	switch {
	case evalRange == 0:
		start -= lookback.Milliseconds() - 1
		if n.Smoothed {
			end += lookback.Milliseconds()
		}
	case n.Anchored:
		start -= (lookback + evalRange).Milliseconds() - 1
	case n.Smoothed:
		start -= (lookback + evalRange).Milliseconds() - 1
		end += lookback.Milliseconds()
	default:
		start -= evalRange.Milliseconds() - 1
	}
	off := n.OriginalOffset.Milliseconds()
	return start - off, end - off
}

// promSelections are the series a light PromQL query's check selected,
// by selector, handed to the query's Selects in its context: by the
// selector's matchers and the days its range covers, since the index
// selects the series with data on a day of the range (series.Index.Select),
// so a selector that appears twice with ranges of the same days selects
// the same series, and one whose range covers other days is a key of its
// own. A Select the check did not see (a range it computed otherwise)
// selects from the index as it would have.
type promSelections struct {
	byKey map[string][]*series.Entry // by appendPromSelectionKey
	hits  atomic.Int64               // Selects answered (tests)
}

// appendPromSelectionKey appends the key of a selector's selection: its
// matchers (each length-prefixed) and the days of [start, end].
func appendPromSelectionKey(dst []byte, ms []*labels.Matcher, start, end int64) []byte {
	for _, m := range ms {
		dst = append(binary.AppendUvarint(dst, uint64(len(m.Name))), m.Name...)
		dst = append(binary.AppendUvarint(dst, uint64(len(m.Value))), m.Value...)
		dst = append(dst, byte(m.Type))
	}
	const dayMs = 24 * rowkey.HourMs
	dst = binary.AppendUvarint(dst, uint64(max(start, 0)/dayMs))
	return binary.AppendUvarint(dst, uint64(max(end, 0)/dayMs))
}

type promSelectionsCtx struct{}

func withPromSelections(ctx context.Context, s *promSelections) context.Context {
	return context.WithValue(ctx, promSelectionsCtx{}, s)
}

// promSelectionsFrom returns the selections ctx carries, nil for none.
func promSelectionsFrom(ctx context.Context) *promSelections {
	s, _ := ctx.Value(promSelectionsCtx{}).(*promSelections)
	return s
}

// get returns what the check selected for ms over [start, end]; ok is
// false when it did not see that selector (or s is nil).
func (s *promSelections) get(ms []*labels.Matcher, start, end int64) ([]*series.Entry, bool) {
	if s == nil {
		return nil, false
	}
	var buf [128]byte
	out, ok := s.byKey[string(appendPromSelectionKey(buf[:0], ms, start, end))]
	if ok {
		s.hits.Add(1)
	}
	return out, ok
}

// drop forgets the selections at the query's end: they are kept no
// longer than the query.
func (s *promSelections) drop() { clear(s.byKey) }

// requests plans the n OpenTSDB sub-queries of a query in turn and
// reports whether they are light together, reading what Fetch would read
// and stopping at the first that makes them heavy (or does not plan). A
// light query's come back planned, each with the series it reads in
// Entries.
func (c *lightCheck) requests(ctx context.Context, n int, plan func(i int) (Request, bool)) ([]Request, bool) {
	out := make([]Request, 0, n)
	for i := range n {
		r, ok := plan(i)
		if !ok {
			return nil, false
		}
		sel := r.Selector
		if r.Downsample != nil || r.Rate {
			sel.Start = scanStart(r)
		}
		entries := r.Entries
		if entries == nil {
			if entries, ok = c.selectSeries(sel.Metric, sel.Matchers, sel.ExplicitTags, sel.Start, sel.End, c.seriesLeft(sel.Start, sel.End)); !ok {
				return nil, false
			}
			if entries == nil {
				entries = []*series.Entry{} // none: still not selected again
			}
			r.Entries = entries
		}
		perSeries := int64(-1) // raw, or buckets without fill: no more than the points
		if r.Downsample != nil && r.Downsample.Fill != downsample.FillNone {
			_, perSeries = r.Downsample.Buckets(sel.Start, sel.End)
		}
		if !c.add(ctx, entries, sel.Start, sel.End, perSeries) {
			return nil, false
		}
		out = append(out, r)
	}
	return out, true
}
