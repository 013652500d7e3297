// Package opentsdbhttp is the OpenTSDB dialect's handlers: the /api/* HTTP
// routes and the telnet-style line protocol's commands. They parse with
// api/opentsdb (the pure codec), call ingest/ or query/, and encode. A
// Handler is built from the narrow interfaces it uses (Deps), defined here
// where they are consumed; internal/app supplies the concrete types and
// package api mounts the routes on its server (dialect.Host).
package opentsdbhttp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/dialect"
	"hourglass/ingest"
	"hourglass/meta"
	"hourglass/model"
	"hourglass/query"
)

// Config holds the dialect's limits and switches. api.Config embeds it
// (api.OpenTSDBConfig), so each is declared once; the server's other
// dialects read MaxBodyBytes, MaxDecodedBytes, QueryTimeout and
// AllowDelete too. api.DefaultConfig holds the defaults.
type Config struct {
	// MaxBodyBytes bounds a request body as sent (compressed or not). Default 64 MiB.
	MaxBodyBytes int64
	// MaxDecodedBytes bounds a request body after decompression. Default 64 MiB.
	MaxDecodedBytes int64
	// TelnetMaxLine bounds a line of the telnet protocol. Default 1024 bytes, as OpenTSDB.
	TelnetMaxLine int
	// QueryTimeout bounds the time of one query. Default 2 minutes.
	QueryTimeout time.Duration
	// Version is reported by /api/version and the telnet version command.
	Version string

	// PutStreamBytes is the size past which an /api/put body is not read
	// whole but decoded and stored in windows of about this size as it
	// arrives, so a body of any size fits in bounded memory. Default 8 MiB.
	PutStreamBytes int64
	// PutMaxBytes bounds a streamed /api/put body once decompressed; 0 (the
	// default) means no limit.
	PutMaxBytes int64
	// PutMaxErrors bounds the per-point errors an /api/put?details reply
	// lists (the counts stay exact). Default 10000.
	PutMaxErrors int
	// HistogramMaxBuckets bounds the buckets of one /api/histogram point
	// or telnet histogram line. Default 100, OpenTSDB's own bound.
	HistogramMaxBuckets int
	// LookupMaxResults bounds the series of one /api/search/lookup reply,
	// whatever limit the request asks for (limit 0 asks for all). Default 100000.
	LookupMaxResults int
	// SuggestMaxResults bounds the names of one /api/suggest reply. Default 100000.
	SuggestMaxResults int
	// MaxAnnotations bounds the annotations of one reply (/api/annotations,
	// and those attached to one /api/query). Default 10000.
	MaxAnnotations int
	// LastMaxSeries bounds the series of one /api/query/last request.
	// Default 100000.
	LastMaxSeries int
	// QueryLogSize is how many finished queries /api/stats/query lists. Default 256.
	QueryLogSize int
	// CORSDomains is "*" or a comma-separated list of origins allowed to
	// call the OpenTSDB API from a browser; "" (the default) sends no CORS
	// headers. CORSHeaders is the Access-Control-Allow-Headers value.
	CORSDomains string
	CORSHeaders string
	// SkipUnresolvedTagVs makes a literal_or filter value that names no tag
	// value match nothing instead of failing the query (OpenTSDB's
	// tsd.query.skip_unresolved_tagvs).
	SkipUnresolvedTagVs bool
	// AllowDelete lets /api/query delete the points it matches (the
	// "delete" option or the DELETE verb), as OpenTSDB's
	// tsd.http.query.allow_delete. Off by default.
	AllowDelete bool
}

// Writer appends points (ingest.Writer).
type Writer interface {
	NewBatch() *ingest.Batch
	Limits() ingest.Limits
}

// Querier runs queries (query.Engine).
type Querier interface {
	Fetch(ctx context.Context, req query.Request) ([]query.Series, error)
	Process(ctx context.Context, req query.Request, ss []query.Series) ([]query.Result, error)
	Last(ctx context.Context, entries []*model.Entry, minT int64) ([]query.LastPoint, error)
	Limits() query.Limits
	CountTimeout()
	// Admit waits for a slot of -query-max-concurrent (query/admit.go).
	Admit(ctx context.Context) (func(), error)
	// AdmitRequests is Admit for planned sub-queries: light ones take a
	// slot of -query-light-max-concurrent (query/lane.go) and come back
	// planned, with their series.
	AdmitRequests(ctx context.Context, n int, plan func(i int) (query.Request, bool)) ([]query.Request, func(), error)
}

// UIDs resolves and assigns the names' UIDs (uid.Table).
type UIDs interface {
	GetID(ctx context.Context, dst []byte, k model.Kind, name string) ([]byte, error)
	GetName(ctx context.Context, k model.Kind, id []byte) (string, error)
	Assign(ctx context.Context, k model.Kind, name string) ([]byte, error)
	Suggest(ctx context.Context, k model.Kind, prefix string, max int) ([]string, error)
	Rename(ctx context.Context, k model.Kind, name, newName string) error
	Width(k model.Kind) int
	DropCaches()
}

// Index looks series up (series.Index).
type Index interface {
	Select(metric string, matchers []model.Matcher, explicitTags bool, startMs, endMs int64) []*model.Entry
	Lookup(tsuid []byte) *model.Entry
	All(metric string, fn func(e *model.Entry) bool)
	Metrics(prefix string) []string
}

// Deleter deletes the points of series in a time range.
type Deleter interface {
	Delete(ctx context.Context, ls []model.Labels, start, end int64) error
}

// Head is what the dialect reads of the head: its figures and a WAL sync.
type Head interface {
	Stats() model.Stats
	SyncWAL() error
}

// Deps are what a Handler uses.
type Deps struct {
	Writer  Writer
	Querier Querier
	UIDs    UIDs
	Index   Index
	Deleter Deleter
	Head    Head
	Meta    *meta.Store // annotations, UID and TS meta
	// Rollups stores /api/rollup points (handler_rollup.go); nil: none.
	Rollups Rollups
	// SaltBuckets is the key layout's, for /api/config.
	SaltBuckets int
}

// core is the state every part of the dialect shares, and the helpers
// they share (writeError, parseTSUID, readJSONBody, ...).
type core struct {
	cfg     Config
	host    dialect.Host
	log     *slog.Logger
	reg     *prometheus.Registry
	started time.Time

	writer  Writer
	engine  Querier
	uids    UIDs
	index   Index
	deleter Deleter
	head    Head
	meta    *meta.Store
	rollups Rollups
	queries *queryLog
	salts   int
	planner *query.Planner
}

// The dialect's parts, each over the shared core: writes (/api/put and
// telnet puts), reads (/api/query, /api/query/last, search, suggest),
// uidAPI (/api/uid/*), notes (annotations), info (config, stats, version).
type (
	writes struct {
		*core
		puts    sync.Pool
		putOnce sync.Once
	}
	reads  struct{ *core }
	uidAPI struct{ *core }
	notes  struct{ *core }
	info   struct{ *core }
)

// Handler serves the OpenTSDB dialect. Create it with New.
type Handler struct {
	*core
	writes *writes
	reads  *reads
	uidAPI *uidAPI
	notes  *notes
	info   *info
}

// New returns the dialect's handler over d, mounted on host. reg is
// what /api/stats reports.
func New(cfg Config, d Deps, host dialect.Host, reg *prometheus.Registry, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	c := &core{
		cfg: cfg, host: host, log: log, reg: reg, started: time.Now(),
		writer: d.Writer, engine: d.Querier, uids: d.UIDs, index: d.Index, deleter: d.Deleter,
		head: d.Head, meta: d.Meta, rollups: d.Rollups, queries: newQueryLog(cfg.QueryLogSize), salts: d.SaltBuckets,
		planner: &query.Planner{Names: d.UIDs, Index: d.Index, MaxTags: d.Writer.Limits().MaxTags,
			SkipUnresolvedTagVs: cfg.SkipUnresolvedTagVs, Widths: query.KeyWidths{
				Metric: d.UIDs.Width(model.KindMetric), TagK: d.UIDs.Width(model.KindTagK), TagV: d.UIDs.Width(model.KindTagV)}},
	}
	return &Handler{core: c, writes: &writes{core: c}, reads: &reads{c}, uidAPI: &uidAPI{c}, notes: &notes{c}, info: &info{c}}
}

// keyWidths are the UID widths a TSUID is made of.
type keyWidths struct{ MetricWidth, TagKWidth, TagVWidth, SaltBuckets int }

func (s *core) layout() keyWidths {
	return keyWidths{s.uids.Width(model.KindMetric), s.uids.Width(model.KindTagK), s.uids.Width(model.KindTagV), s.salts}
}
