// Package app wires hourglass together: the store, the UID table, the head
// with its WAL, the query engine and the server. cmd/hourglass turns flags
// into a Config and calls Run; tests call it in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/api/option"

	"hourglass/api"
	"hourglass/api/auth"
	"hourglass/cluster"
	"hourglass/ingest"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/bigtable"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// Config is everything a start of hourglass can be told.
type Config struct {
	Listen   string
	DataDir  string
	Storage  string // "pebble" or "bigtable"
	WriterID uint16

	// Bigtable is the instance of --storage=bigtable.
	Bigtable BigtableConfig
	// IndexSyncInterval is how often a node sharing its store with others
	// reads the index changes they announce (series/index_sync.go). Used
	// with --storage=bigtable only; default 1 s.
	IndexSyncInterval time.Duration
	// Peer is the peer read path between Bigtable nodes (cluster.go).
	Peer PeerConfig

	Layout rowkey.Layout

	// MemoryLimit is -memory-limit: the Go runtime's soft memory limit,
	// bytes or a percentage of the memory available (memlimit.go).
	MemoryLimit string
	// GCPercent is -gc-percent: the Go collector's GOGC, negative for off
	// (memlimit.go). GOGC, if set, wins.
	GCPercent int

	WALFsync       wal.SyncMode
	WALSegmentSize int64
	WALMaxBytes    int64

	ChunkMaxPoints int
	ChunkSpread    int // series.Options.ChunkSpread
	SealGrace      time.Duration
	LateGrace      time.Duration // late chunks: series.Options.LateGrace
	LateMaxPoints  int64         // and LateMaxPoints

	// Retention is how long data is kept (0: for ever); RetentionInterval
	// how often what is older is dropped.
	Retention         time.Duration
	RetentionInterval time.Duration

	// Rollup: the rollup intervals and their retention (-rollup.intervals,
	// -rollup.retention; series/rollup.go).
	Rollup series.RollupOptions

	// Exemplars bounds the exemplars kept (-max-exemplars,
	// -max-exemplars-per-series; series/exemplar.go).
	Exemplars series.ExemplarOptions

	StoreCacheBytes int64
	UIDCacheBytes   int

	// WebConfigFile is a Prometheus web configuration file (TLS, basic
	// auth users); AuthConfigFile gives those users scopes and lists bearer
	// tokens (api/auth). Either turns authentication on when it names a credential.
	WebConfigFile  string
	AuthConfigFile string

	// SeriesLimits bounds the series (cardinality); zero turns one off.
	SeriesLimits series.SeriesLimits

	Ingest ingest.Limits
	Query  query.Limits
	// QueryLanes is the light lane of the query slots (query/lane.go).
	QueryLanes query.Lanes
	API        api.Config

	ShutdownTimeout time.Duration
	Logger          *slog.Logger
}

// BigtableConfig names a Bigtable instance and how to reach it. The client
// also honours its usual environment: GOOGLE_APPLICATION_CREDENTIALS and
// Application Default Credentials, and BIGTABLE_EMULATOR_HOST.
type BigtableConfig struct {
	Project, Instance string
	TablePrefix       string        // default "hourglass"
	AppProfile        string        // default: the instance's default profile
	CredentialsFile   string        // a service account key file; default Application Default Credentials
	Timeout           time.Duration // per operation; default 30 s
}

// DefaultConfig returns the defaults the flags start from. Each setting's
// default is written once, in its package's DefaultOptions (series, wal,
// uid, store/pebble, store/bigtable), DefaultLimits (ingest) or
// DefaultSeriesLimits (series), and read from there.
func DefaultConfig() Config {
	so := series.DefaultOptions()
	return Config{
		Listen:  "127.0.0.1:4242",
		DataDir: "data",
		Storage: "pebble",
		Bigtable: BigtableConfig{
			TablePrefix: bigtable.DefaultTablePrefix,
			Timeout:     bigtable.DefaultTimeout,
		},
		IndexSyncInterval: series.DefaultIndexSyncOptions().Interval,
		Peer:              DefaultPeerConfig(),
		Layout:            rowkey.DefaultLayout(),
		MemoryLimit:       DefaultMemoryLimit,
		GCPercent:         DefaultGCPercent,
		WALFsync:          so.WAL.Sync,
		WALSegmentSize:    so.WAL.SegmentSize,
		WALMaxBytes:       so.WALMaxBytes,
		ChunkMaxPoints:    so.ChunkMaxPoints,
		ChunkSpread:       so.ChunkMaxPoints / 4,
		SealGrace:         so.Grace,
		LateGrace:         so.LateGrace,
		LateMaxPoints:     so.LateMaxPoints,
		RetentionInterval: so.RetentionInterval,
		Rollup:            series.DefaultRollupOptions(),
		Exemplars:         series.DefaultExemplarOptions(),
		StoreCacheBytes:   pebble.DefaultOptions().CacheSize,
		UIDCacheBytes:     uid.DefaultOptions().CacheBytes,
		SeriesLimits:      series.DefaultSeriesLimits(),
		Ingest:            ingest.DefaultLimits(),
		Query:             query.Limits{MaxOutputPoints: query.DefaultMaxOutputPoints, MaxConcurrent: query.DefaultMaxConcurrent, QueueTimeout: query.DefaultQueueTimeout},
		QueryLanes:        query.DefaultLanes(),
		ShutdownTimeout:   30 * time.Second,
		API:               api.DefaultConfig(),
	}
}

// Run starts hourglass and serves until ctx is done, then shuts down
// cleanly: the server stops taking requests, the head seals and writes
// everything and the WAL is left empty. ready, if not nil, is called with the
// address the server listens on once it accepts connections.
func Run(ctx context.Context, cfg Config, ready func(addr net.Addr)) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := applyMemoryLimit(cfg.MemoryLimit, log); err != nil {
		return err
	}
	applyGCPercent(cfg.GCPercent, log)
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	var st store.Store
	switch cfg.Storage {
	case "", "pebble":
		cfg.IndexSyncInterval = 0 // one node: nothing to sync
		pst, err := pebble.Open(filepath.Join(cfg.DataDir, "store"), pebble.Options{
			CacheSize: cfg.StoreCacheBytes,
			Logger:    log.With("component", "pebble"),
		})
		if err != nil {
			return fmt.Errorf("opening the store in %s: %w", cfg.DataDir, err)
		}
		st = pst
	case "bigtable":
		b := cfg.Bigtable
		if b.Project == "" || b.Instance == "" {
			return errors.New("--storage=bigtable needs --bigtable.project and --bigtable.instance")
		}
		opts := bigtable.Options{
			Project:     b.Project,
			Instance:    b.Instance,
			TablePrefix: b.TablePrefix,
			AppProfile:  b.AppProfile,
			SaltBuckets: cfg.Layout.SaltBuckets,
			Timeout:     b.Timeout,
			Logger:      log.With("component", "bigtable"),
		}
		if b.CredentialsFile != "" {
			opts.ClientOptions = append(opts.ClientOptions, option.WithAuthCredentialsFile(option.ServiceAccount, b.CredentialsFile))
		}
		bst, err := bigtable.Open(ctx, opts)
		if err != nil {
			return fmt.Errorf("opening Bigtable %s/%s: %w", b.Project, b.Instance, err)
		}
		log.Info("bigtable store open", "project", b.Project, "instance", b.Instance,
			"tables", bigtable.TableName(b.TablePrefix, store.TableData)+", ...", "writer_id", cfg.WriterID,
			"emulator", os.Getenv("BIGTABLE_EMULATOR_HOST"))
		if cfg.IndexSyncInterval <= 0 {
			cfg.IndexSyncInterval = series.DefaultIndexSyncOptions().Interval
		}
		st = bst
	default:
		return fmt.Errorf("--storage=%q: must be pebble or bigtable", cfg.Storage)
	}
	defer st.Close()
	return serve(ctx, cfg, st, log, ready)
}

func serve(ctx context.Context, cfg Config, st store.Store, log *slog.Logger, ready func(net.Addr)) error {
	layout, err := series.RecordLayout(ctx, st, cfg.Layout)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if ps, ok := st.(*pebble.Store); ok {
		ps.RegisterMetrics(reg) // hourglass_store_*: the memory Pebble holds outside the Go heap
	}
	if cfg.WebConfigFile != "" || cfg.AuthConfigFile != "" {
		a, err := auth.New(auth.Options{WebConfigFile: cfg.WebConfigFile, AuthConfigFile: cfg.AuthConfigFile,
			Logger: log.With("component", "auth"), Registerer: reg})
		if err != nil {
			return err
		}
		cfg.API.Conn.Auth = a
		log.Info("authentication", "enabled", a.Enabled(), "tls", a.TLSConfig() != nil)
	}
	uids := uid.New(st, layout, uid.Options{CacheBytes: cfg.UIDCacheBytes})
	index, err := series.LoadIndex(ctx, st, layout)
	if err != nil {
		return err
	}
	db, err := series.Open(ctx, st, uids, index, series.Options{
		Layout:         layout,
		WriterID:       cfg.WriterID,
		ChunkMaxPoints: cfg.ChunkMaxPoints,
		ChunkSpread:    cfg.ChunkSpread,
		Grace:          cfg.SealGrace,
		LateGrace:      cfg.LateGrace,
		LateMaxPoints:  cfg.LateMaxPoints,
		WAL: wal.Options{
			Dir:         filepath.Join(cfg.DataDir, "wal"),
			SegmentSize: cfg.WALSegmentSize,
			Sync:        cfg.WALFsync,
			Compress:    true,
			Logger:      log.With("component", "wal"),
		},
		WALMaxBytes:       cfg.WALMaxBytes,
		Retention:         cfg.Retention,
		RetentionInterval: cfg.RetentionInterval,
		IndexSync:         series.IndexSyncOptions{Interval: cfg.IndexSyncInterval},
		Rollup:            cfg.Rollup,
		Exemplars:         cfg.Exemplars,
		Logger:            log.With("component", "head"),
		Registerer:        reg,
	})
	if err != nil {
		return err
	}
	db.SetSeriesLimits(cfg.SeriesLimits, reg)
	var head query.Head = db.Head
	var node *cluster.Node // nodes sharing Bigtable only (cluster.go)
	if cfg.IndexSyncInterval > 0 {
		if node, err = newNode(ctx, cfg, st, db, uids, cfg.API.Conn.Auth != nil && cfg.API.Conn.Auth.TLSConfig() != nil, reg, log); err != nil {
			db.Close()
			return err
		}
		head = node
	}
	engine := query.NewEngine(head, index, st, layout, cfg.Query)
	engine.SetLanes(cfg.QueryLanes)
	engine.RegisterMetrics(reg)
	if ivs := rollupIntervalsMs(cfg.Rollup); len(ivs) > 0 {
		// Downsampled queries read the rollups where exact (query/rollup.go).
		engine.SetRollups(&query.StoreRollups{Store: st, Layout: layout, Ivs: ivs, Index: index}, reg)
	}
	cfg.API.SnapshotDir = filepath.Join(cfg.DataDir, "snapshots")
	deps := apiDeps(db, index, st, uids, layout, ingest.NewWriter(db.Head, cfg.Ingest), engine)
	if node != nil {
		wireNode(&deps, node)
	}
	srv := api.New(cfg.API, deps, reg, log)

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		db.Close()
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	log.Info("hourglass listening", "addr", ln.Addr().String(), "storage", cfg.Storage, "data_dir", cfg.DataDir, "wal_fsync", cfg.WALFsync.String())
	if node != nil {
		addr, aerr := advertised(cfg.Peer, ln.Addr())
		if aerr == nil {
			aerr = node.Start(ctx, addr)
		}
		if aerr != nil {
			ln.Close()
			db.Close()
			return aerr
		}
	}
	if ready != nil {
		ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case <-ctx.Done():
	case err = <-served:
		log.Error("the server stopped", "err", err)
	}
	log.Info("shutting down: finishing requests, then writing the head to the store")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		log.Warn("shutting the server down", "err", serr)
	}
	herr := db.Close()
	if node != nil {
		// A clean close leaves the head in the store: no one needs to ask
		// this node any more. After a failed one its WAL holds points, so
		// its registration stays and the others name it as down.
		if cerr := node.Close(sctx, herr == nil); cerr != nil {
			log.Warn("removing this node's registration", "err", cerr)
		}
	}
	if herr != nil {
		return fmt.Errorf("closing the head: %w", herr)
	}
	log.Info("shut down cleanly")
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// rollupIntervalsMs returns the rollup intervals in ms, ascending.
func rollupIntervalsMs(o series.RollupOptions) []int64 {
	out := make([]int64, 0, len(o.Intervals))
	for _, iv := range o.Intervals {
		out = append(out, iv.Milliseconds())
	}
	slices.Sort(out)
	return out
}
