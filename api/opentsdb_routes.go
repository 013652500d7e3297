package api

import (
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/gorilla/mux"
)

// openTSDBRoutes registers the OpenTSDB HTTP API.
func (s *Server) openTSDBRoutes(r *mux.Router) {
	r.HandleFunc("/api/put", s.timed("put", allow(s.handlePut, http.MethodPost)))
	r.HandleFunc("/api/query", s.timed("query", allow(s.handleQuery, http.MethodGet, http.MethodPost, http.MethodDelete)))
}

// timed counts and times a route.
func (s *Server) timed(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r)
		s.m.requests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
		s.m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func goVersion() string { return runtime.Version() }

// statsLines are hourglass's own figures as OpenTSDB's telnet stats prints them.
func (s *Server) statsLines(now time.Time) []string {
	st := s.head.Stats()
	ts := now.Unix()
	line := func(metric string, v any) string {
		return fmt.Sprintf("%s %d %v host=hourglass", metric, ts, v)
	}
	return []string{
		line("hourglass.uptime.seconds", int64(now.Sub(s.started).Seconds())),
		line("hourglass.head.series", st.Series),
		line("hourglass.index.series", st.IndexSeries),
		line("hourglass.head.points", st.PointsInHead),
		line("hourglass.wal.bytes", st.WALBytes),
	}
}
