// Package downsample holds OpenTSDB 2.4's arithmetic on time series: the
// aggregators, downsampling within a series, rates, and aggregation across
// series with interpolation. Everything here is a pure function over point
// slices (chunk.Point, ms timestamps, integer or float values); there is no
// I/O and no shared mutable state.
//
// # Order of operations
//
// A sub-query runs, as OpenTSDB's AggregationIterator.create does:
//
//  1. per series: Downsample (when the query has a downsample spec), then
//     Rate (when it asks for a rate), so a rate is the rate of the
//     downsampled series;
//  2. per group: Aggregate the series of the group into one, with the
//     query's aggregator and its interpolation (isRate set if step 1
//     computed rates). With the "none" aggregator there is no step 2: each
//     series is emitted on its own.
//
// Downsampler computes step 1's downsampling over points given one at a
// time, holding one bucket instead of the series, with Downsample's results.
//
// The caller trims the result to [start, end]. To reproduce OpenTSDB at the
// edges of the range, the caller feeds steps 1 and 2 from the scan start
// (OpenTSDB scans from the start aligned down to the interval and then to
// the hour) so that the first rate in range has a predecessor, and drops
// the points before start afterwards.
//
// # Aggregators
//
// Lookup knows all 35 aggregators of OpenTSDB 2.4.1 by their case-sensitive
// names, and Names lists them. Each computes the same function within a
// bucket and across series, and carries the interpolation OpenTSDB uses
// across series. Integers follow Java long arithmetic (avg divides with
// integer division, sum wraps on overflow); floats skip NaN. Percentiles
// are Apache Commons Math's Percentile: p50…p999 use its default (legacy)
// estimation, ep…r3 and ep…r7 the estimations. Downsampling
// always aggregates in float64 (OpenTSDB's runDouble), so a downsampled avg
// of integers is not truncated; aggregation across series uses integer
// arithmetic when every value that goes in is an integer.
//
// # Conformance
//
// testdata/opentsdb/golden.txt holds 1,100 cases run through OpenTSDB
// 2.4.1's own Aggregators, RateSpan, AggregationIterator, Downsampler and
// FillingDownsampler; TestOpenTSDBGolden requires the same results bit for
// bit. The README next to it says how they were made.
//
// # Where we differ from OpenTSDB on purpose
//
//   - count across series counts only the series that have a point at t,
//     never interpolated ones; OpenTSDB counts zero-filled series too
//     (issue 977).
//   - With rates, a series contributes to an aggregate only from its first
//     to its last rate, like any other series. OpenTSDB's RateSpan computes
//     a first rate against the point (0, 0) and the aggregation uses that
//     bogus value for the series before its first real rate.
//   - Duplicate timestamps never fail: in a series the last point at a
//     timestamp wins, and Rate ignores a point that is not after the one
//     before it (OpenTSDB throws IllegalDataException or
//     IllegalStateException).
//   - NaN is skipped by every aggregator, including first, last, diff and
//     mult, which OpenTSDB feeds NaN through.
//   - ep…r3 and ep…r7 use their estimation type on float data too;
//     OpenTSDB 2.4 applies it only to integers and silently uses the
//     default estimation for doubles, which includes every downsampled
//     value.
//   - Integer interpolation computes (x−x0)·(y1−y0) in 128 bits instead
//     of overflowing.
//   - Whether an aggregate is an integer depends only on the values that
//     went into it; OpenTSDB looks at the current and next point of every
//     series, even one that has not started or that has a point at t.
//   - Calendar buckets are stateless (see calendar.go): the bucket of a
//     point never depends on where the series' data begins, so series
//     share buckets. For the common specs (1dc, 1wc, 1nc, 1yc, 1hc, 15mc,
//     3nc…) the buckets are OpenTSDB's; for N-week and N-year buckets,
//     for N units that do not divide their calendar period, and for hours
//     across a DST change (6hc), OpenTSDB's depend on the first point and
//     ours do not.
//   - Where a DST change skips midnight (America/Sao_Paulo until 2019),
//     that day starts at the end of the gap, 01:00, and the days around it
//     at 00:00; OpenTSDB's java.util.Calendar arithmetic, stepping over the
//     missing midnight, stamps its day buckets around the change at 01:00.
//   - Downsampling uses only points in [start, end], and a bucket is
//     emitted only if its timestamp is in [start, end] (OpenTSDB's
//     serializer drops the others). OpenTSDB fills the last bucket with
//     points after end and excludes a point at exactly end from 0all. A
//     series without a point in [start, end] yields no fill points.
//   - Spec parsing is stricter about the interval: "1xh" is an error, not
//     1h; trailing empty parts are ignored as in Java ("1m-avg-").
//   - Negative timestamps are bucketed with floor division; OpenTSDB
//     rejects them on write.
package downsample
