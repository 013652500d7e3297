package api

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/auth"
	"hourglass/api/dialect"
)

// ConnConfig bounds connections and says who may use them. Zero values mean the defaults.
type ConnConfig struct {
	// MaxConnections bounds the connections open at once (HTTP and telnet);
	// past it a new connection is closed at once. Default 4096.
	MaxConnections int
	// ReadHeaderTimeout bounds the time from a connection's first byte (or
	// its TLS handshake), or a request's, to the end of its headers. Default 30 s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive HTTP connection idle this long. Default 5 m.
	IdleTimeout time.Duration
	// BodyReadTimeout and BodyMinRate bound the reading of a request body:
	// it must be read within BodyReadTimeout plus one second per BodyMinRate
	// bytes read, so a large body streamed at a fair rate goes through and
	// a trickle is cut. Defaults 30 s and 4096 bytes/s.
	BodyReadTimeout time.Duration
	BodyMinRate     int64
	// TelnetIdleTimeout closes a telnet connection that sends nothing this long. Default 5 m.
	TelnetIdleTimeout time.Duration
	// Auth authenticates HTTP requests and holds the TLS configuration; nil: neither.
	Auth *auth.Authenticator
	// TelnetAllowUnauthenticated accepts telnet connections when
	// authentication is on (the line protocol has no way to authenticate).
	TelnetAllowUnauthenticated bool
	// DebugPprof serves net/http/pprof at /debug/pprof/ (admin scope).
	DebugPprof bool
}

// DefaultConnConfig is the connection limits' defaults (DefaultConfig's Conn).
func DefaultConnConfig() ConnConfig {
	return ConnConfig{
		MaxConnections:    4096,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		BodyReadTimeout:   30 * time.Second,
		BodyMinRate:       4096,
		TelnetIdleTimeout: 5 * time.Minute,
	}
}

func (c *ConnConfig) fill() {
	d := DefaultConnConfig()
	dialect.OrDefault(&c.MaxConnections, d.MaxConnections)
	dialect.OrDefault(&c.ReadHeaderTimeout, d.ReadHeaderTimeout)
	dialect.OrDefault(&c.IdleTimeout, d.IdleTimeout)
	dialect.OrDefault(&c.BodyReadTimeout, d.BodyReadTimeout)
	dialect.OrDefault(&c.BodyMinRate, d.BodyMinRate)
	dialect.OrDefault(&c.TelnetIdleTimeout, d.TelnetIdleTimeout)
}

type connMetrics struct {
	open     prometheus.Gauge
	rejected *prometheus.CounterVec
	timeouts *prometheus.CounterVec
	tlsFails prometheus.Counter
	// telnetCache: the telnet connections' caches of series (hit, miss, reset).
	telnetCache *prometheus.CounterVec
}

func newConnMetrics(reg *prometheus.Registry) *connMetrics {
	m := &connMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hourglass_connections_open", Help: "Connections open (HTTP and telnet)."}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_connections_rejected_total", Help: "Connections closed at once, by reason (max_connections: past -max-connections)."}, []string{"reason"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_connection_timeouts_total", Help: "Connections closed for slowness, by what was awaited: header (-http-read-header-timeout), idle (-http-idle-timeout), body (-body-read-timeout, -body-min-rate), telnet_idle (-telnet-idle-timeout)."}, []string{"kind"}),
		tlsFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_tls_handshake_failures_total", Help: "Connections closed because their TLS handshake failed (plain HTTP on a TLS port among them)."}),
		telnetCache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_telnet_series_cache_total", Help: "Telnet put lines by what each connection's cache of series (4 MiB at most) did: hit (the series was remembered: no parse of its names), miss (parsed and remembered); reset counts the times a full cache forgot every series."}, []string{"result"}),
	}
	for _, r := range []string{"hit", "miss", "reset"} {
		m.telnetCache.WithLabelValues(r)
	}
	m.rejected.WithLabelValues("max_connections")
	for _, k := range []string{"header", "idle", "body", "telnet_idle"} {
		m.timeouts.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.open, m.rejected, m.timeouts, m.tlsFails, m.telnetCache)
	}
	return m
}

// splitListener accepts connections on one port and tells HTTP from the
// telnet-style line protocol by the first byte, as OpenTSDB does: an
// uppercase ASCII letter starts an HTTP request line (GET, POST, ...);
// anything else is the line protocol. With TLS, the first byte is looked
// at after the handshake: both protocols run inside TLS.
type splitListener struct {
	net.Listener
	s      *Server
	tls    *tls.Config
	conns  chan net.Conn
	telnet func(net.Conn, *bufio.Reader)
	open   atomic.Int64
	once   sync.Once
	done   chan struct{}
	err    error
	wg     sync.WaitGroup
}

func (s *Server) newSplitListener(ln net.Listener) *splitListener {
	l := &splitListener{Listener: ln, s: s, conns: make(chan net.Conn), telnet: s.serveTelnet, done: make(chan struct{})}
	if s.auth != nil {
		l.tls = s.auth.TLSConfig()
	}
	go l.loop()
	return l
}

func (l *splitListener) loop() {
	max := int64(l.s.cfg.Conn.MaxConnections)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			// Set inside the once, before done closes, so Accept reads it
			// safely; after Close it stays nil (net.ErrClosed).
			l.once.Do(func() { l.err = err; close(l.done) })
			return
		}
		if l.open.Add(1) > max {
			l.open.Add(-1)
			l.s.cm.rejected.WithLabelValues("max_connections").Inc()
			c.Close()
			continue
		}
		l.s.cm.open.Inc()
		l.wg.Add(1)
		go l.classify(&countedConn{Conn: c, l: l})
	}
}

func (l *splitListener) classify(cc *countedConn) {
	defer l.wg.Done()
	var c net.Conn = cc
	// The handshake and the first byte come within the header timeout.
	_ = c.SetReadDeadline(time.Now().Add(l.s.cfg.Conn.ReadHeaderTimeout))
	if l.tls != nil {
		tc := tls.Server(cc, l.tls)
		_ = tc.SetWriteDeadline(time.Now().Add(l.s.cfg.Conn.ReadHeaderTimeout))
		if err := tc.Handshake(); err != nil {
			l.s.cm.tlsFails.Inc()
			var re tls.RecordHeaderError
			if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader[:]) {
				// As Go's own TLS server answers plain HTTP.
				_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			}
			cc.Close()
			return
		}
		_ = tc.SetWriteDeadline(time.Time{})
		c = tc
	}
	br := bufio.NewReaderSize(c, 64<<10)
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		if isTimeout(err) {
			l.s.cm.timeouts.WithLabelValues("header").Inc()
		}
		c.Close()
		return
	}
	if b[0] >= 'A' && b[0] <= 'Z' {
		cc.http.Store(true)
		select {
		case l.conns <- &peekedConn{Conn: c, r: br, cc: cc}:
		case <-l.done:
			c.Close()
		}
		return
	}
	l.telnet(c, br)
}

func looksLikeHTTP(hdr []byte) bool {
	switch string(hdr) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH":
		return true
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Accept returns the next HTTP connection.
func (l *splitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

func (l *splitListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// countedConn is an accepted connection: it holds a place under
// -max-connections until closed, and counts the header and idle timeouts
// of an HTTP connection by the state net/http last reported.
type countedConn struct {
	net.Conn
	l      *splitListener
	closed atomic.Bool
	http   atomic.Bool
	state  atomic.Int32 // http.ConnState
	reads  atomic.Int64 // bytes read
	idleAt atomic.Int64 // reads when the connection last went idle
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.reads.Add(int64(n))
	if err != nil && c.http.Load() && isTimeout(err) {
		switch http.ConnState(c.state.Load()) {
		case http.StateNew:
			c.l.s.cm.timeouts.WithLabelValues("header").Inc()
		case http.StateIdle:
			if c.reads.Load() == c.idleAt.Load() {
				c.l.s.cm.timeouts.WithLabelValues("idle").Inc()
			} else {
				c.l.s.cm.timeouts.WithLabelValues("header").Inc()
			}
		}
	}
	return n, err
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
		c.l.s.cm.open.Dec()
	}
	return c.Conn.Close()
}

// connState is the http.Server's ConnState hook: it tells each connection
// its state, for counting its timeouts.
func connState(c net.Conn, st http.ConnState) {
	pc, ok := c.(*peekedConn)
	if !ok {
		return
	}
	if st == http.StateIdle {
		pc.cc.idleAt.Store(pc.cc.reads.Load())
	}
	pc.cc.state.Store(int32(st))
}

// peekedConn is a connection whose first bytes sit in a bufio.Reader.
type peekedConn struct {
	net.Conn
	r  *bufio.Reader
	cc *countedConn
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// bodyDeadlines bounds the reading of each request body (ConnConfig.BodyReadTimeout, BodyMinRate).
func (s *Server) bodyDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		start := time.Now()
		b := &deadlineBody{ReadCloser: r.Body, rc: rc, start: start, s: s}
		if rc.SetReadDeadline(start.Add(s.cfg.Conn.BodyReadTimeout)) == nil {
			r.Body = b
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody moves the connection's read deadline as the body arrives:
// BodyReadTimeout after the start plus one second per BodyMinRate bytes.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	s        *Server
	start    time.Time
	n        int64
	timedOut bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.n += int64(n)
		cfg := &b.s.cfg.Conn
		extra := time.Duration(float64(b.n) / float64(cfg.BodyMinRate) * float64(time.Second))
		_ = b.rc.SetReadDeadline(b.start.Add(cfg.BodyReadTimeout + extra))
	}
	if err == io.EOF {
		// The body is read: net/http now reads the connection in the
		// background to see it close, and a deadline there would cancel
		// the request's context however long the handler legitimately takes.
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	if err != nil && !b.timedOut && isTimeout(err) {
		b.timedOut = true
		b.s.cm.timeouts.WithLabelValues("body").Inc()
		err = fmt.Errorf("request body too slow: %d bytes in %s, under the %d bytes/s required past the first %s (-body-min-rate, -body-read-timeout): %w",
			b.n, time.Since(b.start).Round(time.Millisecond), b.s.cfg.Conn.BodyMinRate, b.s.cfg.Conn.BodyReadTimeout, err)
	}
	return n, err
}

// pprofHandler serves net/http/pprof under pprofPrefix (-debug.pprof).
func pprofHandler(w http.ResponseWriter, r *http.Request) {
	switch name := strings.TrimPrefix(r.URL.Path, pprofPrefix); name {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}
