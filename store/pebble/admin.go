package pebble

import (
	"context"
	"fmt"

	pebbledb "github.com/cockroachdb/pebble/v2"
)

// Flush writes the memtables out to SSTables and waits for it, so that
// DiskUsage counts every cell written so far in its on-disk (compressed)
// form.
func (s *Store) Flush() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	for _, db := range s.dbs() {
		if err := db.Flush(); err != nil {
			return fmt.Errorf("store/pebble: flush: %w", err)
		}
	}
	return nil
}

// Compact flushes, then compacts the whole key space into the bottom level
// and waits for it: afterwards deleted and overwritten cells take no space.
// It is slow on a big database and meant for tests, benchmarks and tools.
func (s *Store) Compact(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	// Every key starts with a table byte in [0x00, 0xfe] (checkTable).
	for _, db := range s.dbs() {
		if err := db.Compact(ctx, []byte{0x00}, []byte{0xff}, true); err != nil {
			return fmt.Errorf("store/pebble: compact: %w", err)
		}
	}
	return nil
}

// DiskUsage returns the bytes of the live files in the data directory (the
// data table's database included): SSTables, WAL, MANIFEST and OPTIONS, not
// files waiting to be deleted. It returns 0 on a closed store.
func (s *Store) DiskUsage() uint64 {
	if err := s.enter(); err != nil {
		return 0
	}
	defer s.leave()
	var n uint64
	for _, db := range s.dbs() {
		n += liveBytes(db.Metrics())
	}
	return n
}

// dbs returns the store's databases: the main one, then the data table's
// when it has its own.
func (s *Store) dbs() []*pebbledb.DB {
	if s.split() {
		return []*pebbledb.DB{s.db, s.data}
	}
	return []*pebbledb.DB{s.db}
}

func liveBytes(m *pebbledb.Metrics) uint64 {
	dead := m.WAL.ObsoletePhysicalSize +
		m.Table.Local.ObsoleteSize + m.Table.Local.ZombieSize +
		m.BlobFiles.Local.ObsoleteSize + m.BlobFiles.Local.ZombieSize +
		uint64(max(m.Compact.InProgressBytes, 0))
	total := m.DiskSpaceUsage()
	if dead > total {
		return 0
	}
	return total - dead
}

// Metrics is a snapshot of the figures of a Store worth exporting.
type Metrics struct {
	DiskUsage uint64 // live bytes on disk, as DiskUsage

	TableBytes    uint64 // bytes in live SSTables
	TableCount    uint64 // live SSTables
	WALBytes      uint64 // bytes in live WAL files
	MemTableBytes uint64 // bytes allocated by memtables
	MemTables     int64  // memtables, the filling one included
	// ZombieMemTableBytes are memtables flushed but still referenced by
	// an iterator, or waiting to be recycled.
	ZombieMemTableBytes uint64
	FileCacheBytes      int64 // Pebble's file cache: open SSTable readers
	TableIters          int64 // open SSTable iterators

	L0Files     int64 // SSTables in L0
	L0Sublevels int32 // L0 sublevels: what stalls writes when it grows
	ReadAmp     int   // sublevels a read may visit (L0 sublevels + non-empty levels)

	BlockCacheBytes    int64 // bytes in the block cache
	BlockCacheCount    int64 // blocks in the block cache
	BlockCacheCapacity int64 // the cache's size: blocks and memtables
	BlockCacheHits     int64
	BlockCacheMisses   int64

	Flushes        int64   // flushes since open
	Compactions    int64   // compactions since open
	CompactionDebt uint64  // estimated bytes to compact before the LSM is stable
	WriteAmp       float64 // bytes written to SSTables / bytes written to the WAL

	Tombstones uint64 // approximate deletion tombstones (point and range)
}

// Metrics returns a snapshot of the store's figures. It returns the zero
// Metrics on a closed store.
func (s *Store) Metrics() Metrics {
	if err := s.enter(); err != nil {
		return Metrics{}
	}
	defer s.leave()
	out := Metrics{BlockCacheCapacity: s.cacheSize}
	var written, in uint64
	for _, db := range s.dbs() {
		m := db.Metrics()
		total := m.Total()
		out.DiskUsage += liveBytes(m)
		out.TableBytes += m.Table.Local.LiveSize
		out.TableCount += m.Table.Local.LiveCount
		out.WALBytes += m.WAL.PhysicalSize
		out.MemTableBytes += m.MemTable.Size
		out.MemTables += m.MemTable.Count
		out.ZombieMemTableBytes += m.MemTable.ZombieSize
		out.FileCacheBytes += m.FileCache.Size
		out.TableIters += m.TableIters
		out.L0Files += m.Levels[0].TablesCount
		out.L0Sublevels = max(out.L0Sublevels, m.Levels[0].Sublevels)
		out.ReadAmp = max(out.ReadAmp, m.ReadAmp())
		out.BlockCacheBytes = m.BlockCache.Size // one cache, shared
		out.BlockCacheCount = m.BlockCache.Count
		out.BlockCacheHits = m.BlockCache.Hits
		out.BlockCacheMisses = m.BlockCache.Misses
		out.Flushes += m.Flush.Count
		out.Compactions += m.Compact.Count
		out.CompactionDebt += m.Compact.EstimatedDebt
		out.Tombstones += m.Keys.TombstoneCount
		// Bytes written to tables over bytes that came in: through the WAL,
		// or for the WAL-less data table, flushed from its memtables.
		written += total.TableBytesFlushed + total.TableBytesCompacted + total.BlobBytesFlushed + total.BlobBytesCompacted
		if db == s.db {
			in += total.TableBytesIn
		} else {
			in += m.Levels[0].TableBytesFlushed + m.Levels[0].BlobBytesFlushed
		}
	}
	if in > 0 {
		out.WriteAmp = float64(written) / float64(in)
	}
	return out
}
