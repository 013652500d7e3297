package series

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"hourglass/model"
	"hourglass/series/wal"
	"hourglass/store"
)

// Checkpointer is a store that can write a consistent copy of itself into
// a new directory while writes go on (store/pebble's Store).
type Checkpointer interface {
	Checkpoint(dir string) error
}

// ErrSnapshotUnsupported is returned by TakeSnapshot on a store that cannot
// copy itself (Bigtable: its tables are backed up with Bigtable's own
// backups instead) (model.ErrSnapshotUnsupported).
var ErrSnapshotUnsupported = model.ErrSnapshotUnsupported

// SnapshotStats says what a snapshot holds (model.SnapshotStats).
type SnapshotStats = model.SnapshotStats

// Snapshot layout: a snapshot directory is a data directory.
const (
	snapshotWALDir   = "wal"
	snapshotStoreDir = "store"
)

// Snapshotter takes snapshots: the head's WAL up to a cut, and a checkpoint
// of the store it is given.
type Snapshotter struct {
	head *Head
	st   store.Store
}

// NewSnapshotter returns the snapshotter of the head h over st.
func NewSnapshotter(h *Head, st store.Store) *Snapshotter {
	return &Snapshotter{head: h, st: st}
}

// Take writes into dir, which must not exist, a copy of everything
// acknowledged before the call, with the layout of a data directory
// (dir/store, dir/wal): hourglass started on a copy of dir serves exactly
// that, and what was acknowledged during the call may or may not be there.
// Writes go on meanwhile.
//
// How: the WAL is rotated under the lock that orders appends, so every
// record written before the call is in a segment before the new one (the
// cut); those segments are hard-linked (copied across file systems) into
// dir/wal; then the store writes its checkpoint into dir/store. A segment
// that truncation removes in between had all its points, index entries and
// deletes in the store already, so the checkpoint, taken after, has them.
// On start, replaying the WAL over the checkpoint writes again what the
// store may already hold, as after a crash: cells are merged by timestamp,
// the last written winning, and deletes apply again.
//
// With skipHead only the store is copied: points still only in the WAL are
// not in the snapshot. The copy is built in dir+".tmp" and renamed into
// place once complete, so a directory named dir is always whole.
func (sn *Snapshotter) Take(ctx context.Context, dir string, skipHead bool) (SnapshotStats, error) {
	h := sn.head
	start := time.Now()
	var st SnapshotStats
	cp, ok := sn.st.(Checkpointer)
	if !ok {
		return st, ErrSnapshotUnsupported
	}
	if h.closed.Load() {
		return st, ErrClosed
	}
	if _, err := os.Stat(dir); err == nil {
		return st, fmt.Errorf("series: snapshot directory %s exists", dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("series: snapshot: %w", err)
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return st, fmt.Errorf("series: snapshot: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	walDir := filepath.Join(tmp, snapshotWALDir)
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return st, fmt.Errorf("series: snapshot: %w", err)
	}
	if !skipHead {
		if err := h.snapshotWAL(ctx, walDir, &st); err != nil {
			return st, err
		}
	}
	if err := cp.Checkpoint(filepath.Join(tmp, snapshotStoreDir)); err != nil {
		return st, fmt.Errorf("series: snapshot of the store: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return st, fmt.Errorf("series: snapshot: %w", err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return st, fmt.Errorf("series: snapshot: %w", err)
	}
	done = true
	st.Took = time.Since(start)
	h.opts.Logger.Info("snapshot taken", "dir", dir, "wal_cut", st.Cut, "wal_segments", st.WALSegments,
		"wal_bytes", st.WALBytes, "skip_head", skipHead, "took", st.Took.Round(time.Millisecond))
	return st, nil
}

// snapshotWAL cuts the WAL and links the segments before the cut into dir.
func (h *Head) snapshotWAL(ctx context.Context, dir string, st *SnapshotStats) error {
	cut, err := h.log.Rotate()
	if err != nil {
		return fmt.Errorf("series: snapshot: cutting the wal: %w", err)
	}
	st.Cut = cut
	segs, err := h.log.Segments()
	if err != nil {
		return fmt.Errorf("series: snapshot: %w", err)
	}
	for _, n := range segs {
		if n >= cut {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		size, err := linkOrCopy(wal.SegmentPath(h.opts.WAL.Dir, n), wal.SegmentPath(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // truncated meanwhile: its records are in the store
		}
		if err != nil {
			return fmt.Errorf("series: snapshot of wal segment %d: %w", n, err)
		}
		st.WALSegments++
		st.WALBytes += size
	}
	return syncDir(dir)
}

// linkOrCopy hard-links src to dst, or copies it (fsynced) where links
// cannot be made, and returns its size. A closed WAL segment never changes,
// so a link is a copy.
func linkOrCopy(src, dst string) (int64, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return 0, err
	}
	if err := os.Link(src, dst); err == nil {
		return fi.Size(), nil
	}
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func syncDir(dir string) error { return wal.OSFS{}.SyncDir(dir) }
