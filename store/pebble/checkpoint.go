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
func (s *Store) Checkpoint(dir string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.db.Checkpoint(dir, pebbledb.WithFlushedWAL()); err != nil {
		return fmt.Errorf("store/pebble: checkpoint into %s: %w", dir, err)
	}
	return nil
}
