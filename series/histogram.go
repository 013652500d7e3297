package series

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/histogram"

	"hourglass/chunk"
	"hourglass/internal/errclass"
	"hourglass/rowkey"
	"hourglass/store"
)

// Native histogram samples (issue 16). They travel beside the float points:
// through the WAL (an entry of their own), in the head in one buffer per
// series and hour, and into the series' rows as one histogram chunk per row
// and writer (docs/format/histogram.md), under the qualifier
// HistQualifier(writer), whose offset no point cell can have. A flush
// merges the buffer with the row's histogram cell (read, merge, write), so
// late samples and samples replayed after a crash land in the same cell.
// The float readers skip histogram cells (chunk.IsHistogramChunk).

// HistSample is one native histogram sample to append: exactly one of H
// and FH is set.
type HistSample struct {
	Labels Labels
	T      int64
	H      *histogram.Histogram
	FH     *histogram.FloatHistogram
}

// entryHistograms is the WAL entry of histogram samples:
//
//	histograms = 0x04 count:uvarint (ref:uvarint t:varint len:uvarint chunk[len])*count
//
// where chunk is a histogram chunk (docs/format/histogram.md) holding the
// one sample, of the row whose base hour is t's.
const entryHistograms = 0x04

// histQualOffset is the offset field of a histogram cell's qualifier: past
// any hour, so no point cell has it (rowkey.ParseQualifier refuses it,
// which keeps the float flusher away from these cells).
const histQualOffset = math.MaxUint32

// HistQualifier returns the qualifier of writer's histogram cell in a row.
func HistQualifier(writer uint16) []byte {
	return rowkey.AppendQualifier(nil, histQualOffset, writer)
}

// histBuf is the head's histogram samples of one series and hour, sorted
// by time (a later sample replaces one of the same timestamp).
type histBuf struct {
	s      *memSeries
	hour   int64
	pts    []chunk.HistPoint
	segs   []int      // the WAL segment of each sample
	taken  int        // samples a flush is writing (the first taken of pts)
	cuts   [][2]int64 // ranges deleted while a flush was writing them
	mu     sync.Mutex
	minSeg int
}

// histHead holds the histogram buffers: by series labels, then by hour.
type histHead struct {
	mu   sync.Mutex
	bufs map[Labels]map[int64]*histBuf
	// writeMu orders the writes of histogram cells: a flush holds it from
	// reading the row's cell to writing it, a delete job (Deleter.run)
	// while it rewrites the store, so neither writes over the other.
	writeMu sync.Mutex
	hooks   atomic.Pointer[histHooks]
}

// histHooks are test hooks (export_test.go) into a histogram flush: after
// it took a buffer's samples, and after it read the row (writeMu held).
type histHooks struct {
	afterTake, afterRead func()
}

func (hh *histHead) buf(s *memSeries, hour int64) *histBuf {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if hh.bufs == nil {
		hh.bufs = map[Labels]map[int64]*histBuf{}
	}
	m := hh.bufs[s.labels]
	if m == nil {
		m = map[int64]*histBuf{}
		hh.bufs[s.labels] = m
	}
	b := m[hour]
	if b == nil {
		b = &histBuf{s: s, hour: hour, minSeg: math.MaxInt}
		m[hour] = b
	}
	return b
}

// add puts one sample in the buffer of its series and hour.
func (hh *histHead) add(s *memSeries, p chunk.HistPoint, seg int) {
	b := hh.buf(s, rowkey.HourOf(p.T))
	b.mu.Lock()
	defer b.mu.Unlock()
	i, found := slices.BinarySearchFunc(b.pts[b.taken:], p.T, func(q chunk.HistPoint, t int64) int { return cmp.Compare(q.T, t) })
	i += b.taken
	if found {
		b.pts[i], b.segs[i] = p, seg
	} else {
		b.pts, b.segs = slices.Insert(b.pts, i, p), slices.Insert(b.segs, i, seg)
	}
	b.minSeg = min(b.minSeg, seg)
}

// lowWater lowers low to the oldest WAL segment holding a sample of a
// buffer, so the WAL keeps every histogram sample not yet in the store.
func (hh *histHead) lowWater(low int) int {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	for _, m := range hh.bufs {
		for _, b := range m {
			b.mu.Lock()
			low = min(low, b.minSeg)
			b.mu.Unlock()
		}
	}
	return low
}

// snapshot returns the buffered samples of l in [start, end], sorted.
func (hh *histHead) snapshot(l Labels, start, end int64) []chunk.HistPoint {
	hh.mu.Lock()
	m := hh.bufs[l]
	bufs := make([]*histBuf, 0, len(m))
	for _, b := range m {
		if b.hour+rowkey.HourMs > start && b.hour <= end {
			bufs = append(bufs, b)
		}
	}
	hh.mu.Unlock()
	slices.SortFunc(bufs, func(a, b *histBuf) int { return cmp.Compare(a.hour, b.hour) })
	var out []chunk.HistPoint
	for _, b := range bufs {
		b.mu.Lock()
		for _, p := range b.pts {
			if p.T >= start && p.T <= end {
				out = append(out, p)
			}
		}
		b.mu.Unlock()
	}
	return out
}

// HistSnapshot returns the histogram samples of the series l in [start,
// end] that the head holds, sorted by time: the ones not yet in the store
// (a read merges them over the store's, as it does Snapshot's points).
func (h *Head) HistSnapshot(l Labels, start, end int64) []chunk.HistPoint {
	return h.hist.snapshot(l, start, end)
}

// AppendHistograms appends native histogram samples through the WAL, as
// AppendRequest does points: errs[i] receives sample i's own error (an
// invalid histogram, a series over a limit, a time past the retention); the
// returned error means none was stored.
func (h *Head) AppendHistograms(ctx context.Context, samples []HistSample, errs []error, req *Request) error {
	if err := h.admit(); err != nil {
		return err
	}
	cutoff := h.retentionFloor()
	series := make([]*memSeries, len(samples))
	// Every sample's one-sample chunk goes into one buffer, back to back
	// (sample i's is enc[at[i][0]:at[i][1]]), by one encoder: one
	// allocation a request rather than the growth of a fresh slice and
	// fresh encoder scratch per sample.
	enc := make([]byte, 0, 128*len(samples))
	at := make([][2]int, len(samples))
	one := make([]chunk.HistPoint, 1)
	var he chunk.HistEncoder // its scratch serves every sample
	ok := 0
	for i := range samples {
		smp := &samples[i]
		if smp.T < cutoff {
			errs[i] = fmt.Errorf("%w (%v): timestamp %d ms is before %d", ErrOutOfRetention, h.opts.Retention, smp.T, cutoff)
			continue
		}
		one[0] = chunk.HistPoint{T: smp.T, H: smp.H, FH: smp.FH}
		from := len(enc)
		var err error
		if enc, err = he.Append(enc, rowkey.HourOf(smp.T), one); err != nil {
			enc = enc[:from]
			errs[i] = fmt.Errorf("%w: %v", errInvalidHistogram, err)
			continue
		}
		at[i] = [2]int{from, len(enc)}
		s, err := h.getOrCreateLimited(ctx, smp.Labels, req)
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) {
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
	return h.walApply(series, func(buf []byte) []byte {
		buf = append(buf, entryHistograms)
		buf = binary.AppendUvarint(buf, uint64(ok))
		for i, s := range series {
			if s == nil {
				continue
			}
			buf = binary.AppendUvarint(buf, s.ref)
			buf = binary.AppendVarint(buf, samples[i].T)
			b := enc[at[i][0]:at[i][1]]
			buf = binary.AppendUvarint(buf, uint64(len(b)))
			buf = append(buf, b...)
		}
		return buf
	}, func(seg int, now int64) {
		for i, s := range series {
			if s != nil {
				h.histAdd(s, chunk.HistPoint{T: samples[i].T, H: samples[i].H, FH: samples[i].FH}, seg, now)
			}
		}
		h.m.points.Add(float64(ok))
	})
}

// walApply writes an entry of the given series through the WAL as
// AppendRequest writes points: the series' definitions the segment lacks,
// then what entry appends; then apply puts it in memory, with the segment
// counted in flight until it has (so no truncation removes it first), under
// applyMu shared (so deletes stay in the WAL's order); then the WAL commit.
func (h *Head) walApply(series []*memSeries, entry func(buf []byte) []byte, apply func(seg int, now int64)) error {
	var seg int
	h.applyMu.RLock()
	pos, err := h.log.Append(func(segment int, buf []byte) []byte {
		seg = segment
		return entry(h.walSeries(segment, buf, series))
	})
	if err != nil {
		h.applyMu.RUnlock()
		h.segApplied(seg)
		if h.log.Err() != nil {
			return h.failed(fmt.Errorf("series: writing the wal: %w", err))
		}
		return fmt.Errorf("%w: writing the wal: %v", store.ErrUnavailable, err)
	}
	apply(seg, h.opts.Now().UnixMilli())
	h.applyMu.RUnlock()
	h.segApplied(seg)
	if err := h.log.Commit(pos); err != nil {
		return h.failed(fmt.Errorf("series: syncing the wal: %w", err))
	}
	return nil
}

// errInvalidHistogram wraps a histogram the chunk codec refuses (more
// buckets than it holds, spans that do not match the buckets).
var errInvalidHistogram = errclass.New(errclass.ErrInvalid, "series: invalid histogram")

// histAdd puts a sample in the head, and marks the series' day in the
// index as a point does.
func (h *Head) histAdd(s *memSeries, p chunk.HistPoint, seg int, now int64) {
	var idx []store.Mutation
	s.mu.Lock()
	s.lastAppend = now
	if day := dayOf(p.T); day != s.lastDay {
		s.lastDay = day
		if s.entry == nil {
			s.entry, idx = h.index.add(s.labels, s.tsuid, h.opts.Layout.Salt(s.tsuid), day, nil)
		} else {
			idx = h.index.addDay(s.entry, day, nil)
		}
	}
	s.mu.Unlock()
	if len(idx) > 0 {
		h.fl.queueIndex(idx)
	}
	h.hist.add(s, p, seg)
}

// decodeHistograms reads a histograms entry (after its type byte) and
// calls on for each sample; it returns the rest of the record.
func decodeHistograms(rec []byte, on func(ref uint64, p chunk.HistPoint) error) ([]byte, error) {
	return decodeRefRecord(rec, "histogram", func(ref uint64, rec []byte) ([]byte, error) {
		t, n2 := binary.Varint(rec)
		if n2 <= 0 {
			return nil, fmt.Errorf("%w: histogram timestamp", ErrBadRecord)
		}
		rec = rec[n2:]
		l, n3 := binary.Uvarint(rec)
		if n3 <= 0 || l > uint64(len(rec)-n3) {
			return nil, fmt.Errorf("%w: histogram length", ErrBadRecord)
		}
		b := rec[n3 : n3+int(l)]
		rec = rec[n3+int(l):]
		pts, err := chunk.DecodeHistograms(nil, b, rowkey.HourOf(t))
		if err != nil || len(pts) != 1 || pts[0].T != t {
			return nil, fmt.Errorf("%w: histogram sample: %v", ErrBadRecord, err)
		}
		if on != nil {
			if err := on(ref, pts[0]); err != nil {
				return nil, err
			}
		}
		return rec, nil
	})
}

// decodeRefRecord reads a WAL entry of the form
//
//	count:uvarint (ref:uvarint body)*count
//
// (after its type byte), as the histograms and exemplars entries are:
// body reads one body from the front of rec and returns the rest; what
// names the entry in errors. It returns the rest of the record.
func decodeRefRecord(rec []byte, what string, body func(ref uint64, rec []byte) ([]byte, error)) ([]byte, error) {
	cnt, n := binary.Uvarint(rec)
	if n <= 0 || cnt > uint64(len(rec)) {
		return nil, fmt.Errorf("%w: %s count", ErrBadRecord, what)
	}
	rec = rec[n:]
	for range cnt {
		ref, n := binary.Uvarint(rec)
		if n <= 0 {
			return nil, fmt.Errorf("%w: %s ref", ErrBadRecord, what)
		}
		var err error
		if rec, err = body(ref, rec[n:]); err != nil {
			return nil, err
		}
	}
	return rec, nil
}
