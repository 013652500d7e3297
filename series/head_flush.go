package series

import (
	"context"
	"math"
	"sort"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/store"
)

// flushBatch bounds the chunks written in one store call.
const flushBatch = 4096

// flusher writes sealed chunks and index entries to the store, in batches,
// until it takes the nil chunk that stopChannel queues.
func (h *Head) flusher() {
	defer h.done.Done()
	ctx := context.Background()
	var buf []byte
	backoff := 100 * time.Millisecond
	for {
		h.flushMu.Lock()
		for len(h.flushQ) == 0 && len(h.idxQ) == 0 {
			h.flushCond.Wait()
		}
		n := min(len(h.flushQ), flushBatch)
		// A delete runs alone, after the chunks queued before it.
		for i, c := range h.flushQ[:n] {
			if c != nil && c.del != nil {
				n = max(i, 1)
				break
			}
		}
		batch := append([]*sealedChunk(nil), h.flushQ[:n]...)
		h.flushQ = h.flushQ[n:]
		idx := h.idxQ
		h.idxQ = nil
		h.flushBusy += len(batch)
		h.flushMu.Unlock()

		stop := false
		if k := len(batch); k > 0 && batch[k-1] == nil {
			batch, stop = batch[:k-1], true
			h.flushMu.Lock()
			h.flushBusy--
			h.flushMu.Unlock()
		}
		var err error
		if len(idx) > 0 {
			err = h.writeIndex(ctx, idx) // hook: announces them to other nodes first
		}
		var job *deleteJob
		if len(batch) == 1 && batch[0].del != nil {
			job = batch[0].del
			if err == nil {
				err = h.runDelete(ctx, job)
			}
		} else if err == nil && len(batch) > 0 {
			buf, err = h.writeChunks(ctx, batch, buf)
		}
		h.storeFailing.Store(err != nil) // hook: Append refuses writes when this lasts
		h.flushMu.Lock()
		h.flushBusy -= len(batch)
		if err != nil {
			// Put everything back in front and try again later; the WAL
			// still holds all of it.
			h.flushQ = append(batch, h.flushQ...)
			h.idxQ = append(idx, h.idxQ...)
			h.flushErr = err
		} else {
			h.flushErr = nil
		}
		h.flushMu.Unlock()
		h.flushCond.Broadcast()
		if err != nil {
			h.m.flushErrors.Inc()
			h.opts.Logger.Error("writing sealed chunks to the store failed; retrying", "chunks", len(batch), "err", err)
			if stop {
				return
			}
			wait := backoff
			if h.closed.Load() {
				wait = min(wait, 250*time.Millisecond) // Close is waiting for us
			}
			time.Sleep(wait)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if job != nil {
			h.flushMu.Lock()
			for i, d := range h.deletes {
				if d == job {
					h.deletes = append(h.deletes[:i], h.deletes[i+1:]...)
					break
				}
			}
			h.flushMu.Unlock()
			close(job.done)
		} else if len(batch) > 0 {
			for _, c := range batch {
				s := c.s
				s.mu.Lock()
				for i, p := range s.pending {
					if p == c {
						s.pending = append(s.pending[:i], s.pending[i+1:]...)
						break
					}
				}
				s.mu.Unlock()
			}
		}
		if stop {
			return
		}
	}
}

// writeChunks encodes a batch of sealed chunks into cells and writes them.
// A chunk whose time span overlaps cells this writer already has in its row
// is merged with them (the chunk's points win) and the row's overlapping
// cells are rewritten, so every timestamp is in at most one of our cells.
func (h *Head) writeChunks(ctx context.Context, batch []*sealedChunk, buf []byte) ([]byte, error) {
	// Hook: the rows the loop below would read one by one, read at once (on
	// Bigtable every read is a round trip).
	uncached, err := h.prefetchRows(ctx, batch)
	if err != nil {
		return buf, err
	}
	var muts []store.Mutation
	layout := h.opts.Layout
	var merged []chunk.Point
	cutoff := int64(math.MinInt64)
	if h.opts.Retention > 0 {
		cutoff = h.retentionCutoff(h.opts.Now())
	}
	for _, w := range rowWork(batch) {
		c, pts := w.c, w.pts
		if c.hour < cutoff {
			// Past the retention while it waited (or replayed from an old
			// WAL): the row would only be dropped again.
			continue
		}
		s := c.s
		row := layout.AppendRowKey(nil, s.tsuid, c.hour)
		ri := uncached[string(row)]
		if ri == nil {
			if ri, err = h.rowInfo(ctx, s, c.hour, row); err != nil {
				return buf, err
			}
		}
		first, last := pts[0].T, pts[len(pts)-1].T
		var overlapping []cellSpan
		keep := ri.cells[:0]
		for _, cs := range ri.cells {
			if cs.last >= first && cs.first <= last {
				overlapping = append(overlapping, cs)
			} else {
				keep = append(keep, cs)
			}
		}
		if h.foldDue(keep, overlapping, len(pts)) {
			// The row's cells piled up: rewrite them all as full cells.
			overlapping, keep = append(overlapping, keep...), keep[:0]
			h.m.rowFolds.Inc()
		}
		ri.cells = keep
		if len(overlapping) > 0 {
			merged, err = h.mergeCells(ctx, row, c.hour, overlapping, pts, merged[:0])
			if err != nil {
				return buf, err
			}
			pts = merged
		}
		newQuals := map[string]bool{}
		for start := 0; start < len(pts); start += h.opts.ChunkMaxPoints {
			part := pts[start:min(start+h.opts.ChunkMaxPoints, len(pts))]
			q := rowkey.AppendQualifier(nil, uint32(part[0].T-c.hour), h.opts.WriterID)
			b, err := chunk.Append(nil, c.hour, part)
			if err != nil {
				panic("series: a sealed chunk does not encode: " + err.Error())
			}
			muts = append(muts, store.Mutation{Row: row, Qualifier: q, Value: b})
			ri.cells = append(ri.cells, cellSpan{first: part[0].T, last: part[len(part)-1].T, n: len(part), qual: q})
			newQuals[string(q)] = true
		}
		for _, cs := range overlapping {
			if !newQuals[string(cs.qual)] {
				muts = append(muts, store.Mutation{Row: row, Qualifier: cs.qual, Delete: true})
			}
		}
		sort.Slice(ri.cells, func(i, j int) bool { return ri.cells[i].first < ri.cells[j].first })
	}
	if err := h.st.Write(ctx, store.TableData, muts); err != nil {
		// What we believe of the rows may be wrong now: forget it.
		for _, c := range batch {
			c.s.rows = nil
		}
		return buf, err
	}
	h.m.chunksWritten.Add(float64(len(batch)))
	return buf, nil
}

// chunkWork is the points a batch writes into one row.
type chunkWork struct {
	c   *sealedChunk
	pts []chunk.Point
}

// rowWork returns the batch's points by row: the chunks of one row (a late
// point sealed again into an hour already sealed, or a full chunk and the
// next) become one, later chunks winning on equal timestamps, so that no
// chunk is merged with cells of the same batch that are not in the store yet.
func rowWork(batch []*sealedChunk) []chunkWork {
	type rowID struct {
		s    *memSeries
		hour int64
	}
	work := make([]chunkWork, 0, len(batch))
	at := make(map[rowID]int, len(batch))
	for _, c := range batch {
		c.s.mu.Lock()
		pts := c.pts // a delete may have replaced them (delete.go)
		c.s.mu.Unlock()
		if len(pts) == 0 {
			continue
		}
		k := rowID{c.s, c.hour}
		if i, ok := at[k]; ok {
			all := make([]chunk.Point, 0, len(work[i].pts)+len(pts))
			work[i].pts = SortDedup(append(append(all, work[i].pts...), pts...))
			continue
		}
		at[k] = len(work)
		work = append(work, chunkWork{c: c, pts: pts})
	}
	return work
}

// rowInfo returns what this writer has in the row, reading the row the first
// time this process seals into that hour of the series.
func (h *Head) rowInfo(ctx context.Context, s *memSeries, hour int64, row []byte) (*rowInfo, error) {
	if ri := s.cachedRow(hour); ri != nil {
		return ri, nil
	}
	cells, err := h.st.ReadRow(ctx, store.TableData, row)
	if err != nil {
		return nil, err
	}
	ri := rowInfo{hour: hour}
	var it chunk.Iterator
	for _, c := range cells {
		if cs, ok := h.ownCell(&it, row, hour, c); ok {
			ri.cells = append(ri.cells, cs)
		}
	}
	return h.keepRow(s, ri), nil
}

// prefetchRows reads, with one Scan of exact rows, the rows of the batch
// that this writer has not looked at yet, and records them as rowInfo
// would: one request for the batch instead of a ReadRow per row, which on
// Bigtable would be a round trip each, one after the other. The rows older
// than the few the series keeps are returned by row key, for one use.
func (h *Head) prefetchRows(ctx context.Context, batch []*sealedChunk) (map[string]*rowInfo, error) {
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
		row := h.opts.Layout.AppendRowKey(nil, c.s.tsuid, c.hour)
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
	err := h.st.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
		if w := byRow[string(c.Row)]; w != nil {
			if cs, ok := h.ownCell(&it, w.row, w.ri.hour, c); ok {
				w.ri.cells = append(w.ri.cells, cs)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, w := range wants {
		h.keepRow(w.s, w.ri)
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
// false for another writer's cell or one that does not decode.
func (h *Head) ownCell(it *chunk.Iterator, row []byte, hour int64, c store.Cell) (cellSpan, bool) {
	_, writer, err := rowkey.ParseQualifier(c.Qualifier)
	if err != nil || writer != h.opts.WriterID {
		return cellSpan{}, false
	}
	if err := it.Reset(c.Value, hour); err != nil {
		h.opts.Logger.Warn("unreadable cell", "row", row, "err", err)
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
	return cellSpan{first: first, last: last, n: n, qual: append([]byte(nil), c.Qualifier...)}, true
}

// keepRow records ri among the series' newest few rows and returns it; older
// rows are read again if ever needed, and a row older than those kept is
// returned for one use.
func (h *Head) keepRow(s *memSeries, ri rowInfo) *rowInfo {
	sort.Slice(ri.cells, func(i, j int) bool { return ri.cells[i].first < ri.cells[j].first })
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

// mergeCells returns the points of the overlapping cells with pts laid over
// them (pts win on equal timestamps), sorted.
func (h *Head) mergeCells(ctx context.Context, row []byte, hour int64, cells []cellSpan, pts, dst []chunk.Point) ([]chunk.Point, error) {
	stored, err := h.st.ReadRow(ctx, store.TableData, row)
	if err != nil {
		return dst, err
	}
	want := map[string]bool{}
	for _, c := range cells {
		want[string(c.qual)] = true
	}
	for _, c := range stored {
		if !want[string(c.Qualifier)] {
			continue
		}
		if dst, err = chunk.Decode(dst, c.Value, hour); err != nil {
			h.opts.Logger.Warn("unreadable cell dropped while merging", "row", row, "err", err)
		}
	}
	dst = append(dst, pts...) // last, so they win
	return SortDedup(dst), nil
}

// sweeper seals chunks whose hour has passed, bounds the WAL, truncates it
// and forgets idle series.
func (h *Head) sweeper() {
	defer h.done.Done()
	t := time.NewTicker(h.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.sweep()
		}
	}
}

func (h *Head) sweep() {
	now := h.opts.Now().UnixMilli()
	graceMs := h.opts.Grace.Milliseconds()
	h.sealWhere(func(c *openChunk) bool { return h.due(c, now, graceMs) })
	if h.log.Size() > h.opts.WALMaxBytes {
		oldest := h.lowWater()
		h.sealWhere(func(c *openChunk) bool { return c.minSeg <= oldest })
	}
	h.truncateWAL()
	h.forgetIdle(now)
}

// lowWater returns the oldest WAL segment that holds a point not yet in the store.
func (h *Head) lowWater() int {
	low := h.log.Segment()
	h.inflightMu.Lock()
	for seg := range h.inflight {
		low = min(low, seg)
	}
	h.inflightMu.Unlock()
	h.flushMu.Lock()
	for _, d := range h.deletes {
		low = min(low, d.minSeg)
	}
	h.flushMu.Unlock()
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, s := range sh.m {
			s.mu.Lock()
			for _, c := range s.open {
				low = min(low, c.minSeg)
			}
			for _, c := range s.pending {
				low = min(low, c.minSeg)
			}
			s.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	return low
}

func (h *Head) truncateWAL() {
	low := h.lowWater()
	// Index entries of series defined in the segments about to go must be
	// in the store first.
	h.flushMu.Lock()
	idx := h.idxQ
	h.idxQ = nil
	h.flushMu.Unlock()
	if len(idx) > 0 {
		if err := h.writeIndex(context.Background(), idx); err != nil {
			h.queueIndex(idx)
			return
		}
	}
	if err := h.log.Truncate(low); err != nil {
		h.opts.Logger.Warn("truncating the wal", "err", err)
	}
}

// forgetIdle drops series with nothing in the head that were not written for two hours.
func (h *Head) forgetIdle(now int64) {
	idle := int64(2 * time.Hour / time.Millisecond)
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		for l, s := range sh.m {
			s.mu.Lock()
			gone := len(s.open) == 0 && len(s.pending) == 0 && now-s.lastAppend > idle
			s.gone = gone
			s.mu.Unlock()
			if gone {
				delete(sh.m, l)
				h.m.series.Dec()
			}
		}
		sh.mu.Unlock()
	}
}
