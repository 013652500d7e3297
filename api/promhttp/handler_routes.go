package promhttp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"hourglass/api/dialect"
	"hourglass/api/prom"
	"hourglass/ingest"
	"hourglass/model"
	"hourglass/query"
)

// Querier is what the dialect asks of the query engine (query.Engine).
type Querier interface {
	Queryable(l query.PromLimits) storage.Queryable
	CountTimeout()
	CountSamplesLimit()
	// Admit waits for a slot of -query-max-concurrent (query/admit.go).
	Admit(ctx context.Context) (func(), error)
	// AdmitPromQL is Admit for a parsed query: a light one takes a slot
	// of -query-light-max-concurrent (query/lane.go). The query runs in
	// the context it returns (a light one's carries its selected series).
	AdmitPromQL(ctx context.Context, st parser.Statement) (context.Context, func(), error)
	// RewriteForRollups rewrites a query for max_source_resolution
	// (handler_rollup.go).
	RewriteForRollups(expr parser.Expr, res, step int64) parser.Expr
}

// Writer appends samples (ingest.Writer).
type Writer interface {
	NewBatch() *ingest.Batch
}

// Deleter deletes the points of series in a time range.
type Deleter interface {
	Delete(ctx context.Context, ls []model.Labels, start, end int64) error
}

// Snapshotter copies the database to a directory.
type Snapshotter interface {
	TakeSnapshot(ctx context.Context, dir string, skipHead bool) (model.SnapshotStats, error)
}

// Cardinality reads the series index's figures for /api/v1/status/tsdb.
type Cardinality interface {
	Cardinality(limit int) model.CardinalityStats
}

// Deps are what the dialect uses.
type Deps struct {
	Writer      Writer
	Querier     Querier
	Deleter     Deleter
	Snapshotter Snapshotter
	Cardinality Cardinality
	// OpenTSDBQuery serves /api/v1/query when it is not PromQL (OpenTSDB's
	// /api/v1/query is its /api/query).
	OpenTSDBQuery http.HandlerFunc
}

// Shared are the server's settings the dialect reads.
type Shared struct {
	MaxBodyBytes int64
	QueryTimeout time.Duration
	AllowDelete  bool
	SnapshotDir  string
	// BuildInfo is the data of /api/v1/status/buildinfo, JSON.
	BuildInfo func() []byte
}

// core is the dialect's state, shared by its parts.
type core struct {
	host      dialect.Host
	cfg       Config
	shared    Shared
	log       *slog.Logger
	writer    Writer
	querier   Querier
	deleter   Deleter
	snapshots Snapshotter
	card      Cardinality
	otsQuery  http.HandlerFunc
	engine    *promql.Engine
	queryable storage.Queryable
	parser    parser.Parser
	limiter   *promLimiter
	meta      *promMetadata
	snap      *snapshotter
	tsdb      *tsdbStatus
	decoders  sync.Pool // *prom.Decoder
	batches   sync.Pool // *ingest.Batch, remote write's (kept with their scratch)
	histM     *histMetrics
	now       func() time.Time
}

// New returns the dialect over d, mounted on host; reg receives its metrics.
func New(cfg Config, shared Shared, d Deps, host dialect.Host, reg *prometheus.Registry, log *slog.Logger) *Handler {
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	p := &core{
		host: host, cfg: cfg, shared: shared, log: log,
		writer: d.Writer, querier: d.Querier, deleter: d.Deleter, snapshots: d.Snapshotter, card: d.Cardinality,
		otsQuery: d.OpenTSDBQuery,
		parser:   parser.NewParser(parser.Options{}),
		limiter:  newPromLimiter(cfg.WriteMaxInflightBytes, cfg.WriteMaxInflightRequests),
		meta:     newPromMetadata(cfg.MaxMetadata),
		snap:     newSnapshotter(reg, cfg.SnapshotWait),
		tsdb:     newTSDBStatus(reg, cfg.StatusTSDBMaxLimit, cfg.StatusTSDBCacheTTL),
		now:      time.Now,
	}
	// The decoders share one memory of the series they have seen (bounded,
	// see prom.SeriesCache): a series sent again costs a lookup.
	cache := prom.NewSeriesCacheSized(cfg.WriteSeriesCacheEntries, cfg.WriteSeriesCacheBytes)
	if reg != nil {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hourglass_remote_write_series_cache_resets_total",
			Help: "Shards of remote write's series cache emptied because they were full (-prom-write-series-cache-entries, -prom-write-series-cache-bytes)."},
			func() float64 { return float64(cache.Resets()) }))
	}
	p.decoders.New = func() any { return &prom.Decoder{Cache: cache, MaxHistogramBuckets: histBuckets(cfg)} }
	p.batches.New = func() any { return p.writer.NewBatch() }
	p.histM = newHistMetrics(reg)
	p.queryable = d.Querier.Queryable(query.PromLimits{MaxSeries: cfg.MaxSeries, MaxSamples: cfg.MaxSamples, LookbackDelta: cfg.LookbackDelta})
	var promReg prometheus.Registerer
	if reg != nil {
		promReg = reg
	}
	p.engine = promql.NewEngine(promql.EngineOpts{
		Logger:                   log.With("component", "promql"),
		Reg:                      promReg,
		MaxSamples:               cfg.MaxSamples,
		Timeout:                  shared.QueryTimeout,
		LookbackDelta:            cfg.LookbackDelta,
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		NoStepSubqueryIntervalFn: noStepSubqueryInterval,
		Parser:                   p.parser,
	})
	return &Handler{core: p, api: &queryAPI{p}, remote: &remote{p}}
}

// Handler is the Prometheus dialect: remote write and read (remote), and
// the query API on the official PromQL engine over the engine's Queryable
// (queryAPI), over one shared core. Create it with New.
type Handler struct {
	*core
	api    *queryAPI
	remote *remote
}

// The dialect's parts.
type (
	queryAPI struct{ *core } // the query API, metadata, admin and status
	remote   struct{ *core } // remote write and read
)

// Routes registers the Prometheus HTTP API: remote write and read, the
// query API Grafana's Prometheus data source calls, and /api/v1/query, which
// it shares with OpenTSDB (see handleQueryShared).
func (p *Handler) Routes(r *mux.Router) {
	const get, post = http.MethodGet, http.MethodPost
	route := func(path, name string, h http.HandlerFunc, methods ...string) {
		r.HandleFunc(path, p.host.Timed(name, promMethods(h, methods...)))
	}
	route("/api/v1/write", "prom_write", p.remote.handleWrite, post)
	route("/api/v1/read", "prom_read", p.remote.handleRead, post)
	r.HandleFunc("/api/v1/query", p.handleQueryShared)
	route("/api/v1/query_range", "prom_query_range", p.api.handleQueryRange, get, post)
	route("/api/v1/labels", "prom_labels", p.api.handleLabels, get, post)
	route("/api/v1/label/{name}/values", "prom_label_values", p.api.handleLabelValues, get)
	route("/api/v1/series", "prom_series", p.api.handleSeries, get, post)
	route("/api/v1/metadata", "prom_metadata", p.api.handleMetadata, get)
	route("/api/v1/status/buildinfo", "prom_buildinfo", p.api.handleBuildInfo, get)
	route("/api/v1/status/tsdb", "prom_status_tsdb", p.api.handleTSDBStatus, get)
	route("/api/v1/rules", "prom_rules", p.api.handleRules, get, post)
	route("/api/v1/query_exemplars", "prom_exemplars", p.api.handleExemplars, get, post)
	route("/api/v1/admin/tsdb/delete_series", "prom_delete_series", p.api.handleDeleteSeries, post, http.MethodPut)
	route("/api/v1/admin/tsdb/clean_tombstones", "prom_clean_tombstones", p.api.handleCleanTombstones, post, http.MethodPut)
	route("/api/v1/admin/tsdb/snapshot", "prom_snapshot", p.api.handleSnapshot, post, http.MethodPut)
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
func (p *Handler) handleQueryShared(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("query") {
		p.host.Timed("prom_query", promMethods(p.api.handleQuery, http.MethodGet, http.MethodPost))(w, r)
		return
	}
	if r.Method == http.MethodPost && IsForm(r) && r.Body != nil {
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
			p.host.Timed("prom_query", p.api.handleQuery)(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	p.host.Timed("query", p.otsQuery)(w, r)
}

// IsForm reports whether the request's body is a form (Content-Type
// application/x-www-form-urlencoded).
func IsForm(r *http.Request) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	return strings.HasPrefix(strings.TrimSpace(ct), "application/x-www-form-urlencoded")
}

func (p *core) logger() *slog.Logger { return p.log }

// noStepSubqueryInterval is the step of a subquery without one (x[1h:]):
// Prometheus' default global evaluation interval. The engine and
// query.PromPushdown are given the same (handler_query.go).
func noStepSubqueryInterval(int64) int64 { return time.Minute.Milliseconds() }
