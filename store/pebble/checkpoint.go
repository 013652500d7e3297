package pebble

import (
	"fmt"

	pebbledb "github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the whole database into dir, which
// must not exist yet, while writes go on: Pebble's own checkpoint, whose
// SSTables are hard links into the live directory and whose WAL is flushed
// and synced first, so every write applied before the call is in the copy.
// Opening dir with Open gives the database as it was at that moment.
//
// The data table's WAL-less database (split.go) is flushed and copied
// first, into a sibling directory moved under dir at the end: its cells
// then refer only to UIDs that the main database's copy, taken after, has.
func (s *Store) Checkpoint(dir string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if !s.split() {
		if err := s.db.Checkpoint(dir, pebbledb.WithFlushedWAL()); err != nil {
			return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
		}
		return nil
	}
	vfsys := s.fs
	tmp := dir + ".data"
	if err := s.syncMain(); err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	if err := s.data.Flush(); err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	if err := s.data.Checkpoint(tmp); err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", tmp, err)
	}
	if err := s.db.Checkpoint(dir, pebbledb.WithFlushedWAL()); err != nil {
		vfsys.RemoveAll(tmp)
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	if err := vfsys.Rename(tmp, vfsys.PathJoin(dir, dataSubdir)); err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	d, err := vfsys.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	return nil
}
