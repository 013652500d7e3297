package api

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/auth"
	"hourglass/api/dialect"
	"hourglass/api/opentsdb"
	"hourglass/api/opentsdbhttp"
)

// The server is the dialects' host (dialect.Host): bodies, timing,
// counters and rights, for the handlers it mounts.
var _ dialect.Host = (*Server)(nil)

// ReadBody implements dialect.Host (readBody).
func (s *Server) ReadBody(r *http.Request, buf *bytes.Buffer) error { return s.readBody(r, buf) }

// ReadSnappy implements dialect.Host (readSnappy, rd bounded as sent).
func (s *Server) ReadSnappy(rd io.Reader, buf *bytes.Buffer, maxSent, maxDecoded int64, res dialect.Reservation, admit func(sent, decoded int64) error) error {
	return readSnappy(&dialect.LimitReader{R: rd, N: maxSent, Err: dialect.ErrTooLargeAsSent}, buf, maxSent, maxDecoded, res.(*reservation), admit)
}

// BodyError implements dialect.Host (bodyError).
func (s *Server) BodyError(err error) (int, string) { return s.bodyError(err) }

// Reserve implements dialect.Host: a reservation of the decoding budget.
func (s *Server) Reserve() dialect.Reservation { return s.decoding.reservation() }

// Timed implements dialect.Host (timed).
func (s *Server) Timed(route string, h http.HandlerFunc) http.HandlerFunc { return s.timed(route, h) }

// Points implements dialect.Host: hourglass_points_received_total.
func (s *Server) Points(dialect, outcome string) prometheus.Counter {
	return s.m.points.WithLabelValues(dialect, outcome)
}

// MayDelete implements dialect.Host (mayDelete).
func (s *Server) MayDelete(r *http.Request) bool { return s.mayDelete(r) }

// VersionInfo implements dialect.Host (versionInfo).
func (s *Server) VersionInfo() map[string]string { return s.versionInfo() }

// Addr implements dialect.Host: the listener's address, nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	sl := s.split
	s.mu.Unlock()
	if sl == nil {
		return nil
	}
	return sl.Addr()
}

// Grow implements dialect.Reservation (grow).
func (r *reservation) Grow(n int64) bool { return r.grow(n) }

// Release implements dialect.Reservation (release).
func (r *reservation) Release() { r.release() }

// serveTelnet keeps a telnet connection's life (tracked for Shutdown,
// refused when authentication is on) and hands its lines to the OpenTSDB
// dialect.
func (s *Server) serveTelnet(c net.Conn, br *bufio.Reader) {
	if !s.trackTelnet(c) {
		c.Close()
		return
	}
	defer s.untrackTelnet(c)
	defer c.Close()
	if s.auth != nil && s.auth.Enabled() && !s.cfg.Conn.TelnetAllowUnauthenticated {
		// The line protocol has no way to authenticate.
		s.auth.Fail(auth.ReasonTelnetRefused, c.RemoteAddr().String(), "telnet")
		const msg = "error: authentication is on and the telnet protocol cannot authenticate: use HTTP /api/put, or start hourglass with -telnet.allow-unauthenticated"
		s.rejects.telnetRejected(opentsdbhttp.RejectAuth, "", c.RemoteAddr().String(), msg)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte(msg + "\n"))
		return
	}
	s.ots.ServeTelnet(c, br, telnetConn{s, c.RemoteAddr().String()})
}

// telnetConn is the server's side of a telnet connection (opentsdbhttp.TelnetConn).
type telnetConn struct {
	s      *Server
	remote string
}

// Rejected counts and logs a rejected line (reject_log.go).
func (t telnetConn) Rejected(kind, cmd, msg string) {
	t.s.rejects.telnetRejected(kind, cmd, t.remote, msg)
}

// MayAdmin: only while authentication is off (it is re-read from its
// files, so it is asked at each command).
func (t telnetConn) MayAdmin() bool { return t.s.auth == nil || !t.s.auth.Enabled() }

// SeriesCache counts the connection's cache lookups
// (hourglass_telnet_series_cache_total).
func (t telnetConn) SeriesCache(d opentsdb.CacheStats) {
	t.s.cm.telnetCache.WithLabelValues("hit").Add(float64(d.Hits))
	t.s.cm.telnetCache.WithLabelValues("miss").Add(float64(d.Misses))
	t.s.cm.telnetCache.WithLabelValues("reset").Add(float64(d.Resets))
}

func (t telnetConn) Closing() bool            { return t.s.isClosing() }
func (t telnetConn) IdleLimit() time.Duration { return t.s.cfg.Conn.TelnetIdleTimeout }
func (t telnetConn) IdleTimeout()             { t.s.cm.timeouts.WithLabelValues("telnet_idle").Inc() }
func (t telnetConn) ReadLine(br *bufio.Reader, max int, buf *[]byte) ([]byte, error) {
	return readLine(br, max, buf)
}
func (t telnetConn) IsTimeout(err error) bool { return isTimeout(err) }
