package series

import "hourglass/model"

// Stats are figures for /api/stats and the status page (model.Stats).
type Stats = model.Stats

// Stats returns current figures.
func (h *Head) Stats() Stats {
	var st Stats
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		st.Series += len(sh.m)
		for _, s := range sh.m {
			s.mu.Lock()
			for _, c := range s.open {
				st.PointsInHead += c.length()
			}
			for _, c := range s.pending {
				st.PointsInHead += len(c.pts)
			}
			s.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	st.IndexSeries = h.index.Len()
	if h.log != nil {
		st.WALBytes = h.log.Size()
	}
	return st
}
