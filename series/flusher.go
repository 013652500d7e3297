package series

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
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
		if err == nil && job == nil {
			// Before busy drops: once Wait sees the batch done, its chunks
			// are out of their series' pending lists too (forgetIdle, which
			// keeps a series with pending chunks, follows a Flush).
			unpend(batch)
		}
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
		}
		if stop {
			return
		}
	}
}

// unpend takes the written chunks out of their series' pending lists.
func unpend(batch []*sealedChunk) {
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
		p, err := f.planRow(ctx, row, ri, first, last, len(pts))
		if err != nil {
			return buf, err
		}
		// The points written are the whole row when no cell stays beside them.
		complete := p.keep.cells == 0 && !ri.foreign
		// Hook (rollup_continue.go): the new points follow the row's own.
		prevLast := p.keep.last
		follows := p.keep.cells > 0 && len(p.overlapping) == 0 && !ri.foreign && prevLast < first
		if len(p.overlapping) > 0 {
			merged = f.mergeCells(row, c.hour, p.stored, p.overlapping, pts, merged[:0])
			pts = merged
		}
		own := p.keep
		var newQuals map[string]bool // the qualifiers written, when cells are rewritten
		for start := 0; start < len(pts); start += f.maxPoints {
			part := pts[start:min(start+f.maxPoints, len(pts))]
			q := rowkey.AppendQualifier(nil, uint32(part[0].T-c.hour), f.writerID)
			b, err := chunk.Append(nil, c.hour, part)
			if err != nil {
				panic("series: a sealed chunk does not encode: " + err.Error())
			}
			muts = append(muts, store.Mutation{Row: row, Qualifier: q, Value: b})
			own.add(cellSpan{first: part[0].T, last: part[len(part)-1].T, n: len(part)})
			if len(p.overlapping) > 0 {
				if newQuals == nil {
					newQuals = map[string]bool{}
				}
				newQuals[string(q)] = true
			}
		}
		for _, cs := range p.overlapping {
			if !newQuals[string(cs.qual)] {
				muts = append(muts, store.Mutation{Row: row, Qualifier: cs.qual, Delete: true})
			}
		}
		ri.own = own
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
