// Package query is the read path: it resolves a metric and tag filters to
// series through the index, scans the data table once per salt bucket in
// parallel, merges what the store holds with what the head holds, and hands
// each series' points in time order to the aggregation pipeline (pipeline.go),
// which both the OpenTSDB and the Prometheus dialects use.
package query

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// Limits bound one query. Zero means no limit.
type Limits struct {
	MaxSeries int // series a query may touch
	MaxPoints int // raw points a query may read
}

// LimitError says which limit a query exceeded; the edge maps it to 413.
type LimitError struct {
	What  string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("query exceeds the limit of %d %s; narrow the filters or the time range, or raise the limit", e.Limit, e.What)
}

// ErrLimit is what every LimitError unwraps to.
var ErrLimit = errors.New("query limit exceeded")

func (e *LimitError) Unwrap() error { return ErrLimit }

// Selector picks series and a time range.
type Selector struct {
	Metric       string
	Matchers     []series.Matcher
	ExplicitTags bool
	Start, End   int64 // ms, both inclusive
}

// Series is one series and its points in the selected range, sorted, one per timestamp.
type Series struct {
	Labels series.Labels
	TSUID  []byte
	Points []chunk.Point
}

// Engine runs reads over a head and its store. It is safe for concurrent use.
type Engine struct {
	head   *series.Head
	st     store.Store
	layout rowkey.Layout
	limits Limits
}

// NewEngine returns an engine over head.
func NewEngine(head *series.Head, limits Limits) *Engine {
	return &Engine{head: head, st: head.Store(), layout: head.Layout(), limits: limits}
}

// Head returns the head the engine reads.
func (e *Engine) Head() *series.Head { return e.head }

// Limits returns the engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

// Select returns the selected series with their points, sorted by labels.
func (e *Engine) Select(ctx context.Context, sel Selector) ([]Series, error) {
	entries := e.head.Index().Select(sel.Metric, sel.Matchers, sel.ExplicitTags, sel.Start, sel.End)
	if e.limits.MaxSeries > 0 && len(entries) > e.limits.MaxSeries {
		return nil, &LimitError{What: "series", Limit: e.limits.MaxSeries}
	}
	return e.read(ctx, entries, sel.Start, sel.End, e.limits.MaxPoints)
}

// ReadEntries returns the points of the given index entries in [start, end].
func (e *Engine) ReadEntries(ctx context.Context, entries []*series.Entry, start, end int64) ([]Series, error) {
	return e.read(ctx, entries, start, end, e.limits.MaxPoints)
}

// read returns the points of entries in [start, end]; more than maxPoints
// raw points read from the store (0: no limit) is a LimitError.
func (e *Engine) read(ctx context.Context, entries []*series.Entry, start, end int64, maxPoints int) ([]Series, error) {
	if len(entries) == 0 || end < start {
		return nil, nil
	}
	out := make([]Series, len(entries))
	// The head first: a chunk leaves the head only once it is in the store,
	// so whatever the snapshot misses the scan below sees.
	heads := make([][]chunk.Point, len(entries))
	var total int64 // points read, the head's and the store's
	for i, en := range entries {
		out[i] = Series{Labels: en.Labels, TSUID: en.TSUID}
		heads[i] = e.head.Snapshot(en.Labels, start, end, nil)
		total += int64(len(heads[i]))
	}
	if maxPoints > 0 && total > int64(maxPoints) {
		return nil, &LimitError{What: "points", Limit: maxPoints}
	}
	buckets := map[byte][]int{}
	for i, en := range entries {
		buckets[en.Salt] = append(buckets[en.Salt], i)
	}
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, runtime.GOMAXPROCS(0)*2)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for salt, idx := range buckets {
		wg.Add(1)
		sem <- struct{}{}
		go func(salt byte, idx []int) {
			defer func() { <-sem; wg.Done() }()
			n, err := e.scanBucket(ctx, salt, entries, idx, out, start, end)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err == nil && maxPoints > 0 && total > int64(maxPoints) {
				err = &LimitError{What: "points", Limit: maxPoints}
			}
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
		}(salt, idx)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for i := range out {
		out[i].Points = mergeHead(series.SortDedup(out[i].Points), heads[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}

// scanBucket reads the rows of one salt bucket for the series idx of entries.
func (e *Engine) scanBucket(ctx context.Context, salt byte, entries []*series.Entry, idx []int, out []Series, start, end int64) (int64, error) {
	l := e.layout
	mw := l.MetricWidth
	h0, h1 := rowkey.HourOf(start), rowkey.HourOf(end)
	byTSUID := make(map[string]int, len(idx))
	for _, i := range idx {
		byTSUID[string(entries[i].TSUID)] = i
	}
	// Group the series by metric UID (one metric per query in practice).
	metrics := map[string][]int{}
	for _, i := range idx {
		m := string(entries[i].TSUID[:mw])
		metrics[m] = append(metrics[m], i)
	}
	var ranges []store.KeyRange
	hours := (h1-h0)/rowkey.HourMs + 1
	for m, ids := range metrics {
		// Exact rows when they are few; one range per metric otherwise,
		// filtering rows of series not asked for as they pass.
		if int64(len(ids))*hours <= 4096 {
			sort.Slice(ids, func(a, b int) bool { return string(entries[ids[a]].TSUID) < string(entries[ids[b]].TSUID) })
			for h := h0; h <= h1; h += rowkey.HourMs {
				for _, i := range ids {
					ranges = append(ranges, store.RowRange(l.AppendRowKey(nil, entries[i].TSUID, h)))
				}
			}
		} else {
			ranges = append(ranges, l.MetricRange(salt, []byte(m), h0, h1))
		}
	}
	sort.Slice(ranges, func(a, b int) bool { return string(ranges[a].Start) < string(ranges[b].Start) })
	var (
		n       int64
		it      chunk.Iterator
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
		if err := it.Reset(c.Value, hour); err != nil {
			scanErr = fmt.Errorf("query: corrupt cell in row %x: %w", c.Row, err)
			return false
		}
		if hour < start && !it.SeekTo(start) {
			return true
		} else if hour >= start && !it.Next() {
			return true
		}
		pts := out[cur].Points
		for {
			t, v := it.At()
			if t > end {
				break
			}
			pts = append(pts, chunk.Point{T: t, V: v})
			n++
			if !it.Next() {
				break
			}
		}
		if err := it.Err(); err != nil {
			scanErr = fmt.Errorf("query: corrupt cell in row %x: %w", c.Row, err)
			return false
		}
		out[cur].Points = pts
		return true
	})
	if err == nil {
		err = scanErr
	}
	return n, err
}

// mergeHead merges the head's points over the store's: the head wins on equal timestamps.
func mergeHead(stored, head []chunk.Point) []chunk.Point {
	if len(head) == 0 {
		return stored
	}
	if len(stored) == 0 {
		return head
	}
	out := make([]chunk.Point, 0, len(stored)+len(head))
	i, j := 0, 0
	for i < len(stored) && j < len(head) {
		switch {
		case stored[i].T < head[j].T:
			out = append(out, stored[i])
			i++
		case stored[i].T > head[j].T:
			out = append(out, head[j])
			j++
		default:
			out = append(out, head[j])
			i++
			j++
		}
	}
	out = append(out, stored[i:]...)
	return append(out, head[j:]...)
}
