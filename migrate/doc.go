// Package migrate copies history into hourglass from another time-series
// database, one time slice at a time: the engine behind cmd/hourglass-migrate.
//
// A Source streams the series of one slice (OpenTSDB 2.x over /api/suggest and
// /api/query with the `none` aggregator, or Prometheus remote read); a Sink
// writes them to the destination in bounded batches (OpenTSDB /api/put as
// gzipped JSON, or Prometheus remote write 1.0). Run walks the slices of
// [start, end) with a few workers, waits on a points-per-second Limiter,
// records each completed slice in a State file so that a rerun skips it, and
// reports progress. Verify counts the points of each slice on both sides.
//
// Memory is bounded by one slice's response per worker (read as a stream:
// one OpenTSDB series or one remote-read frame at a time) and one batch per
// worker, whatever the size of the history. Every request has a timeout and
// is retried with backoff on 429, 5xx and network errors (Retry-After is
// honoured); any other 4xx stops the run with an error naming the slice.
package migrate
