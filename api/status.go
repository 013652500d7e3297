package api

import (
	"hourglass/api/opentsdbhttp"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// statusReply is the body of /api/status: the server's own figures in one
// small JSON object, for the web page's status panel and for people with
// curl. Rates are left to the reader: two replies' pointsStored and now give
// points per second over any interval it likes.
type statusReply struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	// Started and Now are Unix milliseconds; UptimeSeconds is their difference.
	Started       int64   `json:"started"`
	Now           int64   `json:"now"`
	UptimeSeconds float64 `json:"uptimeSeconds"`
	// Series is the series the index knows of; HeadSeries those with an
	// open chunk in memory, holding PointsInHead points.
	Series       int `json:"series"`
	HeadSeries   int `json:"headSeries"`
	PointsInHead int `json:"pointsInHead"`
	// PointsStored and PointsRejected count the points received by every
	// dialect since the process started.
	PointsStored   float64 `json:"pointsStored"`
	PointsRejected float64 `json:"pointsRejected"`
	WALBytes       int64   `json:"walBytes"`
	// StoreBytes is the store's size on disk, or null when the store cannot tell.
	StoreBytes *uint64 `json:"storeBytes"`
}

func (s *Server) statusRoutes(r *mux.Router) {
	r.HandleFunc("/api/status", s.timed("status", opentsdbhttp.Allow(s.handleStatus, http.MethodGet, http.MethodHead)))
}

// handleStatus is /api/status.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	st := s.deps.Figures()
	now := time.Now()
	v := s.versionInfo()
	rep := statusReply{
		Version:       s.cfg.Version,
		Revision:      v["short_revision"],
		Started:       s.started.UnixMilli(),
		Now:           now.UnixMilli(),
		UptimeSeconds: now.Sub(s.started).Seconds(),
		Series:        st.Series,
		HeadSeries:    st.HeadSeries,
		PointsInHead:  st.PointsInHead,
		WALBytes:      st.WALBytes,
	}
	rep.PointsStored, rep.PointsRejected = pointTotals(s.m.points)
	if n, ok := s.deps.DiskUsage(); ok {
		rep.StoreBytes = &n
	}
	w.Header().Set("Cache-Control", "no-store")
	opentsdbhttp.WriteJSON(w, http.StatusOK, rep)
}

// pointTotals sums hourglass_points_received_total over the dialects:
// points stored, and points rejected or failed.
func pointTotals(c *prometheus.CounterVec) (stored, rejected float64) {
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil || d.Counter == nil {
			continue
		}
		outcome := ""
		for _, l := range d.Label {
			if l.GetName() == "outcome" {
				outcome = l.GetValue()
			}
		}
		if outcome == "stored" {
			stored += d.Counter.GetValue()
		} else {
			rejected += d.Counter.GetValue()
		}
	}
	return stored, rejected
}
