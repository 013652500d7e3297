package promhttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/prom"
	"hourglass/model"
)

// tsdbStatus computes the cardinality figures one request at a time and
// keeps the last answer for ttl (Config.StatusTSDBCacheTTL), as Prometheus
// caches its cardinality figures: a dashboard refreshing it costs one walk
// of the index per interval, whatever its number of viewers. maxLimit
// (Config.StatusTSDBMaxLimit) bounds the limit a request may ask.
type tsdbStatus struct {
	maxLimit int
	ttl      time.Duration
	mu       sync.Mutex
	limit    int
	at       time.Time
	body     []byte
	runs     prometheus.Counter
	refused  prometheus.Counter
	took     prometheus.Gauge
}

func newTSDBStatus(reg prometheus.Registerer, maxLimit int, ttl time.Duration) *tsdbStatus {
	s := &tsdbStatus{
		maxLimit: maxLimit, ttl: ttl,
		runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_status_tsdb_computations_total",
			Help: "Walks of the series index for /api/v1/status/tsdb (answers within -prom-status-tsdb-cache-ttl of one reuse it)."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_status_tsdb_limit_refused_total",
			Help: "/api/v1/status/tsdb requests refused for a limit over -prom-status-tsdb-max-limit."}),
		took: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hourglass_status_tsdb_last_duration_seconds",
			Help: "Time the last walk of the series index for /api/v1/status/tsdb took."}),
	}
	if reg != nil {
		reg.MustRegister(s.runs, s.refused, s.took)
	}
	return s
}

// TSDBStat is one name and figure of TSDBStatus.
type TSDBStat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// TSDBStatus is Prometheus' TSDBStatus (web/api/v1).
type TSDBStatus struct {
	HeadStats struct {
		NumSeries     uint64 `json:"numSeries"`
		NumLabelPairs int    `json:"numLabelPairs"`
		ChunkCount    int64  `json:"chunkCount"`
		MinTime       int64  `json:"minTime"`
		MaxTime       int64  `json:"maxTime"`
	} `json:"headStats"`
	SeriesCountByMetricName     []TSDBStat `json:"seriesCountByMetricName"`
	LabelValueCountByLabelName  []TSDBStat `json:"labelValueCountByLabelName"`
	MemoryInBytesByLabelName    []TSDBStat `json:"memoryInBytesByLabelName"`
	SeriesCountByLabelValuePair []TSDBStat `json:"seriesCountByLabelValuePair"`
}

func promTSDBStats(in []model.Stat) []TSDBStat {
	out := make([]TSDBStat, len(in))
	for i, s := range in {
		out[i] = TSDBStat{s.Name, s.Value}
	}
	return out
}

// handleTSDBStatus is /api/v1/status/tsdb, as Prometheus answers it: the
// series and label cardinality of the series index (series.Head.Cardinality),
// each list the limit (default 10, at most -prom-status-tsdb-max-limit)
// largest, the largest first.
// headStats.numSeries counts the series of the index, chunkCount, minTime and
// maxTime the chunks and points of the head.
func (p *queryAPI) handleTSDBStatus(w http.ResponseWriter, r *http.Request) {
	limit := 10
	if v := r.FormValue("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			p.respondError(w, prom.ErrorBadData, "limit must be a positive number")
			return
		}
	}
	ts := p.tsdb
	if limit > ts.maxLimit {
		ts.refused.Inc()
		p.respondError(w, prom.ErrorBadData, fmt.Sprintf("limit must not exceed %d (-prom-status-tsdb-max-limit)", ts.maxLimit))
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.body == nil || ts.limit != limit || time.Since(ts.at) > ts.ttl {
		start := time.Now()
		c := p.card.Cardinality(limit)
		var out TSDBStatus
		out.HeadStats.NumSeries, out.HeadStats.NumLabelPairs = c.NumSeries, c.NumLabelPairs
		out.HeadStats.ChunkCount, out.HeadStats.MinTime, out.HeadStats.MaxTime = c.ChunkCount, c.MinTime, c.MaxTime
		out.SeriesCountByMetricName = promTSDBStats(c.SeriesCountByMetricName)
		out.LabelValueCountByLabelName = promTSDBStats(c.LabelValueCountByLabelName)
		out.MemoryInBytesByLabelName = promTSDBStats(c.MemoryInBytesByLabelName)
		out.SeriesCountByLabelValuePair = promTSDBStats(c.SeriesCountByLabelValuePair)
		body, err := json.Marshal(out)
		if err != nil {
			p.respondError(w, prom.ErrorInternal, err.Error())
			return
		}
		ts.body, ts.limit, ts.at = body, limit, time.Now()
		ts.runs.Inc()
		ts.took.Set(time.Since(start).Seconds())
	}
	p.respond(w, ts.body, nil, nil)
}

// handleBuildInfo is /api/v1/status/buildinfo (Shared.BuildInfo).
func (p *queryAPI) handleBuildInfo(w http.ResponseWriter, r *http.Request) {
	p.respond(w, p.shared.BuildInfo(), nil, nil)
}
