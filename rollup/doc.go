// Package rollup computes and encodes rollups: per series and per interval
// bucket, the aggregates from which downsampled queries can be answered
// without reading the raw points, and keeps them in the store's rollup
// table. The cell format, the row keys and which queries each field
// answers exactly are in docs/format/rollup.md.
//
// # Buckets
//
// A bucket covers [Start, Start+interval), Start a multiple of the interval
// counted from the Unix epoch (OpenTSDB's default downsample alignment). It
// holds the count, sum, min, max, first and last of the bucket's points, the
// timestamps of the first and last, and for counters the resets, the value
// changes and Prometheus' counter correction (the sum of the values just
// before each reset), so that increase, rate, resets and changes over a run
// of whole buckets are computed exactly as over the raw points.
//
// Integers stay integers: sum, min, max, first and last of integer points
// are integers; a sum that leaves int64 is kept as a float and flagged.
// Prometheus' staleness markers are not values: they count nowhere, and a
// marker after the bucket's last value sets StaleEnd. Other NaNs are
// counted (Count, NaN) but kept out of every other field, as OpenTSDB's
// aggregators skip them.
//
// Builder computes buckets point by point without allocating; Compute is
// the one-call form. Merge joins the buckets of two runs of points where
// the first run precedes the second (a late hour, finer buckets into a
// coarser one). AppendCell writes buckets as one cell; Iterator reads one
// in place without allocating.
//
// # The rollup table
//
// keys.go and rows.go are the store side (store.TableRollup): AppendRowKey,
// ParseRowKey, AppendQualifier, ParseQualifier and MetricRange are the keys
// (one row per series, interval and UTC day); AppendMutations and
// CellMutation write one series' buckets; Scan reads the computed buckets
// of a set of series at one interval for [start, end); ScanExternal reads
// the points written through /api/rollup for one interval and Aggregator.
package rollup
