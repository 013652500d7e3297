package api

import (
	"net/http"
	"strconv"
	"time"
)

// timed counts and times a route.
func (s *Server) timed(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r)
		if sw.code >= 400 {
			s.rejects.rejected(route, r, sw.code, sw.reply.message())
		}
		s.m.requests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
		s.m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	reply replyCapture // the start of an error reply, for the log
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.reply.capture(w.Header(), w.code, p)
	return w.ResponseWriter.Write(p)
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
