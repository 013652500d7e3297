package query

import (
	"context"
	"errors"
	"sort"
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
// The check reads at most lightMaxCells cells' headers; a query over more
// series × hours than that is heavy without reading any. Its series are
// selected once more when it runs: a series created in between is read
// too, and is the only way a light query reads more than it was admitted
// for.

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

// SetLanes configures the light lane. Call it once, before RegisterMetrics
// and before the engine is used.
func (e *Engine) SetLanes(ln Lanes) { e.admit = newLanes(e.limits, ln) }

// AdmitPromQL is Admit for a PromQL query whose statement is st: a light
// query (see above) takes a light slot; any other, a subquery or an @
// modifier among them, takes a heavy one.
func (e *Engine) AdmitPromQL(ctx context.Context, st parser.Statement) (release func(), err error) {
	return e.admit.take(ctx, e.admit.lightOn() && e.promLight(ctx, st))
}

// AdmitRequests is Admit for an OpenTSDB query whose sub-queries plan
// returns (ok false: take a heavy slot); plan is called only when the
// light lane is on.
func (e *Engine) AdmitRequests(ctx context.Context, plan func() ([]Request, bool)) (release func(), err error) {
	light := false
	if e.admit.lightOn() {
		if reqs, ok := plan(); ok {
			light = e.requestsLight(ctx, reqs)
		}
	}
	return e.admit.take(ctx, light)
}

// lightCheck adds up what a query's selectors read and produce.
type lightCheck struct {
	e              *Engine
	max            int64
	cells          int64
	points, output int64
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

// promLight reports whether the PromQL statement st is light.
func (e *Engine) promLight(ctx context.Context, st parser.Statement) bool {
	es, ok := st.(*parser.EvalStmt)
	if !ok {
		return false
	}
	steps := int64(1)
	if es.Interval > 0 {
		steps = int64(es.End.Sub(es.Start)/es.Interval) + 1
	}
	lookback := es.LookbackDelta
	if lookback <= 0 {
		lookback = 5 * time.Minute
	}
	c := e.newLightCheck()
	light := true
	parser.Inspect(es.Expr, func(node parser.Node, path []parser.Node) error {
		if !light {
			return errNotLight
		}
		switch n := node.(type) {
		case *parser.SubqueryExpr:
			light = false
		case *parser.VectorSelector:
			if n.Timestamp != nil || n.StartOrEnd != 0 {
				light = false
				break
			}
			rng := lookback
			if len(path) > 0 {
				if ms, ok := path[len(path)-1].(*parser.MatrixSelector); ok {
					rng = ms.Range
				}
			}
			start, end := clampRange(es.Start.Add(-n.OriginalOffset-rng).UnixMilli(), es.End.Add(-n.OriginalOffset).UnixMilli())
			entries, ok := e.promEntries(n.LabelMatchers, start, end)
			light = ok && c.add(ctx, entries, start, end, steps)
		}
		if !light {
			return errNotLight
		}
		return nil
	})
	return light
}

// errNotLight stops promLight's walk.
var errNotLight = errors.New("not light")

// promEntries is what promQuerier.selectEntries selects for ms, without
// its limit; ok is false past lightMaxCells series.
func (e *Engine) promEntries(ms []*labels.Matcher, start, end int64) ([]*series.Entry, bool) {
	out, over := e.promSelect(ms, start, end, lightMaxCells)
	if over {
		return nil, false
	}
	return out, true
}

// requestsLight reports whether the OpenTSDB sub-queries reqs are light
// together, reading what Fetch would read.
func (e *Engine) requestsLight(ctx context.Context, reqs []Request) bool {
	c := e.newLightCheck()
	for _, r := range reqs {
		sel := r.Selector
		if r.Downsample != nil || r.Rate {
			sel.Start = scanStart(r)
		}
		entries := r.Entries
		if entries == nil {
			entries = e.index.Select(sel.Metric, sel.Matchers, sel.ExplicitTags, sel.Start, sel.End)
		}
		perSeries := int64(-1) // raw, or buckets without fill: no more than the points
		if r.Downsample != nil && r.Downsample.Fill != downsample.FillNone {
			_, perSeries = r.Downsample.Buckets(sel.Start, sel.End)
		}
		if !c.add(ctx, entries, sel.Start, sel.End, perSeries) {
			return false
		}
	}
	return true
}
