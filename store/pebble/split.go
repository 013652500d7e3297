package pebble

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"hourglass/store"
)

// The data table lives in a Pebble database of its own, in the directory
// dataSubdir of the store's, without a Pebble WAL: every point it holds is
// in the series WAL until a Sync has flushed the cells that hold it into
// SSTables (store.DeferredWriter), so it is written to disk once on its
// way to a table, not twice. The UID, index and meta tables stay in the
// main database, whose WAL is synced by every Write.
//
// Order between the two: a data cell refers to UIDs. Increment and
// PutIfAbsent (UID assignment) are applied to the main database without a
// sync; before any batch goes into the data database, the main WAL is
// synced if one of them is not yet durable (syncMain). A memtable flush of
// the data database, whenever Pebble does it, so never makes durable a
// cell whose UIDs a crash could take back.
//
// A data set made before the split (cells of the data table in the main
// database, no dataSubdir) keeps its data table in the main database: data
// is then db and every write is synced as before.
const dataSubdir = "data"

// split reports whether the data table has its own WAL-less database.
func (s *Store) split() bool { return s.data != s.db }

// dataDir is the directory of the data table's database.
func (s *Store) dataDir() string { return s.fs.PathJoin(s.dir, dataSubdir) }

// dbFor returns the database that holds table t.
func (s *Store) dbFor(t store.Table) *pebbledb.DB {
	if t == store.TableData {
		return s.data
	}
	return s.db
}

// openData opens the data table's database (po are the main database's
// options, memTable the data database's memtable size), or leaves data =
// db for a data set made before the split.
func (s *Store) openData(po *pebbledb.Options, memTable uint64, logger *slog.Logger) error {
	vfsys := po.FS
	if vfsys == nil {
		vfsys = vfs.Default
	}
	s.fs = vfsys
	dir := vfsys.PathJoin(s.dir, dataSubdir)
	if _, err := vfsys.Stat(dir); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store/pebble: open %s: %w", dir, err)
		}
		legacy, err := s.hasTable(store.TableData)
		if err != nil {
			return err
		}
		if legacy {
			logger.Info("store/pebble: the data table is in the main database (a data set made before the split): its points are logged twice", "dir", s.dir)
			return nil
		}
	}
	dpo := po.Clone()
	dpo.DisableWAL = true
	dpo.MemTableSize = memTable
	setDataFileSizes(dpo)
	l := s.log.with("db", dataSubdir)
	dpo.Logger = l
	dpo.EventListener = l.eventListener()
	data, err := pebbledb.Open(dir, dpo)
	if err != nil {
		return fmt.Errorf("store/pebble: open %s: %w", dir, err)
	}
	s.data = data
	return nil
}

// legacyLayout reports whether dir holds a Pebble database but no data
// table database beside it: a data set made before the split, whose main
// database may hold the data table. A new directory is not one.
func legacyLayout(fsys vfs.FS, dir string) bool {
	if fsys == nil {
		fsys = vfs.Default
	}
	if _, err := fsys.Stat(fsys.PathJoin(dir, dataSubdir)); err == nil {
		return false
	}
	names, err := fsys.List(dir)
	if err != nil {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			return true
		}
	}
	return false
}

// hasTable reports whether the main database holds a cell of table t.
func (s *Store) hasTable(t store.Table) (bool, error) {
	it, err := s.db.NewIter(&pebbledb.IterOptions{LowerBound: []byte{byte(t)}, UpperBound: tableEnd(t)})
	if err != nil {
		return false, fmt.Errorf("store/pebble: open %s: %w", s.dir, err)
	}
	found := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, fmt.Errorf("store/pebble: open %s: %w", s.dir, err)
	}
	return found, nil
}

// setNoSync sets a cell for Increment or PutIfAbsent without waiting for a
// sync: on the main database the next synced Write, Sync or deferred data
// write makes it durable; on the WAL-less data database (no caller does
// that today) it is flushed at once.
func (s *Store) setNoSync(db *pebbledb.DB, key, value []byte) error {
	if err := db.Set(key, value, pebbledb.NoSync); err != nil {
		return err
	}
	if db == s.db {
		s.unsynced.Add(1)
		return nil
	}
	s.dataWrites.Add(1)
	return s.flushData()
}

// markSynced records that a sync of the main WAL covered the first n
// unsynced operations.
func (s *Store) markSynced(n uint64) {
	for {
		cur := s.synced.Load()
		if cur >= n || s.synced.CompareAndSwap(cur, n) {
			return
		}
	}
}

// syncMain syncs the main WAL if an Increment or PutIfAbsent since the last
// sync is not durable yet.
func (s *Store) syncMain() error {
	n := s.unsynced.Load()
	if n == s.synced.Load() {
		return nil
	}
	if err := s.db.LogData(nil, pebbledb.Sync); err != nil {
		return err
	}
	s.markSynced(n)
	return nil
}

// flushData flushes the data database's memtables if a write since the
// last flush may not be in an SSTable yet.
func (s *Store) flushData() error {
	n := s.dataWrites.Load()
	if n == s.flushed.Load() {
		return nil
	}
	if err := s.data.Flush(); err != nil {
		return err
	}
	for {
		cur := s.flushed.Load()
		if cur >= n || s.flushed.CompareAndSwap(cur, n) {
			return nil
		}
	}
}

// Sync makes every write applied before it durable (store.DeferredWriter):
// it syncs the main WAL if needed and flushes the data table's memtable to
// an SSTable when a deferred write may be only there.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if err := s.syncMain(); err != nil {
		return fmt.Errorf("store/pebble: sync %s: %w", s.dir, err)
	}
	if !s.split() {
		return nil
	}
	if err := s.flushData(); err != nil {
		return fmt.Errorf("store/pebble: sync %s: %w", s.dataDir(), err)
	}
	return nil
}
