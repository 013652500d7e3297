package series

import (
	"context"
	"math"
	"sort"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/store"
)

// What the flusher remembers of the rows it writes: for each of a series'
// newest few rows, the extent of this writer's cells (cellRun), not each
// cell. A chunk sealed in order starts after the row's last point and
// overlaps none of them, so the extent is all its write needs (whether to
// fold, whether its rollups follow the row's). A chunk that starts at or
// before the row's last point (a late one, or a retried batch) may overlap
// some cells: the row is read again and the chunk is planned from its cells
// (planRow), as a row never seen is. Keeping every cell's span instead grew
// each series' record by a cell every ~30 s through the hour, 16 MB over
// 20,000 series in 7 minutes (docs/benchmarks.md, soak run L).

// rowInfo is what the flusher knows of the cells this writer has in one row.
type rowInfo struct {
	hour int64
	own  cellRun
	// foreign: the row held cells of another writer (or unreadable ones)
	// when it was read; its rollups are computed from the row read back.
	foreign bool
}

// cellRun sums up cells of a row: the extent of their points, and how many
// points and cells they hold.
type cellRun struct {
	first, last int64
	pts, cells  int
}

// add counts one more cell.
func (r *cellRun) add(cs cellSpan) {
	if r.cells == 0 {
		r.first, r.last = cs.first, cs.last
	} else {
		r.first, r.last = min(r.first, cs.first), max(r.last, cs.last)
	}
	r.pts += cs.n
	r.cells++
}

// overlaps reports whether a chunk of points from first to last could
// overlap one of the cells.
func (r cellRun) overlaps(first, last int64) bool {
	return r.cells > 0 && r.last >= first && r.first <= last
}

// runOf sums up cells.
func runOf(cells []cellSpan) cellRun {
	var r cellRun
	for _, cs := range cells {
		r.add(cs)
	}
	return r
}

// cellSpan is one cell of this writer, as read from the store.
type cellSpan struct {
	first, last int64
	n           int    // points
	qual        []byte // the cell's qualifier, shared with the cell read
}

// rowPlan is how a chunk's points go into their row: the cells they are
// merged with and rewrite (each deleted unless its qualifier is written
// again), and what stays beside them.
type rowPlan struct {
	keep        cellRun
	overlapping []cellSpan
	stored      []store.Cell // the row read again, when overlapping is not empty
}

// planRow plans writing n points from first to last into row, whose cells
// ri sums up: an in-order chunk keeps every cell, unless the row's cells
// piled up; otherwise the row is read again and its cells that overlap the
// points are merged with them, or all of them when the row is due to fold.
// It updates ri.foreign from the row read.
func (f *Flusher) planRow(ctx context.Context, row []byte, ri *rowInfo, first, last int64, n int) (rowPlan, error) {
	if !ri.own.overlaps(first, last) && !f.foldDue(ri.own, n) {
		return rowPlan{keep: ri.own}, nil
	}
	stored, err := f.st.ReadRow(ctx, store.TableData, row)
	if err != nil {
		return rowPlan{}, err
	}
	p := rowPlan{stored: stored}
	var keep []cellSpan
	var it chunk.Iterator
	for _, c := range stored {
		cs, ok := f.ownCell(&it, row, ri.hour, c)
		switch {
		case !ok:
			ri.foreign = true
		case cs.last >= first && cs.first <= last:
			p.overlapping = append(p.overlapping, cs)
		default:
			keep = append(keep, cs)
		}
	}
	if f.foldDue(runOf(keep), n+runOf(p.overlapping).pts) {
		// The row's cells piled up: rewrite them all as full cells.
		p.overlapping, keep = append(p.overlapping, keep...), nil
		f.m.rowFolds.Inc()
	}
	p.keep = runOf(keep)
	return p, nil
}

// foldDue reports whether writing merged points into a row whose untouched
// cells are keep would leave the row with more than 2×(the fewest cells
// that hold its points)+FoldSlack cells. Folding then rewrites every cell:
// amortised over the cells that piled up, a late point costs about a
// chunk's worth of rewriting.
func (f *Flusher) foldDue(keep cellRun, merged int) bool {
	maxPts := f.maxPoints
	fewest := (keep.pts + merged + maxPts - 1) / maxPts
	after := keep.cells + (merged+maxPts-1)/maxPts
	return keep.cells > 0 && after > 2*fewest+FoldSlack
}

// mergeCells returns the points of the cells of stored that are among
// cells, with pts laid over them (pts win on equal timestamps), sorted.
func (f *Flusher) mergeCells(row []byte, hour int64, stored []store.Cell, cells []cellSpan, pts, dst []chunk.Point) []chunk.Point {
	want := make(map[string]bool, len(cells))
	for _, c := range cells {
		want[string(c.qual)] = true
	}
	for _, c := range stored {
		if !want[string(c.Qualifier)] {
			continue
		}
		var err error
		if dst, err = chunk.Decode(dst, c.Value, hour); err != nil {
			f.log.Warn("unreadable cell dropped while merging", "row", row, "err", err)
		}
	}
	dst = append(dst, pts...) // last, so they win
	return SortDedup(dst)
}

// rowInfo returns what this writer has in the row, reading the row the first
// time this process seals into that hour of the series.
func (f *Flusher) rowInfo(ctx context.Context, s *memSeries, hour int64, row []byte) (*rowInfo, error) {
	if ri := s.cachedRow(hour); ri != nil {
		return ri, nil
	}
	cells, err := f.st.ReadRow(ctx, store.TableData, row)
	if err != nil {
		return nil, err
	}
	ri := rowInfo{hour: hour}
	var it chunk.Iterator
	for _, c := range cells {
		if cs, ok := f.ownCell(&it, row, hour, c); ok {
			ri.own.add(cs)
		} else {
			ri.foreign = true
		}
	}
	return f.keepRow(s, ri), nil
}

// prefetchRows reads, with one Scan of exact rows, the rows of the batch
// that this writer has not looked at yet, and records them as rowInfo
// would: one request for the batch instead of a ReadRow per row, which on
// Bigtable would be a round trip each, one after the other. The rows older
// than the few the series keeps are returned by row key, for one use.
func (f *Flusher) prefetchRows(ctx context.Context, batch []*sealedChunk) (map[string]*rowInfo, error) {
	type want struct {
		s   *memSeries
		row []byte
		ri  rowInfo
	}
	var wants []*want
	byRow := map[string]*want{}
	for _, c := range batch {
		if c.s.cachedRow(c.hour) != nil {
			continue
		}
		row := f.layout.AppendRowKey(nil, c.s.tsuid, c.hour)
		if byRow[string(row)] != nil {
			continue
		}
		w := &want{s: c.s, row: row, ri: rowInfo{hour: c.hour}}
		byRow[string(row)] = w
		wants = append(wants, w)
	}
	if len(wants) < 2 {
		return nil, nil // rowInfo reads one row as well
	}
	sort.Slice(wants, func(i, j int) bool { return string(wants[i].row) < string(wants[j].row) })
	ranges := make([]store.KeyRange, len(wants))
	for i, w := range wants {
		ranges[i] = store.RowRange(w.row)
	}
	var it chunk.Iterator
	err := f.st.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
		if w := byRow[string(c.Row)]; w != nil {
			if cs, ok := f.ownCell(&it, w.row, w.ri.hour, c); ok {
				w.ri.own.add(cs)
			} else {
				w.ri.foreign = true
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, w := range wants {
		f.keepRow(w.s, w.ri)
	}
	// Late chunks of many old hours of one series: without this, each of
	// the rows keepRow did not keep would be read again by rowInfo.
	uncached := map[string]*rowInfo{}
	for _, w := range wants {
		if w.s.cachedRow(w.ri.hour) == nil {
			uncached[string(w.row)] = &w.ri
		}
	}
	return uncached, nil
}

// cachedRow returns what the flusher recorded of the series' row of hour, or nil.
func (s *memSeries) cachedRow(hour int64) *rowInfo {
	for i := range s.rows {
		if s.rows[i].hour == hour {
			return &s.rows[i]
		}
	}
	return nil
}

// ownCell returns the time span of a cell of row that this writer wrote;
// false for another writer's cell or one that does not decode. The span's
// qualifier is the cell's.
func (f *Flusher) ownCell(it *chunk.Iterator, row []byte, hour int64, c store.Cell) (cellSpan, bool) {
	_, writer, err := rowkey.ParseQualifier(c.Qualifier)
	if err != nil || writer != f.writerID {
		return cellSpan{}, false
	}
	if err := it.Reset(c.Value, hour); err != nil {
		f.log.Warn("unreadable cell", "row", row, "err", err)
		return cellSpan{}, false
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	n := 0
	for it.Next() {
		t, _ := it.At()
		first, last = min(first, t), max(last, t)
		n++
	}
	if first > last {
		return cellSpan{}, false
	}
	return cellSpan{first: first, last: last, n: n, qual: c.Qualifier}, true
}

// keepRow records ri among the series' newest few rows and returns it; older
// rows are read again if ever needed, and a row older than those kept is
// returned for one use.
func (f *Flusher) keepRow(s *memSeries, ri rowInfo) *rowInfo {
	s.rows = append(s.rows, ri)
	sort.Slice(s.rows, func(i, j int) bool { return s.rows[i].hour > s.rows[j].hour })
	if len(s.rows) > 3 {
		s.rows = s.rows[:3]
	}
	if r := s.cachedRow(ri.hour); r != nil {
		return r
	}
	return &ri
}
