package wal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
)

// SyncMode says when a committed record is fsynced.
type SyncMode int

const (
	// SyncAlways: Commit returns once the record is fsynced, sharing fsyncs
	// between concurrent committers (group commit). Nothing committed is
	// lost, whatever happens to the machine.
	SyncAlways SyncMode = iota
	// SyncInterval: Commit returns at once (Append has already written the
	// record to the OS, so it survives a crash of the process) and a
	// background goroutine fsyncs at least every Options.SyncInterval. A
	// crash of the machine loses at most that much committed data.
	SyncInterval
)

func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	}
	return "SyncMode(" + strconv.Itoa(int(m)) + ")"
}

// MarshalText returns String's value, so that a flag can hold a SyncMode
// (flag.TextVar).
func (m SyncMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses "always" or "interval" (ParseSyncMode).
func (m *SyncMode) UnmarshalText(b []byte) error {
	v, err := ParseSyncMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseSyncMode parses "always" or "interval", the values of String.
func ParseSyncMode(s string) (SyncMode, error) {
	switch s {
	case "always":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	}
	return 0, fmt.Errorf("wal: unknown sync mode %q (want always or interval)", s)
}

// Defaults of Options. Segments are removed whole, so the WAL can shrink
// only by a segment at a time: at 8 MiB a backfill's WAL is truncated as
// its older hours reach the store (docs/format/wal.md, "Segment size").
const (
	DefaultSegmentSize  = 8 << 20
	DefaultSyncInterval = time.Second
)

// DefaultOptions returns the default of every setting of Options but Dir:
// what a zero field stands for.
func DefaultOptions() Options {
	return Options{SegmentSize: DefaultSegmentSize, Sync: SyncAlways, SyncInterval: DefaultSyncInterval}
}

// Options configure a log. Open and Replay take the same Options.
type Options struct {
	Dir          string        // the log's directory, created if missing
	SegmentSize  int64         // a segment at or over this size is closed before the next append; default DefaultSegmentSize
	Sync         SyncMode      // default SyncAlways
	SyncInterval time.Duration // SyncInterval mode: the longest time between fsyncs; default DefaultSyncInterval
	FS           FS            // default OSFS
	Compress     bool          // compress records with s2 where that makes them smaller
	Logger       *slog.Logger  // default discards
	Metrics      *Metrics      // default a fresh one per Log or Replay
	// ReplayProgress, if set, is called by Replay after each record with
	// its segment, the offset just past the record and the segment's size.
	ReplayProgress func(segment int, off, size int64)
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("wal: no directory given")
	}
	if o.SegmentSize < 0 || o.SyncInterval < 0 {
		return o, fmt.Errorf("wal: negative segment size %d or sync interval %v", o.SegmentSize, o.SyncInterval)
	}
	if o.Sync != SyncAlways && o.Sync != SyncInterval {
		return o, fmt.Errorf("wal: unknown sync mode %d", int(o.Sync))
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = new(Metrics)
	}
	return o, nil
}

// lockName is the lock file in the log's directory.
const lockName = "LOCK"

// SegmentPath returns the path of segment n in dir: its number in eight
// decimal digits (more once it needs them), like Prometheus.
func SegmentPath(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("%08d", n))
}

// listSegments returns the numbers of the segment files in dir, ascending.
// Other files are not the log's and are ignored.
func listSegments(fsys FS, dir string) ([]int, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var segs []int
	for _, name := range names {
		if len(name) < 8 || !allDigits(name) {
			continue
		}
		n, err := strconv.Atoi(name)
		if err != nil || n < 0 {
			continue
		}
		segs = append(segs, n)
	}
	slices.Sort(segs)
	return segs, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Pos is the position just past a record: the record's segment and the
// offset where the next record starts. Positions of one log are ordered;
// the zero Pos comes before every record.
type Pos struct {
	Segment int
	Offset  int64
}

func (p Pos) before(q Pos) bool {
	return p.Segment < q.Segment || p.Segment == q.Segment && p.Offset < q.Offset
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Segment, p.Offset) }

// segment is an open segment file.
type segment struct {
	n    int
	f    File
	size int64 // bytes in the file, the offset of the next record; guarded by Log.mu
	refs atomic.Int32
}

// Log is a write-ahead log open for appending. It is safe for concurrent
// use. There can be one Log per directory at a time (a lock file enforces
// it), and Replay cannot run on a directory while a Log has it open.
type Log struct {
	opts   Options
	dir    string
	fs     FS
	logger *slog.Logger
	m      *Metrics
	lock   io.Closer

	// mu serializes appends, rotations and Close, and guards seg (with
	// seg.size), closed, rotateNext, buf and cbuf.
	mu     sync.Mutex
	seg    *segment
	closed bool
	// rotateNext: an Append failed after build ran; the next one starts a
	// new segment.
	rotateNext bool
	buf        []byte // frame buffer: room for a header, then the payload built in place
	cbuf       []byte // frame buffer for compressed payloads

	// cmu guards the commit state; cond wakes committers. Lock order: mu, then cmu.
	cmu     sync.Mutex
	cond    sync.Cond
	synced  Pos  // everything before it is durable
	syncing bool // a committer is fsyncing for the others

	maxRecord int // MaxRecordSize; tests lower it

	fatal   atomic.Pointer[error] // the first failed fsync; the log is dead
	size    atomic.Int64          // bytes in all segments
	current atomic.Int64          // number of the current segment

	truncMu   sync.Mutex // serializes Truncate
	stopOnce  sync.Once
	stop      chan struct{} // closed to stop the SyncInterval goroutine
	syncerEnd chan struct{} // closed when it has stopped
}

const (
	initialBuf  = 64 << 10
	maxKeptBuf  = 4 << 20 // a bigger frame buffer is dropped after use
	minCompress = 64      // smaller payloads are stored raw
)

// Open opens the log in opts.Dir for appending. It never appends to an
// existing segment: it starts a new one numbered after the last (segment 1
// in an empty directory). Replay the directory before opening it; Open
// does not read the old segments, it only fsyncs the last one in case the
// process that wrote it died before doing so.
func Open(opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{
		opts:   opts,
		dir:    opts.Dir,
		fs:     opts.FS,
		logger: opts.Logger,
		m:      opts.Metrics,
		buf:    make([]byte, initialBuf),

		maxRecord: MaxRecordSize,
	}
	l.cond.L = &l.cmu
	if err := l.fs.MkdirAll(l.dir); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", l.dir, err)
	}
	if l.lock, err = l.fs.Lock(filepath.Join(l.dir, lockName)); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if err := l.open(); err != nil {
		l.lock.Close()
		return nil, err
	}
	if opts.Sync == SyncInterval {
		l.stop = make(chan struct{})
		l.syncerEnd = make(chan struct{})
		go l.syncLoop()
	}
	return l, nil
}

func (l *Log) open() error {
	segs, err := listSegments(l.fs, l.dir)
	if err != nil {
		return err
	}
	var total int64
	for _, n := range segs {
		fi, err := l.fs.Stat(SegmentPath(l.dir, n))
		if err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		total += fi.Size()
	}
	next := 1
	if len(segs) > 0 {
		last := segs[len(segs)-1]
		next = last + 1
		// A process killed under SyncInterval leaves written but unsynced
		// records in its last segment; make them durable now, or they would
		// wait on the kernel's writeback instead of the promised interval.
		f, err := l.fs.Open(SegmentPath(l.dir, last))
		if err != nil {
			return fmt.Errorf("wal: open last segment: %w", err)
		}
		err = l.fsync(f, last)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("wal: close segment %d: %w", last, cerr)
		}
		if err != nil {
			return err
		}
	}
	seg, err := l.createSegment(next)
	if err != nil {
		return err
	}
	l.seg = seg
	l.synced = Pos{seg.n, seg.size}
	l.current.Store(int64(seg.n))
	l.size.Store(total + seg.size)
	l.m.segments.Store(int64(len(segs) + 1))
	return nil
}

// createSegment creates segment n with its header, durably: the file, its
// header and its directory entry are fsynced before it takes a record.
func (l *Log) createSegment(n int) (*segment, error) {
	path := SegmentPath(l.dir, n)
	f, err := l.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("wal: create segment: %w", err)
	}
	if _, err := f.WriteAt(appendSegmentHeader(nil), 0); err != nil {
		f.Close()
		l.fs.Remove(path)
		return nil, fmt.Errorf("wal: write header of segment %d: %w", n, err)
	}
	if err := l.fsync(f, n); err != nil {
		f.Close()
		return nil, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		f.Close()
		return nil, l.setFatal(fmt.Errorf("wal: fsync directory %s: %w", l.dir, err))
	}
	l.m.segmentsCreated.Add(1)
	seg := &segment{n: n, f: f, size: segmentHeaderSize}
	seg.refs.Store(1)
	return seg, nil
}

// fsync syncs f, which holds segment n, and counts it. A failure is fatal.
func (l *Log) fsync(f File, n int) error {
	start := time.Now()
	err := f.Sync()
	l.m.fsyncNanos.Add(int64(time.Since(start)))
	l.m.fsyncs.Add(1)
	if err != nil {
		return l.setFatal(fmt.Errorf("wal: fsync segment %d: %w", n, err))
	}
	return nil
}

// setFatal records err as the error that killed the log, unless one did
// already, and returns the one that did.
func (l *Log) setFatal(err error) error {
	if l.fatal.CompareAndSwap(nil, &err) {
		l.logger.Error("wal: log is unusable; the process should stop", "dir", l.dir, "err", err)
		// Wake committers so they see it.
		l.cmu.Lock()
		l.cond.Broadcast()
		l.cmu.Unlock()
	}
	return *l.fatal.Load()
}

// Err returns the error that made the log unusable (a failed fsync), or nil.
func (l *Log) Err() error {
	if p := l.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Log) release(s *segment) error {
	if s.refs.Add(-1) > 0 {
		return nil
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("wal: close segment %d: %w", s.n, err)
	}
	return nil
}

// releaseLater drops a reference to s and logs a close failure: the caller
// has nobody to return it to.
func (l *Log) releaseLater(s *segment) {
	if err := l.release(s); err != nil {
		l.logger.Warn("wal: closing segment failed", "segment", s.n, "err", err)
	}
}

// Append writes one record to the log and returns its position. It calls
// build, under the log's lock, with the number of the segment the record
// will land in and an empty buffer; build appends the record's bytes to the
// buffer and returns the result (it may return another slice). build must
// not call the Log and should be quick: appends wait for it. The buffer is
// the log's: it must not be kept after build returns.
//
// When Append returns, the record has been written to the OS (write(2)):
// it survives a crash of the process but not yet of the machine; Commit
// waits for that. If the current segment has reached Options.SegmentSize,
// Append first closes it and starts the next.
//
// A failed write returns an error and leaves the log as it was (the partial
// record is cut off); if it cannot be cut off, or after a failed fsync,
// the log is unusable and every call returns the error (see Err). When
// Append fails after build ran (a failed write, ErrRecordTooLarge), the
// next record goes to a new segment: whatever build noted for the segment
// (series defined in it) starts over with it, so a record that was not
// written cannot leave later records of its segment without a definition.
func (l *Log) Append(build func(segment int, buf []byte) []byte) (Pos, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Pos{}, ErrClosed
	}
	if err := l.Err(); err != nil {
		return Pos{}, err
	}
	if l.seg.size >= l.opts.SegmentSize || l.rotateNext {
		if err := l.rotateLocked(); err != nil {
			return Pos{}, err
		}
		l.rotateNext = false
	}
	seg := l.seg
	payload := build(seg.n, l.buf[recordHeaderSize:recordHeaderSize])
	frame, err := l.frame(payload)
	if err != nil {
		l.rotateNext = true
		return Pos{}, err
	}
	if _, err := seg.f.WriteAt(frame, seg.size); err != nil {
		l.rotateNext = true
		l.m.writeErrors.Add(1)
		err = fmt.Errorf("wal: write %d bytes to segment %d at offset %d: %w", len(frame), seg.n, seg.size, err)
		if terr := seg.f.Truncate(seg.size); terr != nil {
			return Pos{}, l.setFatal(fmt.Errorf("%w; cutting off the partial record failed: %v", err, terr))
		}
		return Pos{}, err
	}
	seg.size += int64(len(frame))
	l.size.Add(int64(len(frame)))
	l.m.recordsAppended.Add(1)
	l.m.bytesAppended.Add(uint64(len(frame)))
	if cap(l.buf) > maxKeptBuf {
		l.buf = make([]byte, initialBuf)
	}
	if cap(l.cbuf) > maxKeptBuf {
		l.cbuf = nil
	}
	return Pos{seg.n, seg.size}, nil
}

// frame returns payload framed as a record, in one of the log's buffers.
func (l *Log) frame(p []byte) ([]byte, error) {
	if len(p) > l.maxRecord {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrRecordTooLarge, len(p), l.maxRecord)
	}
	const h = recordHeaderSize
	if l.opts.Compress && len(p) >= minCompress {
		need := h + s2.MaxEncodedLen(len(p))
		if cap(l.cbuf) < need {
			l.cbuf = make([]byte, need)
		}
		enc := s2.Encode(l.cbuf[h:need], p)
		if len(enc) < len(p) && &enc[0] == &l.cbuf[h] {
			frame := l.cbuf[:h+len(enc)]
			putRecordHeader(frame, kindS2, enc)
			return frame, nil
		}
	}
	// build appended in place unless it outgrew the buffer or returned
	// another slice; then copy.
	if len(p) > 0 && &p[0] != &l.buf[h] {
		if len(l.buf) < h+len(p) {
			l.buf = make([]byte, h+cap(p))
		}
		copy(l.buf[h:], p)
	}
	frame := l.buf[:h+len(p)]
	putRecordHeader(frame, kindRaw, frame[h:])
	return frame, nil
}

// Commit waits until the record at p is durable as Options.Sync says:
// with SyncAlways until an fsync covers it, with SyncInterval not at all
// (Append has written it to the OS). It returns the log's fatal error, if
// any, instead. Commit is safe for concurrent use, and concurrent commits
// share fsyncs.
func (l *Log) Commit(p Pos) error {
	l.m.commits.Add(1)
	if l.opts.Sync == SyncInterval {
		return l.Err()
	}
	return l.syncTo(p)
}

// Sync waits until everything appended so far is durable, whatever the
// sync mode.
func (l *Log) Sync() error {
	l.mu.Lock()
	p := Pos{l.seg.n, l.seg.size}
	l.mu.Unlock()
	return l.syncTo(p)
}

// syncTo is group commit: it returns once synced covers p. One caller at a
// time fsyncs the current segment; the others wait for the fsync and are all
// released if it covered their positions.
func (l *Log) syncTo(p Pos) error {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	for {
		if err := l.Err(); err != nil {
			return err
		}
		if !l.synced.before(p) {
			return nil
		}
		if l.syncing {
			l.cond.Wait()
			continue
		}
		l.syncing = true
		l.cmu.Unlock()
		// Let writers that are ready to run (typically those the last fsync
		// released) append before the snapshot, so that this fsync covers
		// them too. It costs a lone writer nothing: no one else is runnable.
		runtime.Gosched()
		target, err := l.syncCurrent()
		l.cmu.Lock()
		l.syncing = false
		if err == nil && l.synced.before(target) {
			l.synced = target
		}
		l.cond.Broadcast()
		switch {
		case errors.Is(err, ErrClosed):
			if !l.synced.before(p) { // Close synced it
				return nil
			}
			return err
		case err == nil && l.synced.before(p):
			return fmt.Errorf("wal: commit of position %v, past the end of the log at %v", p, target)
		}
	}
}

// syncCurrent fsyncs the current segment and returns the position that
// fsync covers.
func (l *Log) syncCurrent() (Pos, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return Pos{}, ErrClosed
	}
	seg := l.seg
	target := Pos{seg.n, seg.size}
	seg.refs.Add(1) // a rotation must not close the file under the fsync
	l.mu.Unlock()
	err := l.fsync(seg.f, seg.n)
	l.releaseLater(seg)
	return target, err
}

// markSynced records that everything before p is durable.
func (l *Log) markSynced(p Pos) {
	l.cmu.Lock()
	if l.synced.before(p) {
		l.synced = p
		l.cond.Broadcast()
	}
	l.cmu.Unlock()
}

func (l *Log) syncedBefore(p Pos) bool {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	return l.synced.before(p)
}

func (l *Log) syncLoop() {
	defer close(l.syncerEnd)
	t := time.NewTicker(l.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if err := l.Sync(); err != nil {
			if !errors.Is(err, ErrClosed) && l.Err() == nil {
				l.logger.Error("wal: background sync", "err", err)
			}
			return // a failed fsync kills the log; it logged itself
		}
	}
}

// rotateLocked closes the current segment and starts the next. The old
// segment is fsynced first, so synced positions stay ordered across
// segments; this is one fsync per segment, taken under the lock.
func (l *Log) rotateLocked() error {
	old := l.seg
	end := Pos{old.n, old.size}
	if l.syncedBefore(end) {
		if err := l.fsync(old.f, old.n); err != nil {
			return err
		}
		l.markSynced(end)
	}
	seg, err := l.createSegment(old.n + 1)
	if err != nil {
		return err
	}
	l.seg = seg
	l.current.Store(int64(seg.n))
	l.size.Add(seg.size)
	l.m.segments.Add(1)
	l.markSynced(Pos{seg.n, seg.size})
	l.releaseLater(old)
	l.logger.Debug("wal: new segment", "segment", seg.n, "previous_size", old.size)
	return nil
}

// Segment returns the number of the current segment, the one the next
// record goes to unless it is full.
func (l *Log) Segment() int { return int(l.current.Load()) }

// Rotate closes the current segment and starts a new one, even if the
// current one is empty, and returns the new one's number.
func (l *Log) Rotate() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.Err(); err != nil {
		return 0, err
	}
	if err := l.rotateLocked(); err != nil {
		return 0, err
	}
	l.rotateNext = false
	return l.seg.n, nil
}

// Segments returns the numbers of the segments in the directory, ascending;
// the last is the current one.
func (l *Log) Segments() ([]int, error) { return listSegments(l.fs, l.dir) }

// Truncate deletes the segments numbered below before, never the current
// one: segments whose records are all in the store. It is safe to call
// while appending.
func (l *Log) Truncate(before int) error {
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	if cur := l.Segment(); before > cur {
		before = cur
	}
	segs, err := listSegments(l.fs, l.dir)
	if err != nil {
		return err
	}
	removed := 0
	for _, n := range segs {
		if n >= before {
			break
		}
		path := SegmentPath(l.dir, n)
		fi, err := l.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		if err := l.fs.Remove(path); err != nil {
			return fmt.Errorf("wal: remove segment %d: %w", n, err)
		}
		removed++
		l.size.Add(-fi.Size())
		l.m.segments.Add(-1)
	}
	if removed > 0 {
		// Not fatal: a removal that does not persist only brings back a
		// segment whose records are already in the store.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("wal: fsync directory %s: %w", l.dir, err)
		}
		l.logger.Debug("wal: truncated", "before", before, "removed", removed)
	}
	return nil
}

// Size returns the bytes in all segments of the log.
func (l *Log) Size() int64 { return l.size.Load() }

// Stats returns the log's counters.
func (l *Log) Stats() Stats { return l.m.Snapshot() }

// Close syncs the log and closes it. Records appended before are durable
// when it returns nil. Calls after the first return ErrClosed, as do
// Append and Rotate.
func (l *Log) Close() error {
	if l.stop != nil {
		l.stopOnce.Do(func() { close(l.stop) })
		<-l.syncerEnd
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	seg := l.seg
	err := l.Err()
	if err == nil {
		if end := (Pos{seg.n, seg.size}); l.syncedBefore(end) {
			if err = l.fsync(seg.f, seg.n); err == nil {
				l.markSynced(end)
			}
		}
	}
	if cerr := l.release(seg); err == nil {
		err = cerr
	}
	if cerr := l.lock.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("wal: release lock: %w", cerr)
	}
	// Wake committers: they find their records synced, or ErrClosed.
	l.cmu.Lock()
	l.cond.Broadcast()
	l.cmu.Unlock()
	return err
}
