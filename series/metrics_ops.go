package series

import "github.com/prometheus/client_golang/prometheus"

// registerOpsMetrics registers the figures an operator's dashboard of
// hourglass reads beyond the head's counters (deploy/grafana/dashboards/
// hourglass-self.json): the WAL's fsyncs and their time, the bytes it
// took, its segments, and the flusher's queue. All are read at scrape time.
func registerOpsMetrics(r prometheus.Registerer, h *Head) {
	walStat := func(f func(s walStats) float64) func() float64 {
		return func() float64 {
			if h.log == nil {
				return 0
			}
			st := h.log.Stats()
			return f(walStats{fsyncs: st.Fsyncs, fsyncSeconds: st.FsyncDuration.Seconds(), bytes: st.BytesAppended, segments: st.Segments})
		}
	}
	r.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "hourglass_wal_fsyncs_total", Help: "fsyncs of WAL segments (group commit shares one among concurrent writers)."},
			walStat(func(s walStats) float64 { return float64(s.fsyncs) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "hourglass_wal_fsync_seconds_total", Help: "Time spent in fsyncs of WAL segments; divided by hourglass_wal_fsyncs_total, the mean fsync latency."},
			walStat(func(s walStats) float64 { return s.fsyncSeconds })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "hourglass_wal_bytes_appended_total", Help: "Bytes written to the WAL, framing included."},
			walStat(func(s walStats) float64 { return float64(s.bytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hourglass_wal_segments", Help: "WAL segment files on disk."},
			walStat(func(s walStats) float64 { return float64(s.segments) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hourglass_head_flush_queue_chunks", Help: "Sealed chunks waiting for the flusher or being written to the store."},
			func() float64 { return float64(h.fl.queued()) }),
	)
}

type walStats struct {
	fsyncs       uint64
	fsyncSeconds float64
	bytes        uint64
	segments     int64
}
