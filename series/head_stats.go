package series

// Stats are figures for /api/stats and the status page.
type Stats struct {
	Series       int   // series in the head
	IndexSeries  int   // series in the index
	PointsInHead int   // points in open and sealed-but-unwritten chunks
	WALBytes     int64 // bytes of WAL on disk
}

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
				st.PointsInHead += len(c.pts)
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
