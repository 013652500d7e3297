// Package opentsdb holds the pure parsers and encoders of the OpenTSDB 2.4
// dialect: the /api/put body and the telnet put line, query times and
// durations, /api/query requests (JSON and the m= query string) and their
// tag value filters, the requests of /api/suggest, /api/search/lookup,
// /api/query/last and /api/uid/assign, and the query result and error
// bodies. It knows nothing of HTTP connections or storage: the handlers in
// api/ are thin adapters around it, and every parser here is fuzzed.
//
// # Compatibility
//
// Messages, orders of checks and defaults follow OpenTSDB v2.4.1's code
// (where its docs disagree, the code wins), so a client sees the errors it
// would see from OpenTSDB. hourglass departs from it on purpose where noted
// in the doc comments, chiefly:
//
//   - Names may also hold ':' (Prometheus), have a length limit
//     (Limits.MaxNameLen, 256 bytes) and up to Limits.MaxTags tags (32, not 8).
//   - A point of an /api/put body with a field of the wrong JSON type is
//     rejected alone, not with the whole body; a tag key sent twice with two
//     values is an error (OpenTSDB keeps the last).
//   - Telnet lines are read as UTF-8, and runs of spaces count as one
//     separator.
//   - In m=, a metric name may contain ':'; the query string's timezone is
//     read; wildcard globs are anchored at both ends; regexp is RE2.
//
// # Speed
//
// PutDecoder and LineParser are the write path. They scan the bytes they are
// given without reflection, reuse the DataPoint they fill, and intern names
// so that a body of points over a few series allocates once per distinct
// name, not per point; see the benchmarks in bench_test.go.
//
// # Errors
//
// A whole request that is bad is a *RequestError (status, message,
// details), written with AppendError. A bad point of a body is a
// *PointError, passed to the caller's function beside its neighbours. A bad
// telnet line is a *LineError whose text is OpenTSDB's reply line.
package opentsdb
