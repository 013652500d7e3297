package series

import (
	"context"
	"math"
	"slices"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/store"
)

// flushHistograms writes the histogram buffers that are due to the store:
// an hour past its grace, a buffer of chunk-max-points samples, or every
// buffer when all is set (the WAL is over its bound, or the head closes).
// A buffer whose write fails stays, and is tried again at the next sweep.
func (h *Head) flushHistograms(ctx context.Context, all bool) error {
	now := h.opts.Now().UnixMilli()
	graceMs := h.opts.Grace.Milliseconds()
	var due []*histBuf
	h.hist.mu.Lock()
	for _, m := range h.hist.bufs {
		for _, b := range m {
			b.mu.Lock()
			if all || b.hour+rowkey.HourMs+graceMs <= now || len(b.pts) >= h.opts.ChunkMaxPoints {
				due = append(due, b)
			}
			b.mu.Unlock()
		}
	}
	h.hist.mu.Unlock()
	var first error
	for _, b := range due {
		if err := h.flushHistBuf(ctx, b); err != nil {
			h.opts.Logger.Warn("writing histogram samples to the store failed; retrying at the next sweep",
				"series", b.s.labels.String(), "hour", b.hour, "err", err)
			h.m.flushErrors.Inc()
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// flushHistBuf merges the buffer's samples into the row's histogram cell
// of this writer. Samples added while it writes stay for the next flush.
//
// A delete racing the flush wins: deleteRange cannot take the samples
// being written out of the buffer, so it records its range in b.cuts; the
// write (under writeMu, which the delete's store rewrite also holds) leaves
// out the samples in a recorded range. Either the delete job rewrote the
// row before the flush read it, and the flush writes no deleted sample
// back, or it runs after the write and cuts what the flush wrote. A failed
// write leaves the buffer without them too.
func (h *Head) flushHistBuf(ctx context.Context, b *histBuf) error {
	b.mu.Lock()
	if b.taken > 0 || len(b.pts) == 0 {
		b.mu.Unlock()
		h.hist.dropIfEmpty(b)
		return nil
	}
	n := len(b.pts)
	pts := slices.Clone(b.pts)
	b.taken = n
	b.mu.Unlock()
	if hk := h.hist.hooks.Load(); hk != nil && hk.afterTake != nil {
		hk.afterTake()
	}

	err := h.writeHistCell(ctx, b, pts)
	b.mu.Lock()
	b.taken = 0
	if err == nil {
		b.pts = slices.Delete(b.pts, 0, n)
		b.segs = slices.Delete(b.segs, 0, n)
	} else {
		keep := 0
		for i, p := range b.pts {
			if i >= n || !inCuts(b.cuts, p.T) {
				b.pts[keep], b.segs[keep] = p, b.segs[i]
				keep++
			}
		}
		clear(b.pts[keep:])
		b.pts, b.segs = b.pts[:keep], b.segs[:keep]
	}
	b.cuts = nil
	b.minSeg = math.MaxInt
	for _, s := range b.segs {
		b.minSeg = min(b.minSeg, s)
	}
	b.mu.Unlock()
	if err == nil {
		h.hist.dropIfEmpty(b)
	}
	return err
}

// inCuts reports whether t is in one of the ranges.
func inCuts(cuts [][2]int64, t int64) bool {
	for _, c := range cuts {
		if t >= c[0] && t <= c[1] {
			return true
		}
	}
	return false
}

// writeHistCell merges pts (sorted, distinct), less those a delete cut
// since they were taken (b.cuts), over the samples of the row's histogram
// cell, pts winning on equal timestamps, and writes it (deletes it when
// nothing is left), under writeMu.
func (h *Head) writeHistCell(ctx context.Context, b *histBuf, pts []chunk.HistPoint) error {
	h.hist.writeMu.Lock()
	defer h.hist.writeMu.Unlock()
	hour := b.hour
	row := h.fl.layout.AppendRowKey(nil, b.s.tsuid, hour)
	qual := HistQualifier(h.fl.writerID)
	cells, err := h.fl.st.ReadRow(ctx, store.TableData, row)
	if err != nil {
		return err
	}
	if hk := h.hist.hooks.Load(); hk != nil && hk.afterRead != nil {
		hk.afterRead()
	}
	var old []chunk.HistPoint
	found := false
	for _, c := range cells {
		if string(c.Qualifier) != string(qual) {
			continue
		}
		found = true
		if old, err = chunk.DecodeHistograms(nil, c.Value, hour); err != nil {
			h.opts.Logger.Error("an unreadable histogram cell is replaced", "row", row, "err", err)
			old = nil
		}
	}
	// Every delete job that ran before writeMu was taken recorded its
	// cut before it was queued: what b.cuts holds now covers them.
	b.mu.Lock()
	if len(b.cuts) > 0 {
		pts = slices.DeleteFunc(pts, func(p chunk.HistPoint) bool { return inCuts(b.cuts, p.T) })
	}
	b.mu.Unlock()
	merged := mergeHist(old, pts)
	if len(merged) == 0 {
		if !found {
			return nil
		}
		return h.fl.st.Write(ctx, store.TableData, []store.Mutation{{Row: row, Qualifier: qual, Delete: true}})
	}
	if len(merged) > chunk.MaxPoints {
		// More than a chunk holds in one hour (one sample every 55 ms):
		// keep the newest.
		merged = merged[len(merged)-chunk.MaxPoints:]
	}
	v, err := chunk.AppendHistograms(nil, hour, merged)
	if err != nil {
		return err
	}
	return h.fl.st.Write(ctx, store.TableData, []store.Mutation{{Row: row, Qualifier: qual, Value: v}})
}

// mergeHist merges two sorted sample lists; b wins on equal timestamps.
func mergeHist(a, b []chunk.HistPoint) []chunk.HistPoint {
	out := make([]chunk.HistPoint, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].T < b[j].T:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].T < a[i].T:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	return out
}

// dropIfEmpty forgets a buffer that holds nothing.
func (hh *histHead) dropIfEmpty(b *histBuf) {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pts) > 0 || b.taken > 0 {
		return
	}
	if m := hh.bufs[b.s.labels]; m != nil && m[b.hour] == b {
		delete(m, b.hour)
		if len(m) == 0 {
			delete(hh.bufs, b.s.labels)
		}
	}
}

// deleteRange removes the buffered samples of ls in [start, end], as a
// delete does the points of the open chunks; for the samples a flush is
// writing it records the range (flushHistBuf).
func (hh *histHead) deleteRange(ls []Labels, start, end int64) {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	for _, l := range ls {
		for _, b := range hh.bufs[l] {
			b.mu.Lock()
			keep := b.taken // samples being written: the flush leaves out those in a cut
			if b.taken > 0 {
				b.cuts = append(b.cuts, [2]int64{start, end})
			}
			for i := b.taken; i < len(b.pts); i++ {
				if p := b.pts[i]; p.T < start || p.T > end {
					b.pts[keep], b.segs[keep] = p, b.segs[i]
					keep++
				}
			}
			clear(b.pts[keep:])
			b.pts, b.segs = b.pts[:keep], b.segs[:keep]
			b.mu.Unlock()
		}
	}
}

// cutHistCell returns the histogram cell c of a row of hour without its
// samples in [start, end]: the new value, or delete set when none is left
// (changed false when nothing was in the range).
func cutHistCell(value []byte, hour, start, end int64) (nv []byte, del, changed bool, err error) {
	pts, err := chunk.DecodeHistograms(nil, value, hour)
	if err != nil {
		return nil, false, false, err
	}
	kept := slices.DeleteFunc(slices.Clone(pts), func(p chunk.HistPoint) bool { return p.T >= start && p.T <= end })
	switch {
	case len(kept) == len(pts):
		return nil, false, false, nil
	case len(kept) == 0:
		return nil, true, true, nil
	}
	nv, err = chunk.AppendHistograms(nil, hour, kept)
	return nv, false, true, err
}
