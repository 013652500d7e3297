package series

import (
	"fmt"
	"math"

	"hourglass/store"
)

// admit is the check every append (points, histograms, exemplars) makes
// before it spends work: the head open and not failed, and, while the
// store's writes fail (a Bigtable outage), the WAL within its bound: past
// it, writes are refused (503, clients retry) rather than fill the disk.
// What the WAL acknowledged stays.
func (h *Head) admit() error {
	if h.closed.Load() {
		return ErrClosed
	}
	if p := h.fatal.Load(); p != nil {
		return *p
	}
	if h.fl.Failing() && h.log.Size() > h.opts.WALMaxBytes {
		return fmt.Errorf("%w: writes to the store are failing and the WAL holds %d bytes", store.ErrUnavailable, h.log.Size())
	}
	return nil
}

// retentionFloor returns the first timestamp (ms) the retention keeps now,
// math.MinInt64 without a retention: an append refuses what is older.
func (h *Head) retentionFloor() int64 {
	if h.opts.Retention > 0 {
		return retentionCutoff(h.opts.Now(), h.opts.Retention)
	}
	return math.MinInt64
}

// walSeries is the start of every append's WAL entry, inside the log's
// Append callback for segment: the segment is counted in flight (no
// truncation removes it before the entry is applied; segApplied releases
// it), and the definitions of the series the segment lacks are appended
// to buf.
func (h *Head) walSeries(segment int, buf []byte, series []*memSeries) []byte {
	h.inflightMu.Lock()
	h.inflight[segment]++
	h.inflightMu.Unlock()
	for _, s := range series {
		if s != nil && s.walSeg != segment {
			buf = appendSeriesDef(buf, s.ref, s.labels)
			s.walSeg = segment
		}
	}
	return buf
}

// segApplied releases what walSeries counted in flight for seg, once the
// entry is in memory or failed (seg 0: the Append callback never ran).
func (h *Head) segApplied(seg int) {
	h.inflightMu.Lock()
	if seg != 0 {
		if h.inflight[seg]--; h.inflight[seg] == 0 {
			delete(h.inflight, seg)
		}
	}
	h.inflightMu.Unlock()
}
