package series

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/internal/errclass"
	"hourglass/rowkey"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/uid"
)

// Options configures a Head.
type Options struct {
	Layout   rowkey.Layout
	WriterID uint16
	// ChunkMaxPoints bounds the points of one chunk (one cell). Default chunk.DefaultMaxPoints.
	ChunkMaxPoints int
	// ChunkSpread makes each series seal its in-time chunks at a point count
	// of its own, ChunkMaxPoints less up to ChunkSpread points (drawn from
	// its TSUID), so that series which start together and write at the same
	// rate do not all seal, and flush, in the same second. 0 (the default
	// here; the server's -chunk-seal-spread sets it) seals every chunk at
	// ChunkMaxPoints.
	ChunkSpread int
	// Grace is how long after an hour ends its open chunks wait for late
	// points before they seal, by the wall clock or by the series' own newest
	// point, whichever comes first. Default 10 minutes.
	Grace time.Duration
	// LateGrace and LateMaxPoints bound the late chunks, which gather the
	// points of hours already past their grace (late.go). Defaults 10 s
	// and 4,000,000 points (frozen in packed blocks when they come in
	// order, about 14 bytes each: 55 MB; out of order they stay raw, 24
	// bytes each: about 100 MB).
	LateGrace     time.Duration
	LateMaxPoints int64
	// WAL configures the write-ahead log; WAL.Dir is required.
	WAL wal.Options
	// WALMaxBytes bounds the WAL: past it, the chunks that hold its oldest
	// segments are sealed early so the segments can go. Default 1 GiB.
	WALMaxBytes int64
	// SweepInterval is how often idle chunks are sealed and the WAL truncated. Default 1 s.
	SweepInterval time.Duration
	// CloseTimeout bounds how long Close waits for the store to take the
	// head; past it the WAL keeps what is left. Default 1 minute.
	CloseTimeout time.Duration
	// Retention is how long data is kept; 0 keeps it for ever. Rows whose
	// hour ended longer ago are dropped every RetentionInterval (default
	// 1 hour) and at start, and older points are refused (retention.go).
	Retention         time.Duration
	RetentionInterval time.Duration
	// IndexSync makes nodes that share one store learn each other's series
	// (index_sync.go). Off by default: a node alone needs none of it.
	IndexSync IndexSyncOptions
	// Rollup configures the rollups the flusher computes (rollup.go);
	// none by default.
	Rollup RollupOptions
	// Exemplars bounds the exemplars kept (exemplar.go).
	Exemplars  ExemplarOptions
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// DefaultOptions returns the default of every setting of Options that has
// one: what a zero field stands for. Layout, WAL.Dir, Retention (0: for
// ever) and IndexSync (off) have none here; DefaultIndexSyncOptions is the
// index sync's when it is on.
func DefaultOptions() Options {
	return Options{
		ChunkMaxPoints:    chunk.DefaultMaxPoints,
		Grace:             10 * time.Minute,
		LateGrace:         10 * time.Second,
		LateMaxPoints:     4_000_000,
		WAL:               wal.DefaultOptions(),
		WALMaxBytes:       1 << 30,
		SweepInterval:     time.Second,
		CloseTimeout:      time.Minute,
		RetentionInterval: time.Hour,
	}
}

func (o *Options) fill() {
	d := DefaultOptions()
	if o.ChunkMaxPoints <= 0 {
		o.ChunkMaxPoints = d.ChunkMaxPoints
	}
	if o.ChunkMaxPoints > chunk.MaxPoints {
		o.ChunkMaxPoints = chunk.MaxPoints
	}
	o.ChunkSpread = min(max(o.ChunkSpread, 0), o.ChunkMaxPoints/2)
	if o.Grace <= 0 {
		o.Grace = d.Grace
	}
	if o.LateGrace <= 0 {
		o.LateGrace = d.LateGrace
	}
	if o.LateMaxPoints <= 0 {
		o.LateMaxPoints = d.LateMaxPoints
	}
	if o.WALMaxBytes <= 0 {
		o.WALMaxBytes = d.WALMaxBytes
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = d.SweepInterval
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = d.CloseTimeout
	}
	if o.RetentionInterval <= 0 {
		o.RetentionInterval = d.RetentionInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Head holds the series and their open, late and sealed-but-unwritten
// chunks, appends points to them through the WAL, serves snapshots of them
// to reads and replays the WAL at start. What it seals goes to the Flusher;
// the jobs that rewrite the store (deletes, retention, the index feed,
// snapshots) are types of their own beside it, which DB wires together.
// It is safe for concurrent use.
type Head struct {
	opts  Options
	uids  *uid.Table
	index *Index
	fl    *Flusher
	log   *wal.Log
	m     *metrics

	shards  [256]headShard
	seed    maphash.Seed // of shard
	nextRef atomic.Uint64

	// inflight counts appends per WAL segment between their WAL write and
	// their arrival in memory, so truncation never removes them.
	inflightMu sync.Mutex
	inflight   map[int]int

	// applyMu orders deletes against appends: an append holds it shared
	// from its WAL write until its points are in memory, a delete
	// exclusively (delete.go), so memory changes in the WAL's order.
	applyMu sync.RWMutex

	stop    chan struct{}
	closed  atomic.Bool
	fatal   atomic.Pointer[error]
	started time.Time

	// latePoints counts the points in late chunks; lateSealing is set while
	// the bound on them seals them all (late.go).
	latePoints  atomic.Int64
	lateSealing atomic.Bool

	// hist holds the native histogram samples not yet in the store
	// (histogram.go); exemplars the series' latest exemplars (exemplar.go).
	hist      histHead
	exemplars *exemplarStore

	// walLow is the segment below which the last truncation removed every
	// segment; only the sweeper uses it.
	walLow int
}

type headShard struct {
	mu sync.RWMutex
	m  map[Labels]*memSeries
}

type memSeries struct {
	ref    uint64
	labels Labels
	tsuid  []byte
	entry  *Entry

	walSeg int      // the segment that last defined ref; guarded by the WAL's lock
	wal    walState // what its next WAL sample is coded against (record_state.go); guarded by the WAL's lock

	mu         sync.Mutex
	open       []*openChunk // by hour, ascending
	pending    []*sealedChunk
	maxT       int64
	lastDay    uint32
	lastAppend int64 // wall clock, unix ms
	lastPts    int   // points of the series' last sealed in-time chunk: the next one's capacity
	lastLate   int   // points of the series' last sealed late chunk: the next late one's capacity
	sealAt     int   // points at which an in-time chunk seals (Options.ChunkSpread)
	gone       bool  // forgotten by forgetIdle: appenders must look the series up again

	rows []rowInfo // owned by the flusher (flusher_rows.go)
}

type openChunk struct {
	hour   int64
	pts    []chunk.Point // raw, in arrival order, after the frozen ones
	fz     frozen        // the older points, encoded (head_frozen.go)
	minSeg int
	// expect is the points the series' last chunk of the same kind held
	// (0: none): what this one will likely hold, for sizing its frozen
	// buffer (head_frozen.go).
	expect int
	// late: opened for an hour already past its grace; it seals when full,
	// at deadline (wall clock, unix ms) or at the bound, and, unless pinned,
	// when the series' newest point passes its grace (late.go). lateN is
	// what it added to Head.latePoints.
	late, pinned bool
	deadline     int64
	lateN        int64
}

type sealedChunk struct {
	s      *memSeries
	hour   int64
	pts    []chunk.Point // sorted, distinct timestamps; replaced, never changed, under s.mu
	minSeg int

	del *deleteJob // set instead of the rest: a delete in the flusher's queue
}

// Sample is one point to append, with the series it belongs to.
type Sample struct {
	Labels Labels
	T      int64
	V      chunk.Value
	// Hint, if set, remembers the head series of Labels across requests
	// (hint.go); the append reads and updates it.
	Hint *Hint
}

// ErrClosed is returned by appends after Close; it is in the class
// errclass.ErrUnavailable (another node, or this one restarted, may take the
// write).
var ErrClosed = errclass.New(errclass.ErrUnavailable, "series: head is closed")

func (h *Head) replay(ctx context.Context) error {
	refs := map[uint64]*memSeries{}
	replayNow := h.opts.Now().UnixMilli()
	seg := -1
	var pts int
	var jobs []*deleteJob
	start := time.Now()
	dec := recordDecoder{
		onSeries: func(ref uint64, l Labels) error {
			s, err := h.getOrCreate(ctx, l)
			if err != nil {
				h.opts.Logger.Warn("wal replay: dropping a series that cannot be created", "series", l.String(), "err", err)
				refs[ref] = nil
				return nil
			}
			refs[ref] = s
			return nil
		},
		onSample: func(smp walSample) error {
			s := refs[smp.ref]
			if s == nil {
				return nil
			}
			pts++
			var late int64
			h.appendToSeries(s, smp.t, smp.v, seg, replayNow, &late) // nothing is forgotten during replay
			if late > 0 && h.addLate(late) {
				h.sealLateEarly()
			}
			return nil
		},
		onDelete: func(start, end int64, ls []Labels) error {
			jobs = append(jobs, h.applyDelete(ls, start, end, seg))
			return nil
		},
		onHist: func(ref uint64, p chunk.HistPoint) error {
			if s := refs[ref]; s != nil {
				pts++
				h.histAdd(s, p, seg, replayNow)
			}
			return nil
		},
		onExemplar: func(ref uint64, e Exemplar) error {
			if s := refs[ref]; s != nil {
				h.exemplars.add(s.labels, s.tsuid, e, true)
			}
			return nil
		},
	}
	prog := newReplayProgress(h.opts.Logger, h.opts.WAL.Dir, time.Now) // hook: replay_progress.go
	stats, err := wal.Replay(prog.withProgress(h.opts.WAL), func(segment int, rec []byte) error {
		if segment != seg {
			seg = segment
			clear(refs)
			dec.newSegment()
		}
		if err := dec.decode(rec); err != nil {
			// The frame checksum matched, so this is a bug or a format
			// change, not a torn write: say so and keep going.
			h.opts.Logger.Error("wal replay: undecodable record", "segment", segment, "err", err)
			h.m.walCorruptions.Inc()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("series: replaying the wal: %w", err)
	}
	h.m.walCorruptions.Add(float64(stats.Corruptions))
	prog.finish()
	// Until a replayed delete has rewritten the store, the store may hold
	// what it deleted (written again by the replay, or never removed):
	// serve nothing before.
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return fmt.Errorf("series: replaying the wal: waiting for a delete to reach the store: %w", ctx.Err())
		}
	}
	h.opts.Logger.Info("wal replayed", "points", pts, "records", stats.Records, "corruptions", stats.Corruptions,
		"truncated_bytes", stats.TruncatedBytes, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func (h *Head) shard(l Labels) *headShard {
	// maphash (AES-based where the CPU has it) over the labels picks a
	// shard: about a tenth of the CPU of the byte-at-a-time FNV-1a it
	// replaced on 100-byte label strings.
	return &h.shards[maphash.String(h.seed, string(l))%uint64(len(h.shards))]
}

// holds reports whether the head holds the series l.
func (h *Head) holds(l Labels) bool {
	return h.shard(l).get(l) != nil
}

// get returns the head series of l, nil if there is none.
func (sh *headShard) get(l Labels) *memSeries {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.m[l]
}

// getOrCreate returns the head series of l, resolving its names to UIDs and
// adding it to the index if it is new.
func (h *Head) getOrCreate(ctx context.Context, l Labels) (*memSeries, error) {
	sh := h.shard(l)
	s := sh.get(l)
	if s != nil {
		return s, nil
	}
	tsuid, err := h.resolve(ctx, l)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s = sh.m[l]; s != nil {
		return s, nil
	}
	s = &memSeries{ref: h.nextRef.Add(1), labels: l, tsuid: tsuid, walSeg: -1, maxT: math.MinInt64, lastDay: math.MaxUint32,
		sealAt: h.sealAt(tsuid)}
	sh.m[l] = s
	h.m.series.Inc()
	return s, nil
}

// resolve returns the TSUID of l, assigning UIDs to new names.
func (h *Head) resolve(ctx context.Context, l Labels) ([]byte, error) {
	return tsuidOf(ctx, l, h.uids.GetOrAssign)
}

// tsuidOf returns the TSUID of l with the UIDs id gives its names.
func tsuidOf(ctx context.Context, l Labels, id func(ctx context.Context, dst []byte, k uid.Kind, name string) ([]byte, error)) ([]byte, error) {
	tsuid, err := id(ctx, nil, uid.Metric, l.Metric())
	if err != nil {
		return nil, err
	}
	type pair struct{ k, v []byte }
	var pairs []pair
	l.Range(func(k, v string) bool {
		var kid, vid []byte
		if kid, err = id(ctx, nil, uid.TagK, k); err != nil {
			return false
		}
		if vid, err = id(ctx, nil, uid.TagV, v); err != nil {
			return false
		}
		pairs = append(pairs, pair{kid, vid})
		return true
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(pairs, func(i, j int) bool { return string(pairs[i].k) < string(pairs[j].k) })
	for _, p := range pairs {
		tsuid = append(append(tsuid, p.k...), p.v...)
	}
	return tsuid, nil
}

// AppendRequest makes the samples durable in the WAL (per the WAL's sync mode) and
// adds them to the head. errs, of the same length as samples, receives the
// error of each sample that could not be stored (a name space that is full,
// a new series over a limit of limits.go, req counting the request's); the
// others are stored. A non-nil return means nothing may be acknowledged.
func (h *Head) AppendRequest(ctx context.Context, samples []Sample, errs []error, req *Request) error {
	if err := h.admit(); err != nil { // append_admit.go
		return err
	}
	var series []*memSeries
	if req != nil { // the request's scratch, kept from one batch to the next
		series = append(req.series[:0], make([]*memSeries, len(samples))...)
		defer func() { clear(series); req.series = series[:0] }()
	} else {
		series = make([]*memSeries, len(samples))
	}
	ok := 0
	cutoff := h.retentionFloor()
	for i := range samples {
		if samples[i].T < cutoff {
			errs[i] = fmt.Errorf("%w (%v): timestamp %d ms is before %d", ErrOutOfRetention, h.opts.Retention, samples[i].T, cutoff)
			continue
		}
		// A series' points come one after the other (remote write sends
		// a series with its samples): the next point of the same hint and
		// labels goes to the same series without looking again.
		if i > 0 && series[i-1] != nil && samples[i].Hint != nil && samples[i].Hint == samples[i-1].Hint &&
			samples[i].Labels == samples[i-1].Labels {
			series[i] = series[i-1]
			ok++
			continue
		}
		s := samples[i].Hint.series(h, samples[i].Labels)
		var err error
		if s == nil {
			s, err = h.getOrCreateLimited(ctx, samples[i].Labels, req)
			if err == nil {
				samples[i].Hint.remember(h, s)
			}
		}
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				// Hook: a new name could not be given a UID because the
				// store is out of reach; that is no fault of the point.
				// Refuse the batch (503) so the client retries it whole.
				return err
			}
			errs[i] = err
			continue
		}
		series[i] = s
		ok++
	}
	if ok == 0 {
		return nil
	}
	var seg int
	h.applyMu.RLock()
	pos, err := h.log.Append(func(segment int, buf []byte) []byte {
		seg = segment
		buf = h.walSeries(segment, buf, series) // append_admit.go
		buf = appendStateSamplesHeader(buf, ok)
		var enc stateEncoder
		for i, s := range series {
			if s == nil {
				continue
			}
			buf = enc.append(buf, &s.wal, segment, s.ref, samples[i].T, samples[i].V)
		}
		return buf
	})
	if err != nil {
		h.applyMu.RUnlock()
		// A write that the log could cut off again leaves it usable: the
		// batch is refused and clients retry. A dead log stops writes.
		h.segApplied(seg)
		if h.log.Err() != nil {
			return h.failed(fmt.Errorf("series: writing the wal: %w", err))
		}
		return fmt.Errorf("%w: writing the wal: %v", store.ErrUnavailable, err)
	}
	now := h.opts.Now().UnixMilli()
	var late int64
	for i := 0; i < len(series); {
		s := series[i]
		if s == nil {
			i++
			continue
		}
		// The run of points of one series, under one take of its lock.
		j := i + 1
		for j < len(series) && series[j] == s {
			j++
		}
		for s != nil && !h.appendPoints(s, samples[i:j], seg, now, &late) {
			// The series was forgotten between the lookup and now: the
			// points go to its new incarnation.
			var err error
			if s, err = h.getOrCreate(ctx, samples[i].Labels); err != nil {
				for k := i; k < j; k++ {
					errs[k] = err
				}
			} else {
				samples[i].Hint.remember(h, s)
			}
		}
		i = j
	}
	h.applyMu.RUnlock()
	h.segApplied(seg)
	h.m.points.Add(float64(ok))
	if late > 0 && h.addLate(late) {
		h.sealLateEarly()
	}
	if err := h.log.Commit(pos); err != nil {
		return h.failed(fmt.Errorf("series: syncing the wal: %w", err))
	}
	return nil
}

// failed records an error after which the head accepts no more writes: a
// WAL whose write or fsync failed is in an unknown state.
func (h *Head) failed(err error) error {
	h.fatal.CompareAndSwap(nil, &err)
	h.opts.Logger.Error("the wal failed; refusing writes until restart", "err", err)
	return err
}

// Fatal returns the error that stopped writes, if any.
func (h *Head) Fatal() error {
	if p := h.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// appendToSeries adds one point to the series' open chunk of its hour
// (appendPoints).
func (h *Head) appendToSeries(s *memSeries, t int64, v chunk.Value, seg int, now int64, late *int64) bool {
	one := [1]Sample{{T: t, V: v}}
	return h.appendPoints(s, one[:], seg, now, late)
}

// appendPoints adds points, in order, to the series' open chunks of their
// hours, sealing what is full or past its hour, under one take of the
// series' lock. now is the wall clock (unix ms), read once per batch. It
// returns false, doing nothing, if the series has been forgotten. A point
// that goes to a late chunk adds one to *late: the caller counts the
// batch's in Head.latePoints at once (addLate), one shared counter touched
// per batch instead of per point.
func (h *Head) appendPoints(s *memSeries, pts []Sample, seg int, now int64, late *int64) bool {
	var idx []store.Mutation
	var sealed []*sealedChunk
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return false
	}
	s.lastAppend = now
	graceMs := h.opts.Grace.Milliseconds()
	var oc *openChunk // the chunk of the last point, while it is open
	for k := range pts {
		t, v := pts[k].T, pts[k].V
		if day := dayOf(t); day != s.lastDay {
			s.lastDay = day
			if s.entry == nil {
				s.entry, idx = h.index.add(s.labels, s.tsuid, h.opts.Layout.Salt(s.tsuid), day, idx)
			} else {
				idx = h.index.addDay(s.entry, day, idx)
			}
		}
		if hour := rowkey.HourOf(t); oc == nil || oc.hour != hour {
			i := sort.Search(len(s.open), func(i int) bool { return s.open[i].hour >= hour })
			if i < len(s.open) && s.open[i].hour == hour {
				oc = s.open[i]
			} else {
				oc = h.newOpenChunk(hour, seg, s.maxT, now, s.lastPts, s.lastLate)
				oc.expect = s.lastPts
				if oc.late {
					oc.expect = s.lastLate
				}
				s.open = append(s.open, nil)
				copy(s.open[i+1:], s.open[i:])
				s.open[i] = oc
			}
		}
		oc.pts = append(oc.pts, chunk.Point{T: t, V: v})
		oc.freeze()
		if oc.late {
			oc.lateN++
			*late++
		}
		if seg < oc.minSeg {
			oc.minSeg = seg
		}
		if t > s.maxT {
			s.maxT = t
		}
		if n := oc.length(); n >= s.sealAt && (n >= h.opts.ChunkMaxPoints || !oc.late) {
			sealed = append(sealed, h.sealLocked(s, oc))
			oc = nil
		}
		for j := 0; j < len(s.open); {
			if c := s.open[j]; !c.pinned && c.hour+rowkey.HourMs+graceMs <= s.maxT {
				sealed = append(sealed, h.sealLocked(s, c))
				if c == oc {
					oc = nil
				}
				continue
			}
			j++
		}
	}
	s.mu.Unlock()
	if len(idx) > 0 {
		h.fl.queueIndex(idx)
	}
	if len(sealed) > 0 {
		h.fl.enqueue(sealed)
	}
	return true
}

// sealLocked turns an open chunk into a sealed one: sorted, one point per
// timestamp (the last written wins), visible to reads until it is in the store.
func (h *Head) sealLocked(s *memSeries, oc *openChunk) *sealedChunk {
	for i, c := range s.open {
		if c == oc {
			s.open = slices.Delete(s.open, i, i+1) // zeroes the freed tail slot
			break
		}
	}
	h.latePoints.Add(-oc.lateN)
	if !oc.late {
		s.lastPts = oc.length()
	} else {
		s.lastLate = oc.length()
	}
	sc := &sealedChunk{s: s, hour: oc.hour, pts: SortDedup(oc.thaw()), minSeg: oc.minSeg}
	s.pending = append(s.pending, sc)
	return sc
}

// SortDedup sorts points by time, stably, and keeps the last of equal timestamps.
func SortDedup(pts []chunk.Point) []chunk.Point {
	sorted := true
	for i := 1; i < len(pts); i++ {
		if pts[i].T <= pts[i-1].T {
			sorted = false
			break
		}
	}
	if sorted {
		return pts
	}
	slices.SortStableFunc(pts, func(a, b chunk.Point) int { return cmp.Compare(a.T, b.T) })
	out := pts[:0]
	for i := 0; i < len(pts); i++ {
		if i+1 < len(pts) && pts[i+1].T == pts[i].T {
			continue
		}
		out = append(out, pts[i])
	}
	return out
}

// Snapshot appends to dst the points the head holds for the series l in
// [start, end] (ms, inclusive), sorted, one per timestamp, the newest
// written winning. Reads must take the snapshot before scanning the store:
// a chunk leaves the head only after it is in the store.
func (h *Head) Snapshot(l Labels, start, end int64, dst []chunk.Point) []chunk.Point {
	sh := h.shard(l)
	sh.mu.RLock()
	s := sh.m[l]
	sh.mu.RUnlock()
	if s == nil {
		return dst
	}
	n := len(dst)
	s.mu.Lock()
	// Count first and grow dst once: growing by append as points come
	// copied each series' points several times over (the soak's heap
	// profile: most of all bytes allocated were these copies).
	want := 0
	for _, c := range s.pending {
		want += countRange(c.pts, start, end)
	}
	for _, c := range s.open {
		if c.hour+rowkey.HourMs <= start || c.hour > end {
			continue
		}
		want += c.countRange(start, end)
	}
	dst = s.appendPoints(slices.Grow(dst, want), start, end)
	s.mu.Unlock()
	return append(dst[:n], SortDedup(dst[n:])...)
}

// appendPoints appends to dst the points of s in [start, end]: its sealed
// chunks waiting for the store, then its open chunks (their frozen blocks
// decoded), in that order, not sorted or deduplicated. s.mu is held.
func (s *memSeries) appendPoints(dst []chunk.Point, start, end int64) []chunk.Point {
	for _, c := range s.pending {
		dst = appendRange(dst, c.pts, start, end)
	}
	var it chunk.Iterator // decodes the frozen blocks of every open chunk
	for _, c := range s.open {
		if c.hour+rowkey.HourMs <= start || c.hour > end {
			continue
		}
		dst = c.appendRange(dst, &it, start, end)
	}
	return dst
}

// countRange is the number of pts in [start, end].
func countRange(pts []chunk.Point, start, end int64) int {
	n := 0
	for _, p := range pts {
		if p.T >= start && p.T <= end {
			n++
		}
	}
	return n
}

func appendRange(dst, pts []chunk.Point, start, end int64) []chunk.Point {
	for _, p := range pts {
		if p.T >= start && p.T <= end {
			dst = append(dst, p)
		}
	}
	return dst
}

// sealWhere seals the open chunks pick selects. It hands them to the
// flusher a full batch at a time, not series by series: a flusher woken by
// each series would write (and, on Bigtable, read) rows in batches of one.
func (h *Head) sealWhere(pick func(*openChunk) bool) {
	var sealed []*sealedChunk
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, s := range sh.m {
			s.mu.Lock()
			for j := 0; j < len(s.open); {
				if pick(s.open[j]) {
					sealed = append(sealed, h.sealLocked(s, s.open[j]))
					continue
				}
				j++
			}
			s.mu.Unlock()
			if len(sealed) >= flushBatch {
				h.fl.enqueue(sealed)
				sealed = nil
			}
		}
		sh.mu.RUnlock()
	}
	if len(sealed) > 0 {
		h.fl.enqueue(sealed)
	}
}

// sealAt returns the point count at which the series' in-time chunks seal:
// ChunkMaxPoints less a share of ChunkSpread drawn from the TSUID, the same
// in every process (a replayed head seals where the first one did).
func (h *Head) sealAt(tsuid []byte) int {
	if h.opts.ChunkSpread <= 0 {
		return h.opts.ChunkMaxPoints
	}
	return h.opts.ChunkMaxPoints - int(rowkey.Hash(tsuid)%uint32(h.opts.ChunkSpread+1))
}

// SyncWAL fsyncs the WAL now, whatever its sync mode (OpenTSDB's ?sync).
func (h *Head) SyncWAL() error {
	if err := h.log.Sync(); err != nil {
		return h.failed(fmt.Errorf("series: syncing the wal: %w", err))
	}
	return nil
}
