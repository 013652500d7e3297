package cluster

import (
	"net/http"

	"hourglass/internal/warnings"
)

// WarningHeader is the response header that carries each warning, one
// header line per warning: OpenTSDB 2.4's replies have no field for them,
// and every dialect's reply gets them the same way.
const WarningHeader = "X-Hourglass-Warning"

// warnWriter adds the warnings gathered so far as headers when the reply
// starts.
type warnWriter struct {
	http.ResponseWriter
	ws      *warnings.List
	started bool
}

func (w *warnWriter) start() {
	if w.started {
		return
	}
	w.started = true
	for _, m := range w.ws.Messages() {
		w.Header().Add(WarningHeader, m)
	}
}

func (w *warnWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *warnWriter) Write(p []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(p)
}

// Flush passes a streamed reply's flush on (remote read).
func (w *warnWriter) Flush() {
	w.start()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *warnWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
