// Package api is hourglass's server: one listener that splits the
// telnet-style line protocol from HTTP, request bodies within their limits
// and a decoding budget, authentication, reject logging, /healthz, /metrics,
// /api/status and the routing. It mounts the dialects' handlers
// (api/opentsdbhttp, api/promhttp), which parse with the pure codecs
// (api/opentsdb, api/prom) and call ingest/ and query/; the server gives
// them what they share (dialect.Host) and knows no storage type: internal/app
// builds its Deps.
package api

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	metricshttp "github.com/prometheus/client_golang/prometheus/promhttp"

	"hourglass/api/dialect"
	"hourglass/api/promhttp"

	"hourglass/api/auth"
	"hourglass/api/opentsdbhttp"
	"hourglass/web"
)

// Config holds the limits and switches of the outside. Zero values mean the defaults.
type Config struct {
	// OpenTSDBConfig holds the OpenTSDB dialect's limits and switches, and
	// the body size, query timeout and version every dialect uses: its
	// fields are read and set as Config's own (cfg.MaxBodyBytes).
	OpenTSDBConfig

	// MaxDecodingBytes bounds the bytes all request bodies being read and
	// decoded hold at once (body.go, decode_budget.go). Default 512 MiB.
	MaxDecodingBytes int64
	// SnapshotDir is where /api/v1/admin/tsdb/snapshot writes snapshots (<data-dir>/snapshots).
	SnapshotDir string

	// Prom holds the limits of the Prometheus dialect (api/promhttp).
	Prom PromConfig

	// Conn holds the connection limits, TLS and authentication (listener.go).
	Conn ConnConfig
}

// OpenTSDBConfig holds the limits of the OpenTSDB dialect.
type OpenTSDBConfig = opentsdbhttp.Config

// DefaultCORSHeaders is OpenTSDB's Access-Control-Allow-Headers.
const DefaultCORSHeaders = "Authorization, Content-Type, Accept, Origin, User-Agent, DNT, Cache-Control, X-Mx-ReqToken, Keep-Alive, X-Requested-With, If-Modified-Since"

// DefaultConfig is the configuration with every default: the one place a
// default of the outside is written (cmd/hourglass binds its flags to it).
func DefaultConfig() Config {
	return Config{
		OpenTSDBConfig: OpenTSDBConfig{
			MaxBodyBytes:        64 << 20,
			MaxDecodedBytes:     64 << 20,
			TelnetMaxLine:       1024,
			QueryTimeout:        2 * time.Minute,
			Version:             "dev",
			PutStreamBytes:      8 << 20,
			PutMaxErrors:        10000,
			HistogramMaxBuckets: 100,
			LookupMaxResults:    100000,
			SuggestMaxResults:   100000,
			MaxAnnotations:      10000,
			LastMaxSeries:       100000,
			QueryLogSize:        256,
			CORSHeaders:         DefaultCORSHeaders,
		},
		MaxDecodingBytes: 512 << 20,
		Prom:             promhttp.DefaultConfig(),
		Conn:             DefaultConnConfig(),
	}
}

// fill gives the fields left zero their DefaultConfig values.
func (c *Config) fill() {
	d := DefaultConfig()
	dialect.OrDefault(&c.MaxBodyBytes, d.MaxBodyBytes)
	dialect.OrDefault(&c.MaxDecodedBytes, d.MaxDecodedBytes)
	dialect.OrDefault(&c.MaxDecodingBytes, d.MaxDecodingBytes)
	dialect.OrDefault(&c.TelnetMaxLine, d.TelnetMaxLine)
	dialect.OrDefault(&c.QueryTimeout, d.QueryTimeout)
	dialect.OrDefault(&c.PutStreamBytes, d.PutStreamBytes)
	dialect.OrDefault(&c.PutMaxErrors, d.PutMaxErrors)
	dialect.OrDefault(&c.HistogramMaxBuckets, d.HistogramMaxBuckets)
	dialect.OrDefault(&c.LookupMaxResults, d.LookupMaxResults)
	dialect.OrDefault(&c.SuggestMaxResults, d.SuggestMaxResults)
	dialect.OrDefault(&c.MaxAnnotations, d.MaxAnnotations)
	dialect.OrDefault(&c.LastMaxSeries, d.LastMaxSeries)
	dialect.OrDefault(&c.QueryLogSize, d.QueryLogSize)
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.CORSHeaders == "" {
		c.CORSHeaders = d.CORSHeaders
	}
	c.Conn.fill()
}

// Server serves every dialect on one listener. Create it with New.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	reg     *prometheus.Registry
	router  *mux.Router
	started time.Time
	m       *serverMetrics
	cm      *connMetrics
	auth    *auth.Authenticator // nil: no authentication

	rejects *rejectLog // reject_log.go

	decoding *decodeBudget // decode_budget.go

	ots  *opentsdbhttp.Handler // the OpenTSDB dialect (api/opentsdbhttp)
	prom *promhttp.Handler     // the Prometheus dialect (api/promhttp)

	mu      sync.Mutex
	http    *http.Server
	split   *splitListener
	telnets map[net.Conn]struct{}
	closing bool
	wg      sync.WaitGroup
}

// PromConfig holds the limits of the Prometheus dialect.
type PromConfig = promhttp.Config

// Figures are the head's figures /api/status reports.
type Figures struct {
	Series       int   // series in the index
	HeadSeries   int   // series in the head
	PointsInHead int   // points not yet flushed
	WALBytes     int64 // the write-ahead log's size
}

// Deps are what the server and its dialects use; internal/app builds them
// from the concrete types.
type Deps struct {
	// Fatal reports the error that stopped the storage (nil while
	// healthy): /healthz.
	Fatal func() error
	// Figures reads the head's figures for /api/status.
	Figures func() Figures
	// DiskUsage is the store's size on disk; ok is false when the store
	// cannot tell.
	DiskUsage func() (n uint64, ok bool)
	OpenTSDB  opentsdbhttp.Deps
	// Prom's OpenTSDBQuery is the OpenTSDB dialect's; New sets it.
	Prom promhttp.Deps
	// Peer serves the peer protocol and PeerMiddleware gathers each
	// request's warnings (package cluster); both nil on a single node
	// (cluster.go).
	Peer           http.Handler
	PeerMiddleware func(http.Handler) http.Handler
}

// New returns a server over deps. reg receives the server's own metrics
// and is exposed at /metrics.
func New(cfg Config, deps Deps, reg *prometheus.Registry, log *slog.Logger) *Server {
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		cfg: cfg, deps: deps, log: log, reg: reg,
		started: time.Now(), telnets: map[net.Conn]struct{}{},
	}
	s.m = newServerMetrics(reg)
	s.cm = newConnMetrics(reg)
	s.auth = cfg.Conn.Auth
	s.rejects = newRejectLog(reg, log)
	s.decoding = newDecodeBudget(cfg.MaxDecodingBytes, reg)
	s.ots = opentsdbhttp.New(cfg.OpenTSDBConfig, deps.OpenTSDB, s, reg, log)
	deps.Prom.OpenTSDBQuery = s.ots.QueryHandler()
	s.prom = promhttp.New(cfg.Prom, promhttp.Shared{
		MaxBodyBytes: cfg.MaxBodyBytes, QueryTimeout: cfg.QueryTimeout, AllowDelete: cfg.AllowDelete,
		SnapshotDir: cfg.SnapshotDir, BuildInfo: promBuildInfo,
	}, deps.Prom, s, reg, log)
	s.router = s.routes()
	return s
}

// Handler returns the HTTP handler, authentication included (for tests
// that need no listener).
func (s *Server) Handler() http.Handler { return s.router }

func (s *Server) routes() *mux.Router {
	r := mux.NewRouter()
	r.HandleFunc("/healthz", s.handleHealth)
	if s.reg != nil {
		r.Handle("/metrics", metricshttp.HandlerFor(s.reg, metricshttp.HandlerOpts{Registry: s.reg}))
	}
	s.prom.Routes(r)
	s.ots.Routes(r)
	s.statusRoutes(r)
	web.Register(r)
	s.clusterRoutes(r)
	if s.cfg.Conn.DebugPprof {
		r.PathPrefix(pprofPrefix).HandlerFunc(pprofHandler)
	}
	nf := http.Handler(http.HandlerFunc(s.notFound))
	if s.auth != nil {
		r.Use(s.authenticated)
		nf = s.authenticated(nf)
	}
	r.NotFoundHandler = nf
	r.MethodNotAllowedHandler = nf
	return r
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.deps.Fatal(); err != nil {
		http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Serve accepts connections on ln until Shutdown. It returns
// http.ErrServerClosed after a Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.split = s.newSplitListener(ln)
	s.http = &http.Server{
		Handler:           s.bodyDeadlines(s.router),
		ReadHeaderTimeout: s.cfg.Conn.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.Conn.IdleTimeout,
		ConnState:         connState,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	hs, sl := s.http, s.split
	s.mu.Unlock()
	return hs.Serve(sl)
}

// Shutdown stops accepting, lets requests in flight finish (each one is
// acknowledged or not, never half) and closes telnet connections after the
// batch they are writing.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	hs, sl := s.http, s.split
	for c := range s.telnets {
		// Wake the reader; the connection finishes its batch and closes.
		_ = c.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	var err error
	if hs != nil {
		err = hs.Shutdown(ctx)
	}
	if sl != nil {
		sl.Close()
		done := make(chan struct{})
		go func() { sl.wg.Wait(); s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
		}
	}
	return err
}

func (s *Server) trackTelnet(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.telnets[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrackTelnet(c net.Conn) {
	s.mu.Lock()
	delete(s.telnets, c)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// readLine reads one line of at most max bytes, without its end of line: in
// br's buffer when the line is there whole (valid until br is read again),
// else gathered in *buf, which it grows. A longer line is consumed whole and
// reported as opentsdbhttp.ErrLineTooLong.
func readLine(br *bufio.Reader, max int, buf *[]byte) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err == nil && len(frag) <= max+2 {
		line := trimEOL(frag) // no copy
		if len(line) > max {
			return line, opentsdbhttp.ErrLineTooLong
		}
		return line, nil
	}
	b := (*buf)[:0]
	defer func() { *buf = b[:0] }()
	tooLong := false
	for {
		if !tooLong {
			if len(b)+len(frag) > max+2 {
				tooLong = true
			} else {
				b = append(b, frag...)
			}
		}
		if err == bufio.ErrBufferFull {
			frag, err = br.ReadSlice('\n')
			continue
		}
		if err != nil {
			if err.Error() == "EOF" && len(b) > 0 && !tooLong {
				return trimEOL(b), nil
			}
			return b, err
		}
		if tooLong {
			return b, opentsdbhttp.ErrLineTooLong
		}
		b = trimEOL(b)
		if len(b) > max {
			return b, opentsdbhttp.ErrLineTooLong
		}
		return b, nil
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

type serverMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	points   *prometheus.CounterVec
}

func newServerMetrics(reg *prometheus.Registry) *serverMetrics {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_http_requests_total", Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hourglass_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"route"}),
		points: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_points_received_total", Help: "Points received by dialect and outcome."}, []string{"dialect", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.points)
	}
	return m
}
