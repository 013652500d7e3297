package series

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	series         prometheus.Gauge
	points         prometheus.Counter
	chunksSealed   prometheus.Counter
	chunksWritten  prometheus.Counter
	flushErrors    prometheus.Counter
	walCorruptions prometheus.Counter
	deletes        prometheus.Counter
	latePoints     prometheus.Counter
	lateEarlySeals prometheus.Counter
	rowFolds       prometheus.Counter
}

func newMetrics(r prometheus.Registerer, h *Head) *metrics {
	m := &metrics{
		series: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hourglass_head_series", Help: "Series held in the head."}),
		points: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_points_appended_total", Help: "Points appended to the head (acknowledged once the WAL commit returns)."}),
		chunksSealed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_chunks_sealed_total", Help: "Chunks sealed (full, or past their hour)."}),
		chunksWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_chunks_written_total", Help: "Sealed chunks written to the store."}),
		flushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_flush_errors_total", Help: "Failed writes of sealed chunks to the store (retried)."}),
		walCorruptions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_wal_corruptions_total", Help: "Torn or corrupt WAL records found and truncated at replay."}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_deletes_total", Help: "Deletes of points recorded (OpenTSDB's /api/query with delete)."}),
		latePoints: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_late_points_total", Help: "Points appended to late chunks (hours already past their grace)."}),
		lateEarlySeals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_late_early_seals_total", Help: "Times the late chunks reached -late-max-points and were all sealed early."}),
		rowFolds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_head_row_folds_total", Help: "Rows whose cells piled up and were rewritten as fewer, full cells."}),
	}
	if r != nil {
		r.MustRegister(m.series, m.points, m.chunksSealed, m.chunksWritten, m.flushErrors, m.walCorruptions, m.deletes,
			m.latePoints, m.lateEarlySeals, m.rowFolds,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "hourglass_head_late_points", Help: "Points in late chunks now (bounded by -late-max-points)."},
				func() float64 { return float64(h.latePoints.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "hourglass_index_series", Help: "Series in the series index."},
				func() float64 { return float64(h.index.Len()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "hourglass_wal_bytes", Help: "Bytes of WAL segments on disk."},
				func() float64 {
					if h.log == nil {
						return 0
					}
					return float64(h.log.Size())
				}),
		)
		registerOpsMetrics(r, h) // metrics_ops.go
	}
	return m
}
