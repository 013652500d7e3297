// Package query is the read path: it resolves a metric and tag filters to
// series through the index, scans the data table once per salt bucket in
// parallel, merges what the store holds with what the head holds, and hands
// each series' points in time order to the aggregation pipeline (pipeline.go),
// which both the OpenTSDB and the Prometheus dialects use. A scan keeps the
// cells it reads encoded; each series is decoded once, as it is consumed:
// into a downsampler, into the PromQL engine's iterator, or into a slice
// (cells.go).
package query

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/internal/procs"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// Selector picks series and a time range.
type Selector struct {
	Metric       string
	Matchers     []series.Matcher
	ExplicitTags bool
	Start, End   int64 // ms, both inclusive
}

// Series is one series and its points in the selected range, sorted, one
// per timestamp. Fetch returns a request's downsampled series already
// downsampled (see Fetch).
type Series struct {
	Labels series.Labels
	TSUID  []byte
	Points []chunk.Point
	// RawPoints is the number of points read for the series in the range,
	// from the store and the head (a point held by both counts twice):
	// len(Points) before downsampling.
	RawPoints int
	// FromRollup is the rollup interval (ms) its buckets were read from,
	// joined with raw points where rollups do not answer (rollup_fetch.go);
	// 0 when read raw.
	FromRollup int64

	downsampled bool // Points are the buckets of the request's downsample spec
}

// Head is what the engine reads of the head: the points not yet in the
// store (series.Head).
type Head interface {
	Snapshot(l series.Labels, start, end int64, dst []chunk.Point) []chunk.Point
}

// Engine runs reads over a head, the series index and the store. It is safe
// for concurrent use.
type Engine struct {
	head    Head
	index   *series.Index
	st      store.Store
	layout  rowkey.Layout
	limits  Limits
	metrics *engineMetrics // nil until RegisterMetrics
	admit   *admission     // admit.go
	ru      rollupState    // rollup.go
}

// NewEngine returns an engine reading head, the index idx and st, laid out
// as layout says.
func NewEngine(head Head, idx *series.Index, st store.Store, layout rowkey.Layout, limits Limits) *Engine {
	return &Engine{head: head, index: idx, st: st, layout: layout, limits: limits, admit: newAdmission(limits)}
}

// Limits returns the engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

// Select returns the selected series with their points, sorted by labels.
func (e *Engine) Select(ctx context.Context, sel Selector) ([]Series, error) {
	entries, err := e.selectEntries(sel)
	if err != nil {
		return nil, err
	}
	return e.read(ctx, entries, sel.Start, sel.End, e.rawLimit())
}

// selectEntries returns the index entries sel selects, within the series limit.
func (e *Engine) selectEntries(sel Selector) ([]*series.Entry, error) {
	entries := e.index.Select(sel.Metric, sel.Matchers, sel.ExplicitTags, sel.Start, sel.End)
	if e.limits.MaxSeries > 0 && len(entries) > e.limits.MaxSeries {
		return nil, e.exceeded(&LimitError{What: "series", Limit: e.limits.MaxSeries, Flag: "-query-max-series", Need: int64(len(entries))})
	}
	return entries, nil
}

// ReadEntries returns the points of the given index entries in [start, end].
func (e *Engine) ReadEntries(ctx context.Context, entries []*series.Entry, start, end int64) ([]Series, error) {
	return e.read(ctx, entries, start, end, e.rawLimit())
}

// read returns the points of entries in [start, end]; more raw points
// than lim allows is a LimitError. Each
// series' points are decoded once, into a slice of the size they need.
func (e *Engine) read(ctx context.Context, entries []*series.Entry, start, end int64, lim pointLimit) ([]Series, error) {
	if len(entries) == 0 || end < start {
		return nil, nil
	}
	out := make([]Series, len(entries))
	for i, en := range entries {
		out[i] = Series{Labels: en.Labels, TSUID: en.TSUID}
	}
	_, err := e.scan(ctx, entries, start, end, lim, func(w *worker, idx []int, scs []seriesCells) error {
		total := 0
		for _, i := range idx {
			total += scs[i].n
		}
		slab := make([]chunk.Point, 0, total)
		for _, i := range idx {
			sc := &scs[i]
			out[i].RawPoints = sc.n
			if sc.n == 0 {
				continue
			}
			w.minFirst = w.pts.reset(sc, start, end, w.minFirst)
			n := len(slab)
			for k := 1; ; k++ {
				if b, ok := w.pts.run(); ok {
					for j, t := range b.T {
						slab = append(slab, chunk.Point{T: t, V: b.Value(j)})
					}
				} else if w.pts.next() {
					slab = append(slab, chunk.Point{T: w.pts.t, V: w.pts.v})
				} else {
					break
				}
				if k%ctxEveryRun == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
			}
			if err := w.pts.err; err != nil {
				return corruptSeries(entries[i], err)
			}
			if len(slab) > n {
				out[i].Points = slab[n:len(slab):len(slab)]
			}
			sc.cells = nil
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}

// worker is one bucket's scratch space.
type worker struct {
	pts      points
	minFirst []int64
	ds       downsample.Downsampler
}

// scan reads the cells of entries in [start, end], one goroutine per salt
// bucket, with the head's points, and returns them by entry. After a
// bucket is scanned and the points limit checked, its goroutine calls
// consume (when not nil) with the indexes of the entries it read; consume
// may decode them and drop their cells. More points read than lim allows
// is a LimitError.
func (e *Engine) scan(ctx context.Context, entries []*series.Entry, start, end int64, lim pointLimit, consume func(w *worker, idx []int, scs []seriesCells) error, keep *keptArenas) ([]seriesCells, error) {
	return e.scanThin(ctx, entries, start, end, nil, lim, consume, keep)
}

// scanThin is scan with the head's points thinned as thin says, when not
// nil (headSnapshots): for a reader that thins every point so.
func (e *Engine) scanThin(ctx context.Context, entries []*series.Entry, start, end int64, thin *series.Thin, lim pointLimit, consume func(w *worker, idx []int, scs []seriesCells) error, keep *keptArenas) ([]seriesCells, error) {
	scs := make([]seriesCells, len(entries))
	// The head first: a chunk leaves the head only once it is in the store,
	// so whatever the snapshot misses the scan below sees.
	var total int64 // points read, the head's and the store's
	hb, err := e.headSnapshots(ctx, entries, scs, start, end, lim, thin)
	if err != nil {
		return nil, err
	}
	switch {
	case consume != nil:
		// Every consume has returned, and nothing reads the head's
		// points after, when scan does.
		defer putHeadBuf(hb)
	case keep != nil:
		keep.addHead(hb)
	}
	for i := range entries {
		e.headHistograms(&scs[i], entries[i].Labels, start, end) // hook: histogram.go
		total += int64(scs[i].n)
	}
	if lim.over(total) {
		return nil, e.exceeded(lim.err(total))
	}
	buckets := bySalt(entries)
	metricSeries := e.metricSeries(entries)
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, procs.Workers()*2)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, idx := range buckets {
		salt := entries[idx[0]].Salt
		wg.Add(1)
		sem <- struct{}{}
		go func(salt byte, idx []int) {
			defer func() { <-sem; wg.Done() }()
			mem := arenas.Get().(*arena)
			n, err := e.scanBucket(ctx, salt, entries, idx, scs, start, end, mem, metricSeries)
			mem.place(scs, consume != nil || keep != nil)
			mu.Lock()
			total += n
			if err == nil && lim.over(total) {
				err = e.exceeded(lim.err(total))
			}
			if err == nil && firstErr != nil {
				err = firstErr
			}
			mu.Unlock()
			if err == nil && consume != nil {
				w := workers.Get().(*worker)
				err = consume(w, idx, scs)
				w.release()
				workers.Put(w)
				// consume has decoded the bucket's series and the caller
				// reads no cell after a consuming scan.
				for _, i := range idx {
					scs[i].cells, scs[i].hist = nil, nil
				}
				mem.release()
				arenas.Put(mem)
			} else if err == nil && keep != nil {
				keep.add(mem) // released when the cells are done with
			} else {
				mem.forget()
				arenas.Put(mem)
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}(salt, idx)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return scs, nil
}

var workers = sync.Pool{New: func() any { return new(worker) }}

// bySalt returns the indexes of entries by salt bucket, in order, one
// slice per bucket that has any, all in one array.
func bySalt(entries []*series.Entry) [][]int {
	var count [256]int
	for _, en := range entries {
		count[en.Salt]++
	}
	n := 0
	for _, c := range count {
		if c > 0 {
			n++
		}
	}
	all := make([]int, len(entries))
	out := make([][]int, 0, n)
	var at [256]int // each bucket's next index in all
	off := 0
	for salt, c := range count {
		if c > 0 {
			at[salt] = off
			out = append(out, all[off:off:off+c])
			off += c
		}
	}
	for i, en := range entries {
		all[at[en.Salt]] = i
		at[en.Salt]++
	}
	for k := range out {
		out[k] = out[k][:cap(out[k])]
	}
	return out
}

// release drops what w points at, and a slow path's buffer or the cells'
// minimums if they grew large, before w goes back to the pool.
func (w *worker) release() {
	rest := w.pts.rest[:0]
	if cap(rest) > 1<<16 {
		rest = nil
	}
	w.pts = points{rest: rest}
	if cap(w.minFirst) > 1<<12 {
		w.minFirst = nil
	}
}

// corruptSeries is the error of a series whose cell does not decode.
func corruptSeries(en *series.Entry, err error) error {
	return fmt.Errorf("query: corrupt cell of series %x: %w", en.TSUID, err)
}

// wholeMin is the number of a metric's series from which a read of most of
// them (metricSeries) scans the metric's rows rather than seeking each.
const wholeMin = 64

// metricSeries returns, when entries are wholeMin series or more, the
// number of series in each salt bucket of each metric of entries (by
// metric UID), from the index; nil otherwise.
func (e *Engine) metricSeries(entries []*series.Entry) map[string]*[256]int32 {
	if len(entries) < wholeMin {
		return nil
	}
	mw := e.layout.MetricWidth
	out := map[string]*[256]int32{}
	for _, en := range entries {
		if out[string(en.TSUID[:mw])] != nil {
			continue
		}
		m := string(en.TSUID[:mw])
		n := new([256]int32)
		out[m] = n
		e.index.All(en.Labels.Metric(), func(x *series.Entry) bool {
			if len(x.TSUID) >= mw && string(x.TSUID[:mw]) == m {
				n[x.Salt]++
			}
			return true
		})
	}
	return out
}

// scanBucket reads the rows of one salt bucket for the series idx of
// entries into scs, keeping each cell's bytes in mem, and returns the number of
// points in [start, end] they hold. metricSeries (may be nil) is what
// Engine.metricSeries returned.
func (e *Engine) scanBucket(ctx context.Context, salt byte, entries []*series.Entry, idx []int, scs []seriesCells, start, end int64, mem *arena, metricSeries map[string]*[256]int32) (int64, error) {
	l := e.layout
	mw := l.MetricWidth
	h0, h1 := rowkey.HourOf(start), rowkey.HourOf(end)
	// The series by TSUID, keyed by substrings of one string of them
	// all: not a string per series.
	size := 0
	for _, i := range idx {
		size += len(entries[i].TSUID)
	}
	tsuids := make([]byte, 0, size)
	for _, i := range idx {
		tsuids = append(tsuids, entries[i].TSUID...)
	}
	all := string(tsuids)
	byTSUID := make(map[string]int, len(idx))
	off := 0
	for _, i := range idx {
		n := len(entries[i].TSUID)
		byTSUID[all[off:off+n]] = i
		off += n
	}
	// Group the series by metric UID (one metric per query in practice).
	metrics := map[string][]int{}
	off = 0
	for _, i := range idx {
		m := all[off : off+mw]
		off += len(entries[i].TSUID)
		if metrics[m] == nil {
			metrics[m] = make([]int, 0, len(idx))
		}
		metrics[m] = append(metrics[m], i)
	}
	var ranges []store.KeyRange
	hours := (h1-h0)/rowkey.HourMs + 1
	for m, ids := range metrics {
		// Exact rows when they are few; one range per metric otherwise,
		// filtering rows of series not asked for as they pass. A read of
		// at least half of the metric's series in the bucket takes the
		// range too: the rows it passes over are at most as many as it
		// wants, and a seek per row costs more than a step.
		most := metricSeries[m] != nil && 2*len(ids) >= int(metricSeries[m][salt])
		if int64(len(ids))*hours <= 4096 && !most {
			sort.Slice(ids, func(a, b int) bool { return string(entries[ids[a]].TSUID) < string(entries[ids[b]].TSUID) })
			// Every key and its end (the key and a zero byte, as
			// store.RowRange makes it) in one allocation.
			size := 0
			for _, i := range ids {
				size += 2*len(l.AppendRowKey(nil, entries[i].TSUID, h0)) + 1
			}
			keys := make([]byte, 0, size*int(hours))
			for h := h0; h <= h1; h += rowkey.HourMs {
				for _, i := range ids {
					k := len(keys)
					keys = l.AppendRowKey(keys, entries[i].TSUID, h)
					e := len(keys)
					keys = append(append(keys, keys[k:e]...), 0)
					ranges = append(ranges, store.KeyRange{Start: keys[k:e:e], End: keys[e:len(keys):len(keys)]})
				}
			}
		} else {
			var kr store.KeyRange
			kr.Start, kr.End = l.MetricRange(salt, []byte(m), h0, h1)
			ranges = append(ranges, kr)
		}
	}
	sort.Slice(ranges, func(a, b int) bool { return string(ranges[a].Start) < string(ranges[b].Start) })
	var (
		n       int64
		tsuid   []byte
		lastRow []byte
		cur     = -1
		hour    int64
		err     error
		scanErr error
	)
	err = e.st.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
		if string(c.Row) != string(lastRow) {
			lastRow = append(lastRow[:0], c.Row...)
			var s byte
			s, hour, tsuid, err = l.ParseRowKey(tsuid[:0], c.Row)
			if err != nil || s != salt {
				cur = -1
				return true
			}
			i, ok := byTSUID[string(tsuid)]
			if !ok {
				cur = -1
				return true
			}
			cur = i
		}
		if cur < 0 {
			return true
		}
		if chunk.IsHistogramChunk(c.Value) { // hook: histogram.go
			scs[cur].hist = append(scs[cur].hist, cellRef{data: mem.copy(c.Value), hour: hour})
			return true
		}
		// The cell's points are in its hour, from its first point on,
		// which the header holds: a cell wholly in the range is not
		// decoded here, and of one the range cuts only the timestamps
		// are, to count its points in range (none when they are evenly
		// spaced); its values are checked as it is decoded.
		var k, first int64
		var pc int
		var cerr error
		if hour >= start && hour+rowkey.HourMs-1 <= end {
			pc, first, cerr = chunk.Peek(c.Value, hour)
		} else {
			pc, first, cerr = chunk.CountRange(c.Value, hour, start, end)
		}
		if cerr != nil {
			scanErr = fmt.Errorf("query: corrupt cell in row %x: %w", c.Row, cerr)
			return false
		}
		k = int64(pc)
		if k == 0 {
			return true // nothing in range
		}
		n += k
		scs[cur].n += int(k)
		mem.add(scs, cur, cellRef{data: mem.copy(c.Value), hour: hour, first: first})
		return true
	})
	if err == nil {
		err = scanErr
	}
	return n, err
}
