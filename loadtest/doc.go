// Package loadtest is hourglass's load generator: it makes realistic series,
// writes them through any write dialect a time-series database speaks, replays
// a dashboard's queries, and reports what the server did with them.
//
//   - Generator makes the data: hosts tagged region/dc/rack/service, each with
//     the same set of metrics (gauges as random walks with two decimals,
//     integer counters that only grow except for an occasional reset, a few
//     constants). Everything follows from a seed: the same configuration gives
//     the same points, whatever the number of workers. Churn retires hosts and
//     starts new ones at a steady rate.
//   - Write drives one dialect — OpenTSDB /api/put JSON, telnet put,
//     Prometheus remote write 1.0 or 2.0 — from a number of workers, each
//     owning a slice of the hosts and sending its points in time order, at a
//     target rate or flat out, until the data, a bound on points or a bound on
//     time runs out.
//   - Query replays a dashboard mix (one series raw, a metric summed by a tag,
//     top-k, rate over counters, a long range downsampled) through OpenTSDB's
//     /api/query or Prometheus' /api/v1/query_range at a given concurrency.
//   - Report collects latencies (percentiles by nearest rank over every
//     sample), counts and, for a server on this machine, its CPU time and peak
//     RSS from /proc; it prints as text and as JSON, and Table sets several
//     reports side by side.
//
// It speaks the dialects as their specifications say, not as hourglass
// happens to accept them, so the same run works against VictoriaMetrics and
// Prometheus; loadtest/compare.sh runs them one after another.
package loadtest
