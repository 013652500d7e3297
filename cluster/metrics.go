package cluster

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	calls           *prometheus.CounterVec
	served          *prometheus.CounterVec
	refused         *prometheus.CounterVec
	fanout          prometheus.Histogram
	warnings        prometheus.Counter
	queuedDeletes   prometheus.Counter
	invalidations   prometheus.Counter
	heartbeatErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, n *Node) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hourglass_peer_calls_total",
			Help: "Calls to peers, by operation (snapshot, delete) and result (ok, error, too_large; skipped: a snapshot not asked for, the query range ending before the peer's head)."}, []string{"op", "result"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hourglass_peer_served_total",
			Help: "Peer protocol requests this node answered, by operation."}, []string{"op"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hourglass_peer_refused_total",
			Help: "Peer protocol requests this node refused, by operation and reason (malformed, too_large, busy, failed)."}, []string{"op", "reason"}),
		fanout: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hourglass_peer_fanout_seconds",
			Help:    "Time a query waited for its peers' heads.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}}),
		warnings: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_peer_warnings_total",
			Help: "Warnings added to replies because a peer was down or did not answer."}),
		queuedDeletes: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_peer_deletes_queued_total",
			Help: "Deletes queued in the store for a peer that did not confirm them."}),
		invalidations: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_peer_cache_invalidations_total",
			Help: "Name caches dropped because another node renamed a UID."}),
		heartbeatErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_peer_heartbeat_errors_total",
			Help: "Heartbeats (registration write and registry read) that failed."}),
	}
	if reg != nil {
		live := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hourglass_peers_live",
			Help: "Peers with a recent heartbeat."}, func() float64 { l, _ := n.view(); return float64(len(l)) })
		down := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hourglass_peers_down",
			Help: "Registered peers without a recent heartbeat (named in replies' warnings)."}, func() float64 { _, d := n.view(); return float64(len(d)) })
		reg.MustRegister(m.calls, m.served, m.refused, m.fanout, m.warnings, m.queuedDeletes, m.invalidations, m.heartbeatErrors, live, down)
	}
	return m
}
