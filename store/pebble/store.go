package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"hourglass/store"
)

// Store is a store.Store on a Pebble database in one directory. It is safe
// for concurrent use.
type Store struct {
	// db holds the UID, index and meta tables, with Pebble's WAL synced on
	// every Write. data holds the data table without a Pebble WAL (split.go);
	// in a data set made before the split, data is db.
	db   *pebbledb.DB
	data *pebbledb.DB
	dir  string
	fs   vfs.FS // the file system both are on
	// cacheSize is the block cache's capacity (blocks and memtables).
	cacheSize int64
	// trimmer returns malloc's free memory to the system (malloc.go); nil
	// without glibc. trimStop stops its loop, which closes trimDone.
	trimmer            *trimmer
	trimStop, trimDone chan struct{}
	// log is where both databases' Pebble lines and events go, rate
	// limited, their errors counted (log.go).
	log *pebbleLog

	// unsynced counts the Increments and PutIfAbsents applied to db
	// without a sync; synced is the count the last sync of db's log
	// covered. Their difference is what a deferred data write must make
	// durable first (split.go).
	unsynced, synced atomic.Uint64
	// dataWrites counts the deferred writes to data; flushed is the count
	// the last Sync's flush covered.
	dataWrites, flushed atomic.Uint64
	syncMu              sync.Mutex // one Sync at a time

	// guard refuses operations once Close has begun and lets Close wait
	// for those under way.
	guard store.Guard

	// locks serialise the read-modify-writes of Increment and PutIfAbsent,
	// striped by cell.
	seed  maphash.Seed
	locks [64]struct {
		sync.Mutex
		_ [56]byte // keep stripes on separate cache lines
	}

	scanners sync.Pool // *scanner
}

var _ store.DeferredWriter = (*Store)(nil)

// errEmptyRow rejects an empty row key, which Bigtable does not allow.
var errEmptyRow = errors.New("store/pebble: empty row key")

// Open opens the database in dir, creating it if needed.
func Open(dir string, opts Options) (*Store, error) {
	return open(dir, opts, nil)
}

// open is Open with a hook to change Pebble's options, for experiments.
func open(dir string, opts Options, tweak func(*pebbledb.Options)) (*Store, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	po, err := opts.pebbleOptions(logger)
	if err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(po)
	}
	limitMallocArenas() // before Pebble's first C allocation (malloc.go)
	cacheSize := opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = DefaultOptions().CacheSize
	}
	// Pebble counts the memtables it allocates against the block cache
	// (Cache.Reserve): sized to cacheSize alone, the cache of a store under
	// sustained ingest, whose data memtable is full size, held no block at
	// all. The cache is made larger by the memtables' usual share, the
	// filling memtable of each of the two databases, so that cacheSize is
	// left for blocks; memtables queued behind a slow flush still take
	// from it until they are flushed.
	dataMem := opts.dataMemTableSize()
	if legacyLayout(po.FS, dir) {
		// The data table may be in the main database (a data set made
		// before the split): it keeps the memtables it had.
		po.MemTableSize = dataMem
	}
	cache := pebbledb.NewCache(cacheSize + int64(po.MemTableSize) + int64(dataMem))
	defer cache.Unref() // the DB holds its own reference
	po.Cache = cache
	db, err := pebbledb.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("store/pebble: open %s: %w", dir, err)
	}
	plog, ok := po.Logger.(*pebbleLog)
	if !ok {
		plog = newPebbleLog(logger)
	}
	s := &Store{db: db, data: db, dir: dir, seed: maphash.MakeSeed(), cacheSize: cache.MaxSize(), log: plog}
	if err := s.openData(po, dataMem, logger); err != nil {
		db.Close()
		return nil, err
	}
	s.scanners.New = func() any { return new(scanner) }
	if mallocIsGlibc() {
		s.trimmer, s.trimStop, s.trimDone = newTrimmer(s), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(s.trimDone)
			s.trimmer.run(trimEvery, s.trimStop)
		}()
	}
	return s, nil
}

// enter registers an operation, or returns store.ErrClosed (store.Guard).
func (s *Store) enter() error { return s.guard.Enter() }

func (s *Store) leave() { s.guard.Leave() }

// begin checks what every table operation checks first: the context and
// the table.
func begin(ctx context.Context, t store.Table) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return checkTable(t)
}

// Close waits for the operations under way, then closes the database.
// Close must not be called from a Scan callback. A second Close returns
// store.ErrClosed.
func (s *Store) Close() error {
	if err := s.guard.Close(); err != nil {
		return err
	}
	if s.trimmer != nil {
		close(s.trimStop)
		<-s.trimDone
	}
	// A clean close leaves everything in SSTables: the next open replays no
	// log, and what the data takes on disk is its compressed size. The data
	// table's database first: it has no log to replay.
	var errs []error
	if s.split() {
		if err := s.data.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("store/pebble: flushing %s before closing: %w", s.dataDir(), err))
		}
		if err := s.data.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store/pebble: close %s: %w", s.dataDir(), err))
		}
	}
	if err := s.db.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("store/pebble: flushing %s before closing: %w", s.dir, err))
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("store/pebble: close %s: %w", s.dir, err))
	}
	return errors.Join(errs...)
}

// Write applies the mutations in one Pebble batch, durable before it
// returns: the whole call is atomic, not only each row. A batch of the
// other tables is synced to the WAL; one of the data table, whose database
// has no WAL, is flushed to an SSTable (split.go), after the WAL has made
// the Increments and PutIfAbsents before it durable.
//
// Write does not take the locks of Increment and PutIfAbsent: a cell that
// those change must not be written by Write at the same time.
func (s *Store) Write(ctx context.Context, t store.Table, muts []store.Mutation) error {
	return s.write(ctx, t, muts, false)
}

// WriteDeferred is Write without durability on return
// (store.DeferredWriter): a batch of the data table goes to its memtable
// alone, durable at the next Sync or memtable flush; a batch of another
// table (the rollups) goes to the main WAL without a sync, durable at the
// next Sync or synced Write.
func (s *Store) WriteDeferred(ctx context.Context, t store.Table, muts []store.Mutation) error {
	return s.write(ctx, t, muts, true)
}

func (s *Store) write(ctx context.Context, t store.Table, muts []store.Mutation, deferred bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := begin(ctx, t); err != nil {
		return err
	}
	if len(muts) == 0 {
		return nil
	}
	size := 0
	for i := range muts {
		m := &muts[i]
		if len(m.Row) == 0 {
			return fmt.Errorf("%w (mutation %d of %d, table %s)", errEmptyRow, i, len(muts), t)
		}
		// Pebble's batch record: kind, varint key and value lengths.
		size += 1 + 2*binary.MaxVarintLen32 + keyLen(m.Row, m.Qualifier) + len(m.Value)
	}
	db := s.dbFor(t)
	b := db.NewBatchWithSize(size)
	defer b.Close()
	for i := range muts {
		m := &muts[i]
		kl := keyLen(m.Row, m.Qualifier)
		var op *pebbledb.DeferredBatchOp
		if m.Delete {
			op = b.DeleteDeferred(kl)
		} else {
			op = b.SetDeferred(kl, len(m.Value))
			copy(op.Value, m.Value)
		}
		putKey(op.Key, t, m.Row, m.Qualifier)
		if err := op.Finish(); err != nil {
			return fmt.Errorf("store/pebble: write %s: %w", t, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if db == s.db && deferred {
		if err := b.Commit(pebbledb.NoSync); err != nil {
			return fmt.Errorf("store/pebble: write %s: %w", t, err)
		}
		s.unsynced.Add(1) // after the commit: the next syncMain covers it
		return nil
	}
	if db == s.db {
		n := s.unsynced.Load()
		if err := b.Commit(pebbledb.Sync); err != nil {
			return fmt.Errorf("store/pebble: write %s: %w", t, err)
		}
		s.markSynced(n)
		return nil
	}
	// The data table's own database: the UIDs its cells refer to first.
	if err := s.syncMain(); err != nil {
		return fmt.Errorf("store/pebble: write %s: %w", t, err)
	}
	if err := b.Commit(pebbledb.NoSync); err != nil {
		return fmt.Errorf("store/pebble: write %s: %w", t, err)
	}
	s.dataWrites.Add(1)
	if deferred {
		return nil
	}
	if err := s.flushData(); err != nil {
		return fmt.Errorf("store/pebble: write %s: %w", t, err)
	}
	return nil
}

// ReadRow returns the cells of one row.
func (s *Store) ReadRow(ctx context.Context, t store.Table, row []byte) ([]store.Cell, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := begin(ctx, t); err != nil {
		return nil, err
	}
	if len(row) == 0 {
		return nil, errEmptyRow
	}
	lower := appendRowPrefix(make([]byte, 0, 2*keyLen(row, nil)), t, row)
	upper := appendRowEnd(lower[len(lower):], t, row)
	it, err := s.dbFor(t).NewIterWithContext(ctx, &pebbledb.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("store/pebble: read row %s: %w", t, err)
	}
	// Copy row, qualifier and value of every cell into one arena; slice it
	// once it has stopped growing.
	var endsBuf [4][3]int
	var arena []byte
	ends := endsBuf[:0] // end offsets of row, qualifier, value in arena
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			break
		}
		if arena == nil {
			arena = make([]byte, 0, 1024)
		}
		arena = append(arena, row...)
		r := len(arena)
		arena = append(arena, it.Key()[len(lower):]...)
		q := len(arena)
		arena = append(arena, v...)
		ends = append(ends, [3]int{r, q, len(arena)})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("store/pebble: read row %s: %w", t, err)
	}
	if len(ends) == 0 {
		return nil, nil
	}
	cells := make([]store.Cell, len(ends))
	start := 0
	for i, e := range ends {
		cells[i] = store.Cell{
			Row:       arena[start:e[0]:e[0]],
			Qualifier: arena[e[0]:e[1]:e[1]],
			Value:     arena[e[1]:e[2]:e[2]],
		}
		start = e[2]
	}
	return cells, nil
}

// lock returns the stripe lock of an encoded cell key.
func (s *Store) lock(key []byte) *sync.Mutex {
	return &s.locks[maphash.Bytes(s.seed, key)%uint64(len(s.locks))].Mutex
}

// Increment adds delta to the cell's big-endian int64 value under the
// cell's stripe lock. It does not wait for a sync: Pebble has one ordered
// log, so the next synced Write makes it durable (the store.Store contract).
func (s *Store) Increment(ctx context.Context, t store.Table, row, qualifier []byte, delta int64) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if err := begin(ctx, t); err != nil {
		return 0, err
	}
	if len(row) == 0 {
		return 0, errEmptyRow
	}
	key := appendKey(nil, t, row, qualifier)
	mu := s.lock(key)
	mu.Lock()
	defer mu.Unlock()
	var cur int64
	db := s.dbFor(t)
	v, closer, err := db.Get(key)
	switch {
	case errors.Is(err, pebbledb.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("store/pebble: increment %s row %q qualifier %q: %w", t, row, qualifier, err)
	default:
		n := len(v)
		if n == 8 {
			cur = int64(binary.BigEndian.Uint64(v))
		}
		if err := closer.Close(); err != nil {
			return 0, fmt.Errorf("store/pebble: increment %s row %q qualifier %q: %w", t, row, qualifier, err)
		}
		if n != 8 {
			return 0, fmt.Errorf("store/pebble: increment %s row %q qualifier %q: value is %d bytes, not a 64-bit counter", t, row, qualifier, n)
		}
	}
	next := cur + delta
	if err := s.setNoSync(db, key, binary.BigEndian.AppendUint64(nil, uint64(next))); err != nil {
		return 0, fmt.Errorf("store/pebble: increment %s row %q qualifier %q: %w", t, row, qualifier, err)
	}
	return next, nil
}

// PutIfAbsent writes the cell under its stripe lock if it does not exist.
// Like Increment it leaves the sync to the next Write.
func (s *Store) PutIfAbsent(ctx context.Context, t store.Table, row, qualifier, value []byte) (bool, []byte, error) {
	if err := s.enter(); err != nil {
		return false, nil, err
	}
	defer s.leave()
	if err := begin(ctx, t); err != nil {
		return false, nil, err
	}
	if len(row) == 0 {
		return false, nil, errEmptyRow
	}
	key := appendKey(nil, t, row, qualifier)
	mu := s.lock(key)
	mu.Lock()
	defer mu.Unlock()
	db := s.dbFor(t)
	v, closer, err := db.Get(key)
	switch {
	case errors.Is(err, pebbledb.ErrNotFound):
	case err != nil:
		return false, nil, fmt.Errorf("store/pebble: put if absent %s row %q qualifier %q: %w", t, row, qualifier, err)
	default:
		existing := bytes.Clone(v)
		if existing == nil {
			existing = []byte{}
		}
		if err := closer.Close(); err != nil {
			return false, nil, fmt.Errorf("store/pebble: put if absent %s row %q qualifier %q: %w", t, row, qualifier, err)
		}
		return false, existing, nil
	}
	if err := s.setNoSync(db, key, value); err != nil {
		return false, nil, fmt.Errorf("store/pebble: put if absent %s row %q qualifier %q: %w", t, row, qualifier, err)
	}
	return true, nil, nil
}

// DeleteRange deletes every row in the range with one Pebble range
// tombstone, durable before it returns (synced to the WAL, or for the data
// table, flushed).
func (s *Store) DeleteRange(ctx context.Context, t store.Table, r store.KeyRange) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := begin(ctx, t); err != nil {
		return err
	}
	start := appendBound(nil, t, r.Start)
	end := tableEnd(t)
	if len(r.End) > 0 {
		end = appendBound(nil, t, r.End)
	}
	if bytes.Compare(start, end) >= 0 {
		return nil
	}
	db := s.dbFor(t)
	if db == s.db {
		if err := db.DeleteRange(start, end, pebbledb.Sync); err != nil {
			return fmt.Errorf("store/pebble: delete range %s [%q, %q): %w", t, r.Start, r.End, err)
		}
		return nil
	}
	if err := db.DeleteRange(start, end, pebbledb.NoSync); err != nil {
		return fmt.Errorf("store/pebble: delete range %s [%q, %q): %w", t, r.Start, r.End, err)
	}
	s.dataWrites.Add(1)
	if err := s.flushData(); err != nil {
		return fmt.Errorf("store/pebble: delete range %s [%q, %q): %w", t, r.Start, r.End, err)
	}
	return nil
}
