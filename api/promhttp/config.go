// Package promhttp is the Prometheus dialect's handlers: remote write and
// read, the query API on Prometheus' own PromQL engine, metadata, admin and
// status. They parse with api/prom (the pure codec), call ingest/ and
// query/, and encode. A Handler is built from the narrow interfaces it uses
// (Deps), defined here where they are consumed; internal/app supplies the
// concrete types and package api mounts the routes (dialect.Host).
package promhttp

import (
	"time"

	"hourglass/api/dialect"
	"hourglass/api/prom"
)

// Config holds the limits of the Prometheus dialect. Zero values mean
// the defaults.
type Config struct {
	// WriteMaxDecodedBytes bounds a remote-write body once decompressed;
	// the snappy header says the size, so a larger body is refused (413)
	// before anything is allocated for it. Default 64 MiB.
	WriteMaxDecodedBytes int64
	// WriteMaxInflightBytes bounds the bytes (as sent plus decoded) of the
	// remote-write requests being handled at once; a request that would go
	// past it is shed with 429 and Retry-After. A request alone is always
	// admitted, so no request within the other limits is refused forever.
	// Default 256 MiB.
	WriteMaxInflightBytes int64
	// WriteMaxInflightRequests bounds the remote-write requests handled at
	// once, past which requests are shed likewise. Default 256.
	WriteMaxInflightRequests int
	// RetryAfter is the Retry-After of a shed request. Default 2s.
	RetryAfter time.Duration
	// ReadMaxDecodedBytes bounds a remote-read request once decompressed
	// (a read request is a few matchers). Default 4 MiB.
	ReadMaxDecodedBytes int64
	// ReadMaxBytesInFrame bounds a frame of a STREAMED_XOR_CHUNKS answer,
	// as Prometheus' --storage.remote.read-max-bytes-in-frame. Default 1 MiB.
	ReadMaxBytesInFrame int
	// MaxSamples bounds the samples one PromQL query holds in memory (the
	// engine's --query.max-samples) and the samples one query or remote
	// read may load from storage. Default 50,000,000, as Prometheus.
	MaxSamples int
	// MaxSeries bounds the series one PromQL query or remote read may
	// select; 0 takes the engine's -query-max-series (0 there: no limit).
	MaxSeries int
	// LookbackDelta is how far back an instant vector selector looks for a
	// sample. Default 5m, as Prometheus.
	LookbackDelta time.Duration
	// MaxMetadata bounds the metrics whose metadata (type, help, unit) sent
	// over remote write is kept for /api/v1/metadata. Default 100,000.
	MaxMetadata int
	// WriteSeriesCacheEntries and WriteSeriesCacheBytes bound the series
	// remote write's decoders remember (prom.SeriesCache); past them a
	// shard starts again empty. Defaults 131,072 and 32 MiB.
	WriteSeriesCacheEntries, WriteSeriesCacheBytes int
	// StatusTSDBMaxLimit is the largest limit /api/v1/status/tsdb takes
	// (default 10,000, as Prometheus); StatusTSDBCacheTTL how long its
	// answer is served again to requests with the same limit (default 5s).
	StatusTSDBMaxLimit int
	StatusTSDBCacheTTL time.Duration
	// SnapshotWait is how long a snapshot request waits for the one under
	// way (they are taken one at a time) before 503. Default 1m.
	SnapshotWait time.Duration
	// WriteMaxHistogramBuckets bounds the buckets (both signs), spans and
	// custom bounds of one native histogram sample sent over remote write;
	// a histogram past it is refused alone. Default 4096, what a histogram
	// chunk holds (chunk.MaxHistogramBuckets), which is also the most.
	WriteMaxHistogramBuckets int
}

// DefaultConfig is the dialect's defaults: the one place they are written.
func DefaultConfig() Config {
	return Config{
		WriteMaxDecodedBytes:     64 << 20,
		WriteMaxInflightBytes:    256 << 20,
		WriteMaxInflightRequests: 256,
		RetryAfter:               2 * time.Second,
		ReadMaxDecodedBytes:      4 << 20,
		ReadMaxBytesInFrame:      1 << 20,
		MaxSamples:               50_000_000,
		LookbackDelta:            5 * time.Minute,
		MaxMetadata:              100_000,
		WriteSeriesCacheEntries:  prom.SeriesCacheMaxEntries,
		WriteSeriesCacheBytes:    prom.SeriesCacheMaxBytes,
		StatusTSDBMaxLimit:       10_000,
		StatusTSDBCacheTTL:       5 * time.Second,
		SnapshotWait:             time.Minute,
		WriteMaxHistogramBuckets: 4096,
	}
}

// fill gives the fields left zero their DefaultConfig values (MaxSeries
// stays 0: the engine's -query-max-series).
func (c *Config) fill() {
	d := DefaultConfig()
	dialect.OrDefault(&c.WriteMaxDecodedBytes, d.WriteMaxDecodedBytes)
	dialect.OrDefault(&c.WriteMaxInflightBytes, d.WriteMaxInflightBytes)
	dialect.OrDefault(&c.WriteMaxInflightRequests, d.WriteMaxInflightRequests)
	dialect.OrDefault(&c.RetryAfter, d.RetryAfter)
	dialect.OrDefault(&c.ReadMaxDecodedBytes, d.ReadMaxDecodedBytes)
	dialect.OrDefault(&c.ReadMaxBytesInFrame, d.ReadMaxBytesInFrame)
	dialect.OrDefault(&c.MaxSamples, d.MaxSamples)
	dialect.OrDefault(&c.LookbackDelta, d.LookbackDelta)
	dialect.OrDefault(&c.MaxMetadata, d.MaxMetadata)
	dialect.OrDefault(&c.WriteSeriesCacheEntries, d.WriteSeriesCacheEntries)
	dialect.OrDefault(&c.WriteSeriesCacheBytes, d.WriteSeriesCacheBytes)
	dialect.OrDefault(&c.StatusTSDBMaxLimit, d.StatusTSDBMaxLimit)
	dialect.OrDefault(&c.StatusTSDBCacheTTL, d.StatusTSDBCacheTTL)
	dialect.OrDefault(&c.SnapshotWait, d.SnapshotWait)
	dialect.OrDefault(&c.WriteMaxHistogramBuckets, d.WriteMaxHistogramBuckets)
}
