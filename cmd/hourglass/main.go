// Command hourglass is the hourglass time-series database server.
//
//	go run ./cmd/hourglass                    # 127.0.0.1:4242, data in ./data
//	go run ./cmd/hourglass -listen :4242 -data-dir /var/lib/hourglass
//	hourglass -storage bigtable -bigtable.project P -bigtable.instance I -writer-id 1
//
// Run it with -help for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // query time zones work on machines without a zoneinfo database

	"hourglass/internal/app"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hourglass:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg := app.DefaultConfig()
	fs := flag.NewFlagSet("hourglass", flag.ContinueOnError)
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "address for HTTP and telnet (one port, as OpenTSDB); port 0 picks a free port and logs it")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the store and the WAL")
	fs.StringVar(&cfg.Storage, "storage", cfg.Storage, "storage backend: pebble (embedded, in -data-dir) or bigtable (Cloud Bigtable, shared by many nodes; the WAL stays in -data-dir)")
	writer := fs.Uint("writer-id", 0, "id of this node in the cell qualifiers (0-65535); nodes sharing a store need distinct ids (required with -storage=bigtable)")
	fs.StringVar(&cfg.Bigtable.Project, "bigtable.project", "", "Google Cloud project of the Bigtable instance")
	fs.StringVar(&cfg.Bigtable.Instance, "bigtable.instance", "", "Bigtable instance")
	fs.StringVar(&cfg.Bigtable.TablePrefix, "bigtable.table-prefix", cfg.Bigtable.TablePrefix, "prefix of the table names: <prefix>-data, -uid, -index, -meta")
	fs.StringVar(&cfg.Bigtable.AppProfile, "bigtable.app-profile", "", "app profile of data requests (default: the instance's); with replication, single-cluster routing")
	fs.StringVar(&cfg.Bigtable.CredentialsFile, "bigtable.credentials-file", "", "service account key file (default: Application Default Credentials, GOOGLE_APPLICATION_CREDENTIALS; BIGTABLE_EMULATOR_HOST selects the emulator)")
	fs.DurationVar(&cfg.Bigtable.Timeout, "bigtable.timeout", cfg.Bigtable.Timeout, "time one Bigtable operation may take, retries included, before it fails as unavailable (503)")
	fs.DurationVar(&cfg.IndexSyncInterval, "index-sync-interval", cfg.IndexSyncInterval, "how often a node reads the series other nodes added (-storage=bigtable only)")
	peerFlags(fs, &cfg.Peer)
	fs.IntVar(&cfg.Layout.SaltBuckets, "salt-buckets", cfg.Layout.SaltBuckets, "salt buckets of the row keys (fixed when the data set is created)")
	fs.IntVar(&cfg.Layout.MetricWidth, "uid-width-metric", cfg.Layout.MetricWidth, "bytes of a metric UID (fixed when the data set is created)")
	fs.IntVar(&cfg.Layout.TagKWidth, "uid-width-tagk", cfg.Layout.TagKWidth, "bytes of a tag key UID (fixed when the data set is created)")
	fs.IntVar(&cfg.Layout.TagVWidth, "uid-width-tagv", cfg.Layout.TagVWidth, "bytes of a tag value UID (fixed when the data set is created)")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", cfg.MemoryLimit, "soft memory limit of the Go runtime (it collects garbage harder near it): bytes, a percentage of the memory available (the least of the machine's, the cgroup's and ulimit -v), or 0 for none; GOMEMLIMIT, if set, wins")
	fs.IntVar(&cfg.GCPercent, "gc-percent", cfg.GCPercent, "the Go collector's GOGC: how far the heap grows past its live size, in percent, before the next collection (lower: less memory, more CPU in the collector); negative turns collection off; GOGC, if set, wins")
	fs.TextVar(&cfg.WALFsync, "wal-fsync", cfg.WALFsync, "always: fsync before acknowledging (group commit); interval: write to the OS before acknowledging, fsync every second")
	fs.Int64Var(&cfg.WALSegmentSize, "wal-segment-size", cfg.WALSegmentSize, "bytes of a WAL segment")
	fs.Int64Var(&cfg.WALMaxBytes, "wal-max-bytes", cfg.WALMaxBytes, "bytes of WAL past which the oldest open chunks are written early")
	fs.IntVar(&cfg.ChunkMaxPoints, "chunk-max-points", cfg.ChunkMaxPoints, "points of one chunk (one cell); the default is chosen by benchmark, see docs/format/chunk.md")
	fs.IntVar(&cfg.ChunkSpread, "chunk-seal-spread", cfg.ChunkSpread, "each series seals its chunks at -chunk-max-points less up to this many points (a share drawn from its TSUID), so series that start together do not all seal and flush at once; 0 seals all at -chunk-max-points")
	fs.DurationVar(&cfg.Retention, "retention", 0, "how long data is kept, e.g. 8760h; older rows are dropped a key range at a time and older points refused (default: for ever)")
	fs.DurationVar(&cfg.RetentionInterval, "retention-interval", cfg.RetentionInterval, "how often data past -retention is dropped")
	rollupFlags(fs, &cfg.Rollup) // rollup.go
	fs.DurationVar(&cfg.SealGrace, "seal-grace", cfg.SealGrace, "how long after its hour an open chunk waits for late points")
	fs.IntVar(&cfg.Exemplars.Max, "max-exemplars", cfg.Exemplars.Max, "exemplars kept in all (remote write); past it a series with none gets none, one with some replaces its oldest; negative keeps none")
	fs.IntVar(&cfg.Exemplars.PerSeries, "max-exemplars-per-series", cfg.Exemplars.PerSeries, "exemplars kept for one series; a new one replaces its oldest")
	fs.DurationVar(&cfg.LateGrace, "late-grace", cfg.LateGrace, "how long a late chunk (points of an hour past its -seal-grace) gathers points before it is written")
	fs.Int64Var(&cfg.LateMaxPoints, "late-max-points", cfg.LateMaxPoints, "points all late chunks may hold; past it they are written early")
	fs.Int64Var(&cfg.StoreCacheBytes, "store-cache-bytes", cfg.StoreCacheBytes, "block cache of the embedded store, in bytes of SSTable blocks (Pebble memtables are given their share beside it)")
	fs.IntVar(&cfg.UIDCacheBytes, "uid-cache-bytes", cfg.UIDCacheBytes, "UID cache, both directions")
	fs.IntVar(&cfg.Ingest.MaxTags, "max-tags", cfg.Ingest.MaxTags, "tags per series")
	fs.IntVar(&cfg.Ingest.MaxNameLen, "max-name-len", cfg.Ingest.MaxNameLen, "bytes of a metric name, tag key or tag value")
	fs.IntVar(&cfg.SeriesLimits.MaxSeries, "max-series", cfg.SeriesLimits.MaxSeries, "series the store may hold; points of new series past it are refused (0: no limit)")
	fs.IntVar(&cfg.SeriesLimits.MaxSeriesPerMetric, "max-series-per-metric", cfg.SeriesLimits.MaxSeriesPerMetric, "series one metric may have (0: no limit)")
	fs.IntVar(&cfg.SeriesLimits.MaxNewSeriesPerMinute, "max-new-series-per-minute", cfg.SeriesLimits.MaxNewSeriesPerMinute, "new series created per minute, a token bucket (0: no limit)")
	fs.IntVar(&cfg.SeriesLimits.MaxNewSeriesPerRequest, "max-new-series-per-request", cfg.SeriesLimits.MaxNewSeriesPerRequest, "new series one request may create (0: no limit)")
	fs.Int64Var(&cfg.API.MaxBodyBytes, "max-body-bytes", cfg.API.MaxBodyBytes, "bytes of a request body as sent")
	fs.Int64Var(&cfg.API.MaxDecodedBytes, "max-decoded-bytes", cfg.API.MaxDecodedBytes, "bytes of a request body once decompressed")
	fs.Int64Var(&cfg.API.MaxDecodingBytes, "max-decoding-bytes", cfg.API.MaxDecodingBytes, "bytes all request bodies being read and decompressed may hold at once (past it: 503, or 429 for remote write, with Retry-After)")
	fs.IntVar(&cfg.API.TelnetMaxLine, "telnet-max-line", cfg.API.TelnetMaxLine, "bytes of a telnet line")
	fs.DurationVar(&cfg.API.QueryTimeout, "query-timeout", cfg.API.QueryTimeout, "time one query may take")
	fs.IntVar(&cfg.Query.MaxSeries, "query-max-series", 0, "series one query may read (0: no limit)")
	fs.IntVar(&cfg.Query.MaxPoints, "query-max-points", 0, "raw points one query may read (0: no limit)")
	fs.IntVar(&cfg.Query.MaxOutputPoints, "query-max-output-points", cfg.Query.MaxOutputPoints, "points one query may produce: downsampled buckets (fill included) or raw points, over its series before aggregation; PromQL range queries: steps × series of a selector (413/422 past it; 0: no limit)")
	fs.IntVar(&cfg.Query.MaxConcurrent, "query-max-concurrent", cfg.Query.MaxConcurrent, "queries running at once, both dialects (OpenTSDB /api/query and /api/query/last, PromQL query and query_range, remote read); more wait in a queue (0: no limit)")
	fs.DurationVar(&cfg.Query.QueueTimeout, "query-queue-timeout", cfg.Query.QueueTimeout, "how long a query waits for a slot of -query-max-concurrent before 503 with Retry-After")
	fs.IntVar(&cfg.QueryLanes.LightMaxConcurrent, "query-light-max-concurrent", cfg.QueryLanes.LightMaxConcurrent, "light queries running at once beside -query-max-concurrent's: a PromQL query or an /api/query request found, before its data is read, to read and produce at most -query-light-max-points points takes one of these slots, or a free one of -query-max-concurrent (0: no light lane)")
	fs.IntVar(&cfg.QueryLanes.LightMaxPoints, "query-light-max-points", cfg.QueryLanes.LightMaxPoints, "points a light query may read (counted from the cells' headers before they are read) and produce (steps or buckets × series, or raw points); 0: no light lane")
	fs.Int64Var(&cfg.API.PutStreamBytes, "put-stream-bytes", cfg.API.PutStreamBytes, "an /api/put body longer than this is stored in windows of this size as it arrives")
	fs.Int64Var(&cfg.API.PutMaxBytes, "put-max-bytes", cfg.API.PutMaxBytes, "bytes of a streamed /api/put body once decompressed (0: no limit)")
	fs.IntVar(&cfg.API.PutMaxErrors, "put-max-errors", cfg.API.PutMaxErrors, "point errors listed in one /api/put?details reply")
	fs.IntVar(&cfg.API.HistogramMaxBuckets, "histogram-max-buckets", cfg.API.HistogramMaxBuckets, "buckets of one OpenTSDB histogram point (/api/histogram, telnet histogram); a larger one is refused")
	fs.IntVar(&cfg.API.LookupMaxResults, "lookup-max-results", cfg.API.LookupMaxResults, "series in one /api/search/lookup reply")
	fs.IntVar(&cfg.API.SuggestMaxResults, "suggest-max-results", cfg.API.SuggestMaxResults, "names in one /api/suggest reply")
	fs.IntVar(&cfg.API.MaxAnnotations, "max-annotations", cfg.API.MaxAnnotations, "annotations in one reply or bulk request")
	fs.IntVar(&cfg.API.LastMaxSeries, "last-max-series", cfg.API.LastMaxSeries, "series in one /api/query/last or /api/uid/tsmeta?m= request")
	fs.IntVar(&cfg.API.QueryLogSize, "query-log-size", cfg.API.QueryLogSize, "finished queries listed by /api/stats/query")
	fs.StringVar(&cfg.API.CORSDomains, "cors-domains", cfg.API.CORSDomains, `origins allowed to call the OpenTSDB API from a browser: "*" or a comma-separated list ("" sends no CORS headers)`)
	fs.StringVar(&cfg.API.CORSHeaders, "cors-headers", cfg.API.CORSHeaders, "Access-Control-Allow-Headers for CORS replies (OpenTSDB's list)")
	fs.BoolVar(&cfg.API.AllowDelete, "allow-delete", cfg.API.AllowDelete, "let /api/query with \"delete\":true (or the DELETE verb) and /api/v1/admin/tsdb/delete_series delete the points they match, and /api/v1/admin/tsdb/snapshot take snapshots (Prometheus' admin API)")
	fs.BoolVar(&cfg.API.SkipUnresolvedTagVs, "skip-unresolved-tagvs", cfg.API.SkipUnresolvedTagVs, "a literal_or filter value that names no tag value matches nothing instead of failing the query")
	fs.Int64Var(&cfg.API.Prom.WriteMaxDecodedBytes, "prom-write-max-decoded-bytes", cfg.API.Prom.WriteMaxDecodedBytes, "bytes of a remote-write body once decompressed (413 past it)")
	fs.IntVar(&cfg.API.Prom.WriteMaxHistogramBuckets, "prom-write-max-histogram-buckets", cfg.API.Prom.WriteMaxHistogramBuckets, "buckets, spans and custom bounds of one native histogram over remote write (at most 4096); a larger one is refused alone")
	fs.Int64Var(&cfg.API.Prom.WriteMaxInflightBytes, "prom-write-max-inflight-bytes", cfg.API.Prom.WriteMaxInflightBytes, "bytes of the remote-write requests handled at once, past which requests get 429 and Retry-After")
	fs.IntVar(&cfg.API.Prom.WriteMaxInflightRequests, "prom-write-max-inflight-requests", cfg.API.Prom.WriteMaxInflightRequests, "remote-write requests handled at once, past which requests get 429 and Retry-After")
	fs.DurationVar(&cfg.API.Prom.RetryAfter, "prom-write-retry-after", cfg.API.Prom.RetryAfter, "Retry-After of a remote-write request shed with 429")
	fs.Int64Var(&cfg.API.Prom.ReadMaxDecodedBytes, "prom-read-max-decoded-bytes", cfg.API.Prom.ReadMaxDecodedBytes, "bytes of a remote-read request once decompressed")
	fs.IntVar(&cfg.API.Prom.ReadMaxBytesInFrame, "prom-read-max-bytes-in-frame", cfg.API.Prom.ReadMaxBytesInFrame, "bytes of one frame of a streamed remote-read answer")
	fs.IntVar(&cfg.API.Prom.MaxSamples, "prom-query-max-samples", cfg.API.Prom.MaxSamples, "samples one PromQL query may hold in memory, and one query or remote read may load")
	fs.IntVar(&cfg.API.Prom.MaxSeries, "prom-query-max-series", cfg.API.Prom.MaxSeries, "series one PromQL query or remote read may select (0: -query-max-series)")
	fs.DurationVar(&cfg.API.Prom.LookbackDelta, "prom-lookback-delta", cfg.API.Prom.LookbackDelta, "how far back a PromQL instant selector looks for a sample")
	fs.IntVar(&cfg.API.Prom.MaxMetadata, "prom-max-metadata", cfg.API.Prom.MaxMetadata, "metrics whose remote-write metadata /api/v1/metadata keeps")
	fs.IntVar(&cfg.API.Prom.WriteSeriesCacheEntries, "prom-write-series-cache-entries", cfg.API.Prom.WriteSeriesCacheEntries, "series remote write's decoders remember (a full shard of the cache starts again empty)")
	fs.IntVar(&cfg.API.Prom.WriteSeriesCacheBytes, "prom-write-series-cache-bytes", cfg.API.Prom.WriteSeriesCacheBytes, "bytes of the series remote write's decoders remember")
	fs.IntVar(&cfg.API.Prom.StatusTSDBMaxLimit, "prom-status-tsdb-max-limit", cfg.API.Prom.StatusTSDBMaxLimit, "the largest limit /api/v1/status/tsdb takes (400 past it)")
	fs.DurationVar(&cfg.API.Prom.StatusTSDBCacheTTL, "prom-status-tsdb-cache-ttl", cfg.API.Prom.StatusTSDBCacheTTL, "how long an /api/v1/status/tsdb answer is served again to requests with the same limit")
	fs.DurationVar(&cfg.API.Prom.SnapshotWait, "prom-snapshot-wait", cfg.API.Prom.SnapshotWait, "how long a snapshot request waits for the one under way (one at a time) before 503 with Retry-After")
	fs.StringVar(&cfg.WebConfigFile, "web.config.file", "", "Prometheus web configuration file: tls_server_config, http_server_config, basic_auth_users (bcrypt); re-read when it changes (README, Security)")
	fs.StringVar(&cfg.AuthConfigFile, "auth.config.file", "", "scopes (read, write, admin) of the basic_auth_users, and bearer tokens (sha256 or bcrypt hashes); re-read when it changes (docs/security.md)")
	fs.BoolVar(&cfg.API.Conn.TelnetAllowUnauthenticated, "telnet.allow-unauthenticated", cfg.API.Conn.TelnetAllowUnauthenticated, "accept telnet connections when authentication is on (the line protocol cannot authenticate; anyone reaching the port can then write)")
	fs.BoolVar(&cfg.API.Conn.DebugPprof, "debug.pprof", cfg.API.Conn.DebugPprof, "serve net/http/pprof at /debug/pprof/ (admin scope)")
	fs.IntVar(&cfg.API.Conn.MaxConnections, "max-connections", cfg.API.Conn.MaxConnections, "connections open at once (HTTP and telnet); past it new ones are closed at once")
	fs.DurationVar(&cfg.API.Conn.ReadHeaderTimeout, "http-read-header-timeout", cfg.API.Conn.ReadHeaderTimeout, "time for a connection's TLS handshake and first byte, and for a request's headers")
	fs.DurationVar(&cfg.API.Conn.IdleTimeout, "http-idle-timeout", cfg.API.Conn.IdleTimeout, "a keep-alive HTTP connection idle this long is closed")
	fs.DurationVar(&cfg.API.Conn.BodyReadTimeout, "body-read-timeout", cfg.API.Conn.BodyReadTimeout, "time to read a request body, plus one second per -body-min-rate bytes read")
	fs.Int64Var(&cfg.API.Conn.BodyMinRate, "body-min-rate", cfg.API.Conn.BodyMinRate, "bytes per second a request body must keep up past -body-read-timeout")
	fs.DurationVar(&cfg.API.Conn.TelnetIdleTimeout, "telnet-idle-timeout", cfg.API.Conn.TelnetIdleTimeout, "a telnet connection that sends nothing this long is closed")
	procsExtra := fs.Int("gomaxprocs-extra", 1, "processors (Ps) the Go runtime gets beyond the CPUs it may use, so that a request arriving while queries keep every CPU busy is read at once (procs.go); 0: Go's default; the GOMAXPROCS environment variable, if set, wins")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	if *showVersion {
		fmt.Println("hourglass", version)
		return nil
	}
	if *writer > 0xffff {
		return fmt.Errorf("-writer-id=%d: must be 0 to 65535", *writer)
	}
	if cfg.Storage == "bigtable" {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "writer-id" })
		if !set {
			// Two nodes with one id would overwrite each other's cells.
			return errors.New("-storage=bigtable needs -writer-id: every node sharing the tables needs its own")
		}
	}
	cfg.WriterID = uint16(*writer)
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level=%q: %w", *logLevel, err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.API.Version = version
	if err := setProcs(*procsExtra, cfg.Logger); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return app.Run(ctx, cfg, func(addr net.Addr) {
		// One line on stdout that scripts and tests can wait for.
		fmt.Printf("hourglass listening on %s\n", addr)
	})
}
