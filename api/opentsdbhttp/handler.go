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

// Config holds the dialect's limits and switches (api.Config gives them).
type Config struct {
	MaxBodyBytes        int64
	MaxDecodedBytes     int64
	TelnetMaxLine       int
	TelnetIdleTimeout   time.Duration
	QueryTimeout        time.Duration
	Version             string
	PutStreamBytes      int64
	PutMaxBytes         int64
	PutMaxErrors        int
	HistogramMaxBuckets int // /api/histogram, telnet histogram (handler_histogram.go)
	LookupMaxResults    int
	SuggestMaxResults   int
	MaxAnnotations      int
	LastMaxSeries       int
	QueryLogSize        int
	CORSDomains         string
	CORSHeaders         string
	SkipUnresolvedTagVs bool
	AllowDelete         bool
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
