package promhttp

import "time"

// PromConfig holds the limits of the Prometheus dialect. Zero values mean
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
}

func (c *Config) fill() {
	if c.WriteMaxDecodedBytes <= 0 {
		c.WriteMaxDecodedBytes = 64 << 20
	}
	if c.WriteMaxInflightBytes <= 0 {
		c.WriteMaxInflightBytes = 256 << 20
	}
	if c.WriteMaxInflightRequests <= 0 {
		c.WriteMaxInflightRequests = 256
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = 2 * time.Second
	}
	if c.ReadMaxDecodedBytes <= 0 {
		c.ReadMaxDecodedBytes = 4 << 20
	}
	if c.ReadMaxBytesInFrame <= 0 {
		c.ReadMaxBytesInFrame = 1 << 20
	}
	if c.MaxSamples <= 0 {
		c.MaxSamples = 50_000_000
	}
	if c.LookbackDelta <= 0 {
		c.LookbackDelta = 5 * time.Minute
	}
	if c.MaxMetadata <= 0 {
		c.MaxMetadata = 100_000
	}
}
