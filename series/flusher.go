package series

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/store"
)

// Flusher writes what the head seals to the store, on one goroutine: sealed
// chunks become cells, merged with the cells this writer already has in
// their rows (read once, then remembered for the series' newest rows) and
// folded when a row's cells pile up; index mutations go to the index table,
// announced in this node's feed first when nodes share the store; delete
// jobs run alone, in queue order (the Deleter's part). A failed write puts
// the batch back in front and is retried with backoff; while writes fail,
// Failing reports it. It is safe for concurrent use.
type Flusher struct {
	st store.Store
	// deferred is st when it can leave the chunks' durability to the WAL
	// (store.DeferredWriter): chunks are written without a sync of the
	// store's own log, and the head syncs the store before it truncates
	// the WAL segments that hold them (Head.truncateWAL). Nil otherwise:
	// every Write is durable.
	deferred  store.DeferredWriter
	layout    rowkey.Layout
	writerID  uint16
	maxPoints int
	retention time.Duration
	now       func() time.Time
	log       *slog.Logger
	m         *metrics

	// feed announces index mutations to the other nodes; nil when alone.
	feed *indexSync
	// runDelete is the Deleter's part of a delete job (delete.go).
	runDelete func(context.Context, *deleteJob) error
	// closing reports that a close waits for the queue: retry sooner.
	closing func() bool
	// rollups computes the rollups of the rows written (rollup.go); nil
	// when there are none.
	rollups *rollupWriter

	mu      sync.Mutex
	cond    *sync.Cond
	q       []*sealedChunk
	busy    int          // chunks taken by the flusher but not yet written
	jobs    []*deleteJob // queued or running; their tombstones hold the WAL
	idxQ    []store.Mutation
	err     error
	failing atomic.Bool // set while the writes to the store fail
}

// FlusherOptions configures a Flusher.
type FlusherOptions struct {
	Layout         rowkey.Layout
	WriterID       uint16
	ChunkMaxPoints int
	// Retention: chunks whose hour is past it are dropped, not written.
	Retention time.Duration
	Now       func() time.Time
	Logger    *slog.Logger
}

// NewFlusher returns a flusher writing to st. Run runs it.
func NewFlusher(st store.Store, opts FlusherOptions) *Flusher {
	f := &Flusher{
		st: st, layout: opts.Layout, writerID: opts.WriterID, maxPoints: opts.ChunkMaxPoints,
		retention: opts.Retention, now: opts.Now, log: opts.Logger,
		closing: func() bool { return false },
	}
	f.cond = sync.NewCond(&f.mu)
	f.deferred, _ = st.(store.DeferredWriter)
	return f
}

// syncStore makes every chunk written so far durable in the store: a no-op
// when each write already was.
func (f *Flusher) syncStore(ctx context.Context) error {
	if f.deferred == nil {
		return nil
	}
	return f.deferred.Sync(ctx)
}

// Failing reports whether the last write to the store failed.
func (f *Flusher) Failing() bool { return f.failing.Load() }

// queued returns the chunks waiting or being written.
func (f *Flusher) queued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.q) + f.busy
}

// queueDelete queues a delete job behind every chunk queued before it.
func (f *Flusher) queueDelete(job *deleteJob) {
	f.mu.Lock()
	f.q = append(f.q, &sealedChunk{del: job})
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	f.cond.Broadcast()
}

// lowWater returns the lowest of low and the tombstone segments of the
// delete jobs not yet done.
func (f *Flusher) lowWater(low int) int {
	f.mu.Lock()
	for _, d := range f.jobs {
		low = min(low, d.minSeg)
	}
	f.mu.Unlock()
	return low
}

// takeIndex returns and clears the queued index mutations.
func (f *Flusher) takeIndex() []store.Mutation {
	f.mu.Lock()
	idx := f.idxQ
	f.idxQ = nil
	f.mu.Unlock()
	return idx
}

// Wait returns once everything queued is in the store, or when ctx is
// done (naming the last failure, if a write failed).
func (f *Flusher) Wait(ctx context.Context) error {
	// The flusher retries failed writes on its own; wait for it until ctx
	// is done, waking when it is.
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.q) > 0 || f.busy > 0 || len(f.idxQ) > 0 {
		if err := ctx.Err(); err != nil {
			if f.err != nil {
				return fmt.Errorf("series: flushing the head: %w (the last write to the store failed: %v)", err, f.err)
			}
			return err
		}
		f.cond.Wait()
	}
	return nil
}

// flushBatch bounds the chunks written in one store call.
const flushBatch = 4096

// run writes sealed chunks and index entries to the store, in batches,
// until it takes the nil chunk that stop queues.
func (f *Flusher) run() {
	ctx := context.Background()
	var buf []byte
	backoff := 100 * time.Millisecond
	for {
		f.mu.Lock()
		for len(f.q) == 0 && len(f.idxQ) == 0 {
			f.cond.Wait()
		}
		n := min(len(f.q), flushBatch)
		// A delete runs alone, after the chunks queued before it.
		for i, c := range f.q[:n] {
			if c != nil && c.del != nil {
				n = max(i, 1)
				break
			}
		}
		batch := append([]*sealedChunk(nil), f.q[:n]...)
		// Clear the taken slots: f.q[n:] leaves them in the backing array,
		// before the slice, where they kept every written chunk's points
		// alive until an append outgrew the array (a whole sealing wave).
		clear(f.q[:n])
		f.q = f.q[n:]
		idx := f.idxQ
		f.idxQ = nil
		f.busy += len(batch)
		f.mu.Unlock()

		stop := false
		if k := len(batch); k > 0 && batch[k-1] == nil {
			batch, stop = batch[:k-1], true
			f.mu.Lock()
			f.busy--
			f.mu.Unlock()
		}
		var err error
		if len(idx) > 0 {
			err = f.writeIndex(ctx, idx) // hook: announces them to other nodes first
		}
		var job *deleteJob
		if len(batch) == 1 && batch[0].del != nil {
			job = batch[0].del
			if err == nil {
				err = f.runDelete(ctx, job)
			}
		} else if err == nil && len(batch) > 0 {
			buf, err = f.writeChunks(ctx, batch, buf)
		}
		f.failing.Store(err != nil) // hook: Append refuses writes when this lasts
		f.mu.Lock()
		f.busy -= len(batch)
		if err != nil {
			// Put everything back in front and try again later; the WAL
			// still holds all of it.
			f.q = append(batch, f.q...)
			f.idxQ = append(idx, f.idxQ...)
			f.err = err
		} else {
			f.err = nil
		}
		f.mu.Unlock()
		f.cond.Broadcast()
		if err != nil {
			f.m.flushErrors.Inc()
			f.log.Error("writing sealed chunks to the store failed; retrying", "chunks", len(batch), "err", err)
			if stop {
				return
			}
			wait := backoff
			if f.closing() {
				wait = min(wait, 250*time.Millisecond) // Close is waiting for us
			}
			time.Sleep(wait)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if job != nil {
			f.mu.Lock()
			for i, d := range f.jobs {
				if d == job {
					f.jobs = slices.Delete(f.jobs, i, i+1)
					break
				}
			}
			f.mu.Unlock()
			close(job.done)
		} else if len(batch) > 0 {
			for _, c := range batch {
				s := c.s
				s.mu.Lock()
				for i, p := range s.pending {
					if p == c {
						// slices.Delete zeroes the freed tail slot, which otherwise kept
						// the series' last flushed chunk (its points) alive.
						s.pending = slices.Delete(s.pending, i, i+1)
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
func (f *Flusher) writeChunks(ctx context.Context, batch []*sealedChunk, buf []byte) ([]byte, error) {
	// Hook: the rows the loop below would read one by one, read at once (on
	// Bigtable every read is a round trip).
	uncached, err := f.prefetchRows(ctx, batch)
	if err != nil {
		return buf, err
	}
	var muts []store.Mutation
	var rolled []rollupRow // hook (rollup.go): the rows whose rollups follow
	layout := f.layout
	var merged []chunk.Point
	cutoff := int64(math.MinInt64)
	if f.retention > 0 {
		cutoff = retentionCutoff(f.now(), f.retention)
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
			if ri, err = f.rowInfo(ctx, s, c.hour, row); err != nil {
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
		if f.foldDue(keep, overlapping, len(pts)) {
			// The row's cells piled up: rewrite them all as full cells.
			overlapping, keep = append(overlapping, keep...), keep[:0]
			f.m.rowFolds.Inc()
		}
		// The points written are the whole row when no cell stays beside them.
		complete := len(keep) == 0 && !ri.foreign
		// Hook (rollup_continue.go): the new points follow the row's own.
		prevLast, follows := rowLastT(keep)
		follows = follows && len(overlapping) == 0 && !ri.foreign && prevLast < first
		ri.cells = keep
		if len(overlapping) > 0 {
			merged, err = f.mergeCells(ctx, row, c.hour, overlapping, pts, merged[:0])
			if err != nil {
				return buf, err
			}
			pts = merged
		}
		newQuals := map[string]bool{}
		for start := 0; start < len(pts); start += f.maxPoints {
			part := pts[start:min(start+f.maxPoints, len(pts))]
			q := rowkey.AppendQualifier(nil, uint32(part[0].T-c.hour), f.writerID)
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
		if f.rollups != nil {
			r := rollupRow{tsuid: s.tsuid, hour: c.hour, complete: complete}
			if complete {
				r.buckets = f.rollups.hourBuckets(pts)
			} else if follows {
				r.follows, r.prevLast, r.pts = true, prevLast, pts
			}
			rolled = append(rolled, r)
		}
	}
	write := f.st.Write
	if f.deferred != nil {
		write = f.deferred.WriteDeferred // durable at the next syncStore
	}
	if err := write(ctx, store.TableData, muts); err != nil {
		// What we believe of the rows may be wrong now: forget it.
		for _, c := range batch {
			c.s.rows = nil
		}
		return buf, err
	}
	// The chunks leave the head (and the WAL) only once their rollups are
	// written too: a failure retries the batch, a crash replays it.
	if err := f.rollups.write(ctx, rolled); err != nil {
		return buf, err
	}
	f.m.chunksWritten.Add(float64(len(batch)))
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
			ri.cells = append(ri.cells, cs)
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
				w.ri.cells = append(w.ri.cells, cs)
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
// false for another writer's cell or one that does not decode.
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
	return cellSpan{first: first, last: last, n: n, qual: append([]byte(nil), c.Qualifier...)}, true
}

// keepRow records ri among the series' newest few rows and returns it; older
// rows are read again if ever needed, and a row older than those kept is
// returned for one use.
func (f *Flusher) keepRow(s *memSeries, ri rowInfo) *rowInfo {
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
func (f *Flusher) mergeCells(ctx context.Context, row []byte, hour int64, cells []cellSpan, pts, dst []chunk.Point) ([]chunk.Point, error) {
	stored, err := f.st.ReadRow(ctx, store.TableData, row)
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
			f.log.Warn("unreadable cell dropped while merging", "row", row, "err", err)
		}
	}
	dst = append(dst, pts...) // last, so they win
	return SortDedup(dst), nil
}

func (f *Flusher) enqueue(cs []*sealedChunk) {
	f.mu.Lock()
	f.q = append(f.q, cs...)
	f.mu.Unlock()
	f.cond.Broadcast()
	f.m.chunksSealed.Add(float64(len(cs)))
}

func (f *Flusher) queueIndex(muts []store.Mutation) {
	f.mu.Lock()
	f.idxQ = append(f.idxQ, muts...)
	f.mu.Unlock()
	f.cond.Broadcast()
}

func (f *Flusher) stop() {
	f.mu.Lock()
	f.q = append(f.q, nil) // a nil chunk tells the flusher to stop
	f.mu.Unlock()
	f.cond.Broadcast()
}

// foldDue reports whether writing pts points into a row whose cells are
// keep (untouched) and overlapping (merged with the points) would leave the
// row with more than 2×(the fewest cells that hold its points)+FoldSlack
// cells. Folding then rewrites every cell: amortised over the cells that
// piled up, a late point costs about a chunk's worth of rewriting.
func (f *Flusher) foldDue(keep, overlapping []cellSpan, pts int) bool {
	maxPts := f.maxPoints
	merged := pts
	for _, c := range overlapping {
		merged += c.n
	}
	total := merged
	for _, c := range keep {
		total += c.n
	}
	fewest := (total + maxPts - 1) / maxPts
	after := len(keep) + (merged+maxPts-1)/maxPts
	return len(keep) > 0 && after > 2*fewest+FoldSlack
}

// writeIndex persists index mutations. With the index sync on, it first
// announces them in this node's feed (see above); otherwise it is one Write.
func (f *Flusher) writeIndex(ctx context.Context, idx []store.Mutation) error {
	if f.feed != nil {
		if err := f.feed.publish(ctx, idx); err != nil {
			return err
		}
	}
	return f.st.Write(ctx, store.TableIndex, idx)
}
