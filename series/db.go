package series

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"

	"hourglass/rowkey"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/uid"
)

// DB is the engine as one piece: the Head, the Flusher beside it, and the
// jobs that use them with the index and the store: the Deleter, the
// Retention, the index feed (indexSync) and the Snapshotter. Open wires the
// store, the UID table and the index it is given into each and starts
// them in order; Close stops them. As in Prometheus' tsdb, the head holds
// only what is in memory and its WAL; writing to the store and the jobs
// that rewrite it live beside it. DB embeds the Head, so appends, reads of
// the head and its statistics are DB's methods too.
type DB struct {
	*Head
	flusher   *Flusher
	deleter   *Deleter
	retention *Retention
	snapshots *Snapshotter
	feed      *indexSync // nil unless Options.IndexSync.Interval is set

	done sync.WaitGroup // the background goroutines
}

// Open starts the engine over st, uids and idx (LoadIndex), all laid out as
// opts.Layout says: on Bigtable it runs one round of the index sync, starts
// the flusher, replays the WAL in opts.WAL.Dir into a new head, opens the
// WAL and starts the sweeper, the index sync loop and the retention loop.
func Open(ctx context.Context, st store.Store, uids *uid.Table, idx *Index, opts Options) (*DB, error) {
	opts.fill()
	if err := opts.Rollup.Validate(); err != nil {
		return nil, fmt.Errorf("series: %w", err)
	}
	fl := NewFlusher(st, FlusherOptions{Layout: opts.Layout, WriterID: opts.WriterID,
		ChunkMaxPoints: opts.ChunkMaxPoints, Retention: opts.Retention, Now: opts.Now, Logger: opts.Logger})
	h := &Head{
		seed:     maphash.MakeSeed(),
		opts:     opts,
		uids:     uids,
		index:    idx,
		fl:       fl,
		inflight: map[int]int{},
		stop:     make(chan struct{}),
		started:  opts.Now(),
	}
	for i := range h.shards {
		h.shards[i].m = map[Labels]*memSeries{}
	}
	h.m = newMetrics(opts.Registerer, h)
	h.exemplars = newExemplarStore(opts.Exemplars, opts.Registerer) // hook: exemplar.go
	fl.m = h.m
	fl.closing = h.closed.Load
	fl.rollups = newRollupWriter(st, opts.Layout, opts.Rollup, opts.Logger, opts.Registerer)
	db := &DB{
		Head:      h,
		flusher:   fl,
		deleter:   NewDeleter(h, st, uids, idx, opts.Layout, opts.Logger),
		retention: NewRetention(st, idx, h, opts),
		snapshots: NewSnapshotter(h, st),
	}
	db.retention.rollupW = fl.rollups
	if opts.IndexSync.Interval > 0 {
		// Hook (index_sync.go): what other nodes announced since the index
		// rows were written, and the seq this node's feed goes on from.
		db.feed = newIndexSync(st, idx, opts)
		fl.feed = db.feed
		if err := db.feed.step(ctx); err != nil {
			return nil, err
		}
	}
	db.goRun(fl.run)
	if err := h.loadExemplars(ctx); err != nil { // hook: exemplar_persist.go
		fl.stop()
		return nil, fmt.Errorf("series: loading the exemplars: %w", err)
	}
	if err := h.replay(ctx); err != nil {
		fl.stop()
		return nil, err
	}
	l, err := wal.Open(opts.WAL)
	if err != nil {
		fl.stop()
		return nil, fmt.Errorf("series: opening the wal: %w", err)
	}
	h.log = l
	db.goRun(h.sweeper)
	if db.feed != nil {
		db.goRun(func() { db.feed.loop(h.stop) })
	}
	if opts.Retention > 0 || len(opts.Rollup.Retention) > 0 {
		db.goRun(func() { db.retention.loop(h.stop) })
	}
	return db, nil
}

// LoadIndex reads the whole series index of st, laid out as layout says,
// into memory.
func LoadIndex(ctx context.Context, st store.Store, layout rowkey.Layout) (*Index, error) {
	ix := newIndex()
	if err := ix.load(ctx, st, layout.Salt); err != nil {
		return nil, err
	}
	return ix, nil
}

// goRun runs f on a goroutine that Close waits for.
func (db *DB) goRun(f func()) {
	db.done.Add(1)
	go func() {
		defer db.done.Done()
		f()
	}()
}

// Delete removes points from the head and the store (Deleter.Delete).
func (db *DB) Delete(ctx context.Context, ls []Labels, start, end int64) error {
	return db.deleter.Delete(ctx, ls, start, end)
}

// ApplyRetention drops what the retention no longer keeps (Retention.Apply).
func (db *DB) ApplyRetention(ctx context.Context) (RetentionReport, error) {
	return db.retention.Apply(ctx)
}

// TakeSnapshot writes a snapshot into dir (Snapshotter.Take).
func (db *DB) TakeSnapshot(ctx context.Context, dir string, skipHead bool) (SnapshotStats, error) {
	return db.snapshots.Take(ctx, dir, skipHead)
}

// Flush seals every open chunk and returns once everything sealed is in
// the store and the index is persisted.
func (db *DB) Flush(ctx context.Context) error {
	db.sealWhere(func(*openChunk) bool { return true })
	if err := db.Head.flushHistograms(ctx, true); err != nil { // hook: histogram.go
		return err
	}
	if err := db.Head.persistExemplars(ctx); err != nil { // hook: exemplar_persist.go
		return err
	}
	return db.flusher.Wait(ctx)
}

// Close seals and writes everything, leaves an empty WAL and stops.
func (db *DB) Close() error {
	h := db.Head
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(h.stop)
	// Writes that keep failing (a store outage) do not hold the close for
	// ever: what is not in the store stays in the WAL for the next start.
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.CloseTimeout)
	defer cancel()
	err := db.Flush(ctx)
	db.flusher.stop()
	db.done.Wait()
	if err == nil {
		// The chunks written without a sync (Flusher.syncStore) are
		// durable before the WAL that holds their points goes.
		err = db.flusher.syncStore(ctx)
	}
	if err == nil && h.Fatal() == nil {
		if seg, rerr := h.log.Rotate(); rerr == nil {
			err = h.log.Truncate(seg)
		} else {
			err = rerr
		}
	}
	if cerr := h.log.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abandon stops the engine without sealing or writing anything and
// releases the WAL, as a crash would leave things; a later Open replays the
// WAL. It is for tests of recovery.
func (db *DB) Abandon() error {
	h := db.Head
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(h.stop)
	db.flusher.stop()
	db.done.Wait()
	return h.log.Close()
}
