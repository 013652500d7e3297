package series

import "hourglass/rowkey"

// FirstHour returns the earliest hour (ms) at or after the hour of start,
// up to end, in which the head holds a chunk of the series l, open or
// waiting for the flusher: from that hour on the store's rows, and their
// rollups, may not hold every point yet. ok is false when the head holds
// none there. It copies no point (Snapshot would copy them all): a rollup
// read takes rollups before the hour and raw points from it
// (query/rollup_fetch.go). A chunk's hour counts even if its points in it
// are outside [start, end], which only moves the answer earlier.
func (h *Head) FirstHour(l Labels, start, end int64) (hour int64, ok bool) {
	sh := h.shard(l)
	sh.mu.RLock()
	s := sh.m[l]
	sh.mu.RUnlock()
	if s == nil {
		return 0, false
	}
	from := rowkey.HourOf(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	take := func(ch int64) {
		if ch+rowkey.HourMs <= start || ch > end {
			return
		}
		if ch = max(ch, from); !ok || ch < hour {
			hour, ok = ch, true
		}
	}
	for _, c := range s.pending {
		take(c.hour)
	}
	for _, c := range s.open {
		take(c.hour)
	}
	return hour, ok
}
