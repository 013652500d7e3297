package api

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"hourglass/api/prom"
	"hourglass/query"
)

// promAPI is the Prometheus dialect: remote write and read, and the query
// API on the official PromQL engine over the engine's Queryable.
type promAPI struct {
	s         *Server
	cfg       PromConfig
	engine    *promql.Engine
	queryable storage.Queryable
	parser    parser.Parser
	limiter   *promLimiter
	meta      *promMetadata
	snap      *snapshotter
	tsdb      *tsdbStatus
	decoders  sync.Pool // *prom.Decoder
	now       func() time.Time
}

// promRoutes registers the Prometheus HTTP API: remote write and read, the
// query API Grafana's Prometheus data source calls, and /api/v1/query, which
// it shares with OpenTSDB (see handleQueryShared).
func (s *Server) promRoutes(r *mux.Router) {
	s.cfg.Prom.fill()
	cfg := s.cfg.Prom
	p := &promAPI{
		s:       s,
		cfg:     cfg,
		parser:  parser.NewParser(parser.Options{}),
		limiter: newPromLimiter(cfg.WriteMaxInflightBytes, cfg.WriteMaxInflightRequests),
		meta:    newPromMetadata(cfg.MaxMetadata),
		snap:    newSnapshotter(s.reg),
		tsdb:    newTSDBStatus(s.reg),
		now:     time.Now,
	}
	p.decoders.New = func() any { return &prom.Decoder{} }
	p.queryable = s.engine.Queryable(query.PromLimits{MaxSeries: cfg.MaxSeries, MaxSamples: cfg.MaxSamples, LookbackDelta: cfg.LookbackDelta})
	p.engine = promql.NewEngine(promql.EngineOpts{
		Logger:               s.log.With("component", "promql"),
		Reg:                  s.reg,
		MaxSamples:           cfg.MaxSamples,
		Timeout:              s.cfg.QueryTimeout,
		LookbackDelta:        cfg.LookbackDelta,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		NoStepSubqueryIntervalFn: func(int64) int64 {
			return time.Minute.Milliseconds() // Prometheus' default global evaluation interval
		},
		Parser: p.parser,
	})

	const get, post = http.MethodGet, http.MethodPost
	route := func(path, name string, h http.HandlerFunc, methods ...string) {
		r.HandleFunc(path, s.timed(name, promMethods(h, methods...)))
	}
	route("/api/v1/write", "prom_write", p.handleWrite, post)
	route("/api/v1/read", "prom_read", p.handleRead, post)
	r.HandleFunc("/api/v1/query", p.handleQueryShared)
	route("/api/v1/query_range", "prom_query_range", p.handleQueryRange, get, post)
	route("/api/v1/labels", "prom_labels", p.handleLabels, get, post)
	route("/api/v1/label/{name}/values", "prom_label_values", p.handleLabelValues, get)
	route("/api/v1/series", "prom_series", p.handleSeries, get, post)
	route("/api/v1/metadata", "prom_metadata", p.handleMetadata, get)
	route("/api/v1/status/buildinfo", "prom_buildinfo", p.handleBuildInfo, get)
	route("/api/v1/status/tsdb", "prom_status_tsdb", p.handleTSDBStatus, get)
	route("/api/v1/rules", "prom_rules", p.handleRules, get, post)
	route("/api/v1/query_exemplars", "prom_exemplars", p.handleExemplars, get, post)
	route("/api/v1/admin/tsdb/delete_series", "prom_delete_series", p.handleDeleteSeries, post, http.MethodPut)
	route("/api/v1/admin/tsdb/clean_tombstones", "prom_clean_tombstones", p.handleCleanTombstones, post, http.MethodPut)
	route("/api/v1/admin/tsdb/snapshot", "prom_snapshot", p.handleSnapshot, post, http.MethodPut)
}

// promMethods answers other methods 405, as Prometheus' router does.
func promMethods(h http.HandlerFunc, methods ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, m := range methods {
			if r.Method == m {
				h(w, r)
				return
			}
		}
		w.Header().Set("Allow", strings.Join(methods, ", "))
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// promMaxFormBytes bounds a form-encoded body, as net/http's ParseForm does.
const promMaxFormBytes = 10 << 20

// handleQueryShared is /api/v1/query. OpenTSDB's /api/v1/<x> is its
// /api/<x>, so the path is both OpenTSDB's query endpoint and Prometheus'
// instant query. A request with a query parameter (in the URL, or in a
// form-encoded body) is PromQL; anything else (OpenTSDB's JSON body, m= or
// tsuid= parameters) goes to OpenTSDB's handler with its body intact.
func (p *promAPI) handleQueryShared(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("query") {
		p.s.timed("prom_query", promMethods(p.handleQuery, http.MethodGet, http.MethodPost))(w, r)
		return
	}
	if r.Method == http.MethodPost && promIsForm(r) && r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, promMaxFormBytes+1))
		if err != nil {
			p.respondError(w, prom.ErrorBadData, "error parsing form values: "+err.Error())
			return
		}
		if len(body) > promMaxFormBytes {
			p.respondError(w, prom.ErrorBadData, "error parsing form values: http: POST too large")
			return
		}
		if form, err := url.ParseQuery(string(body)); err == nil && form.Has("query") {
			r.Body = io.NopCloser(bytes.NewReader(body))
			p.s.timed("prom_query", p.handleQuery)(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s := p.s
	s.timed("query", s.ots.QueryHandler())(w, r)
}

func promIsForm(r *http.Request) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	return strings.HasPrefix(strings.TrimSpace(ct), "application/x-www-form-urlencoded")
}

func (p *promAPI) logger() *slog.Logger { return p.s.log }
