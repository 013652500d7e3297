package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/opentsdbhttp"
	"hourglass/internal/quote"
	"hourglass/internal/ratelog"
)

// rejectLog logs every request answered with a 4xx or 5xx, in every
// dialect (the route wrapper, Server.timed, calls it), so that OpenTSDB's
// "see the TSD logs" holds: route, status, remote address and the reply's
// message, bounded. Lines are rate-limited (ratelog) to rejectLogRate a
// second; the lines it drops are counted and the count is logged with the
// next line that goes out. Every rejection is counted in
// hourglass_requests_rejected_total{route,code}. Safe for concurrent use.
type rejectLog struct {
	log     *slog.Logger
	limit   *ratelog.Limiter
	counter *prometheus.CounterVec
	telnet  *prometheus.CounterVec
}

// rejectLogRate is the most rejected-request lines logged a second.
const rejectLogRate = 10

func newRejectLog(reg *prometheus.Registry, log *slog.Logger) *rejectLog {
	l := &rejectLog{
		log: log, limit: ratelog.New(rejectLogRate),
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_requests_rejected_total",
			Help: "HTTP requests answered with a 4xx or 5xx, by route and status code (each is logged, rate-limited).",
		}, []string{"route", "code"}),
		telnet: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_telnet_rejected_total",
			Help: "Telnet lines rejected, by kind: put (a bad or refused point), unknown (command), too_long (past -telnet-max-line), auth (connection refused), storage (each is logged, rate-limited).",
		}, []string{"kind"}),
	}
	for _, k := range []string{opentsdbhttp.RejectPut, opentsdbhttp.RejectUnknown, opentsdbhttp.RejectTooLong, opentsdbhttp.RejectAuth, opentsdbhttp.RejectStorage} {
		l.telnet.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(l.counter, l.telnet)
	}
	return l
}

// rejected counts and, within the rate, logs one rejected request.
func (l *rejectLog) rejected(route string, r *http.Request, code int, msg string) {
	l.counter.WithLabelValues(route, strconv.Itoa(code)).Inc()
	ok, suppressed := l.limit.Allow()
	if !ok {
		return
	}
	level := slog.LevelWarn
	if code >= 500 {
		level = slog.LevelError
	}
	attrs := []any{"route", route, "method", r.Method, "path", quote.String(r.URL.Path), "status", code,
		"remote", r.RemoteAddr, "message", quote.Message(msg)}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed_before", suppressed)
	}
	l.log.Log(r.Context(), level, "request rejected", attrs...)
}

// telnetRejected counts and, within the same rate as HTTP rejections (one
// token bucket), logs one rejected telnet line: route "telnet", the command
// (bounded), the remote address and the message (bounded by quote).
func (l *rejectLog) telnetRejected(kind, cmd, remote, msg string) {
	l.telnet.WithLabelValues(kind).Inc()
	ok, suppressed := l.limit.Allow()
	if !ok {
		return
	}
	level := slog.LevelWarn
	if kind == opentsdbhttp.RejectStorage {
		level = slog.LevelError
	}
	attrs := []any{"route", "telnet", "command", quote.String(cmd), "kind", kind,
		"remote", remote, "message", quote.Message(msg)}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed_before", suppressed)
	}
	l.log.Log(context.Background(), level, "request rejected", attrs...)
}

// replyCapture keeps the first bytes of an error reply's body, for the log;
// a gzip reply (OpenTSDB compresses for clients that accept it) is kept as
// sent, up to maxCompressedCapture bytes, and inflated when logged.
type replyCapture struct {
	buf  []byte
	gzip bool
}

const maxCompressedCapture = 8 << 10

func (c *replyCapture) capture(h http.Header, code int, p []byte) {
	if code < 400 {
		return
	}
	max := quote.MaxMessage
	if enc := h.Get("Content-Encoding"); enc != "" {
		if enc != "gzip" {
			c.buf = []byte("(a reply in " + quote.String(enc) + ")")
			return
		}
		c.gzip, max = true, maxCompressedCapture
	}
	if len(c.buf) < max {
		c.buf = append(c.buf, p[:min(len(p), max-len(c.buf))]...)
	}
}

// message returns what was captured, inflated if it was gzip.
func (c *replyCapture) message() string {
	if !c.gzip {
		return string(c.buf)
	}
	zr, err := gzip.NewReader(bytes.NewReader(c.buf))
	if err != nil {
		return "(a gzip reply)"
	}
	b, _ := io.ReadAll(io.LimitReader(zr, quote.MaxMessage))
	return string(b)
}
