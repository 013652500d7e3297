package series

import "hourglass/model"

// Stats are figures for /api/stats and the status page (model.Stats).
type Stats = model.Stats

// eachSeries calls f with every series of the head, under its shard's read
// lock and its own lock.
func (h *Head) eachSeries(f func(s *memSeries)) {
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, s := range sh.m {
			s.mu.Lock()
			f(s)
			s.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
}

// Stats returns current figures.
func (h *Head) Stats() Stats {
	var st Stats
	h.eachSeries(func(s *memSeries) {
		st.Series++
		for _, c := range s.open {
			st.PointsInHead += c.length()
		}
		for _, c := range s.pending {
			st.PointsInHead += len(c.pts)
		}
	})
	st.IndexSeries = h.index.Len()
	if h.log != nil {
		st.WALBytes = h.log.Size()
	}
	return st
}

// HeadMinTime returns a lower bound of every timestamp Snapshot can return
// now: the hour (unix ms) of the oldest open or sealed-but-unwritten chunk;
// ok is false when the head holds none. It visits every series, as Stats
// does: a cluster node reports it in each heartbeat, so that the others
// skip asking this head for time ranges that end before it (cluster/).
func (h *Head) HeadMinTime() (minT int64, ok bool) {
	h.eachSeries(func(s *memSeries) {
		for _, c := range s.open {
			if !ok || c.hour < minT {
				minT, ok = c.hour, true
			}
		}
		for _, c := range s.pending {
			if len(c.pts) == 0 {
				continue // a delete job
			}
			if m := min(c.hour, c.pts[0].T); !ok || m < minT {
				minT, ok = m, true
			}
		}
	})
	return minT, ok
}
