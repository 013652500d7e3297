package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ReplayStats says what Replay read and what it repaired.
type ReplayStats struct {
	Segments       int                // segment files read
	Records        int64              // intact records passed to fn
	Bytes          int64              // bytes of those records (after decompression)
	Corruptions    int                // damaged segments, each truncated at its last intact record
	TruncatedBytes int64              // bytes cut off by those repairs
	Damage         []*CorruptionError // one per damaged segment, in order
}

// Replay reads every segment of the log in opts.Dir in order and calls fn
// with each intact record and the number of its segment. rec is valid only
// during the call. An error from fn stops the replay and is returned,
// wrapped.
//
// Damage (a torn or corrupt record) ends its segment: Replay logs it as a
// *CorruptionError with file and offset, truncates the segment just before
// it and fsyncs the file (so later replays read it clean), counts it in
// ReplayStats, and goes on with the next segment; segments are
// self-contained. Damage never makes Replay fail. What does: fn's error, an
// I/O error (reading, truncating, fsyncing), a segment of a newer format
// (ErrUnsupportedVersion), and a Log holding the directory.
//
// Replay takes the directory's lock: run it before Open, not during. A
// missing directory is an empty log.
func Replay(opts Options, fn func(segment int, rec []byte) error) (ReplayStats, error) {
	var stats ReplayStats
	opts, err := opts.withDefaults()
	if err != nil {
		return stats, err
	}
	fsys, dir, logger, m := opts.FS, opts.Dir, opts.Logger, opts.Metrics
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return stats, nil
	}
	lock, err := fsys.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return stats, fmt.Errorf("wal: %w", err)
	}
	defer lock.Close()
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return stats, err
	}
	var r segmentReader
	for i, n := range segs {
		if i > 0 && n != segs[i-1]+1 {
			logger.Warn("wal: segments missing", "dir", dir, "after", segs[i-1], "next", n)
		}
		before := stats.Records
		err := replaySegment(fsys, SegmentPath(dir, n), n, &r, fn, &stats, opts.ReplayProgress)
		m.recordsReplayed.Add(uint64(stats.Records - before))
		if err != nil {
			return stats, err
		}
		stats.Segments++
		var ce *CorruptionError
		if errors.As(r.err, &ce) {
			cut := r.size - ce.Offset
			logger.Warn("wal: damaged segment truncated at its last intact record; replay goes on with the next segment",
				"file", ce.File, "segment", ce.Segment, "offset", ce.Offset, "truncated_bytes", cut, "err", ce.Err)
			stats.Corruptions++
			stats.TruncatedBytes += cut
			stats.Damage = append(stats.Damage, ce)
			m.corruptions.Add(1)
			m.truncatedBytes.Add(uint64(cut))
		}
	}
	return stats, nil
}

// replaySegment reads one segment and, if it is damaged, truncates it; the
// damage is left in r.err.
func replaySegment(fsys FS, path string, n int, r *segmentReader, fn func(int, []byte) error, stats *ReplayStats,
	progress func(int, int64, int64)) (err error) {
	f, err := fsys.Open(path)
	if err != nil {
		return fmt.Errorf("wal: open segment: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("wal: close segment %d: %w", n, cerr)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: stat segment %d: %w", n, err)
	}
	r.reset(f, path, n, fi.Size())
	for r.next() {
		stats.Records++
		stats.Bytes += int64(len(r.rec))
		if err := fn(n, r.rec); err != nil {
			return fmt.Errorf("wal: replay segment %d, record ending at offset %d: %w", n, r.off, err)
		}
		if progress != nil {
			progress(n, r.off, r.size)
		}
	}
	var ce *CorruptionError
	if !errors.As(r.err, &ce) {
		return r.err // nil at a clean end, else an I/O error or ErrUnsupportedVersion
	}
	if err := f.Truncate(ce.Offset); err != nil {
		return fmt.Errorf("wal: repair: truncate %s at %d: %w", path, ce.Offset, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: repair: fsync %s: %w", path, err)
	}
	return nil
}
