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
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("store/pebble: flush: %w", err)
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
	if err := s.db.Compact(ctx, []byte{0x00}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("store/pebble: compact: %w", err)
	}
	return nil
}

// DiskUsage returns the bytes of the live files in the data directory:
// SSTables, WAL, MANIFEST and OPTIONS, not files waiting to be deleted. It
// returns 0 on a closed store.
func (s *Store) DiskUsage() uint64 {
	if err := s.enter(); err != nil {
		return 0
	}
	defer s.leave()
	return liveBytes(s.db.Metrics())
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

	L0Files     int64 // SSTables in L0
	L0Sublevels int32 // L0 sublevels: what stalls writes when it grows
	ReadAmp     int   // sublevels a read may visit (L0 sublevels + non-empty levels)

	BlockCacheBytes  int64 // bytes in the block cache
	BlockCacheHits   int64
	BlockCacheMisses int64

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
	m := s.db.Metrics()
	total := m.Total()
	return Metrics{
		DiskUsage:        liveBytes(m),
		TableBytes:       m.Table.Local.LiveSize,
		TableCount:       m.Table.Local.LiveCount,
		WALBytes:         m.WAL.PhysicalSize,
		MemTableBytes:    m.MemTable.Size,
		MemTables:        m.MemTable.Count,
		L0Files:          m.Levels[0].TablesCount,
		L0Sublevels:      m.Levels[0].Sublevels,
		ReadAmp:          m.ReadAmp(),
		BlockCacheBytes:  m.BlockCache.Size,
		BlockCacheHits:   m.BlockCache.Hits,
		BlockCacheMisses: m.BlockCache.Misses,
		Flushes:          m.Flush.Count,
		Compactions:      m.Compact.Count,
		CompactionDebt:   m.Compact.EstimatedDebt,
		WriteAmp:         total.WriteAmp(),
		Tombstones:       m.Keys.TombstoneCount,
	}
}
