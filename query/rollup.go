package query

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/downsample"
	"hourglass/rollup"
	"hourglass/series"
)

// Rollups (issue 13, read side). An OpenTSDB request with a downsample
// whose interval is a multiple of a stored rollup interval is answered from
// the rollup buckets (docs/rollups.md, docs/format/rollup.md) when that
// answer is, bit for bit, the raw one: the planner (rollupPlan) picks the
// interval, rollup_ds.go turns buckets into the downsampler's points, and
// rollup_fetch.go joins them with raw points for what rollups cannot answer
// (the hours the head still holds, the partial buckets at the range's
// edges, a series whose float sums would round differently).

// RollupUsage is OpenTSDB 2.4's rollupUsage: whether and how a query reads
// rollups.
type RollupUsage uint8

const (
	// RollupNoFallback (OpenTSDB's default) reads the best rollup interval
	// and nothing else when it has no data.
	RollupNoFallback RollupUsage = iota
	// RollupRaw reads raw points only.
	RollupRaw
	// RollupFallback tries the next rollup interval that fits when the
	// best one has no data for the query.
	RollupFallback
	// RollupFallbackRaw reads raw points when the best interval has no
	// data for the query.
	RollupFallbackRaw
)

var rollupUsageNames = [...]string{"ROLLUP_NOFALLBACK", "ROLLUP_RAW", "ROLLUP_FALLBACK", "ROLLUP_FALLBACK_RAW"}

// String returns OpenTSDB's name of u.
func (u RollupUsage) String() string {
	if int(u) < len(rollupUsageNames) {
		return rollupUsageNames[u]
	}
	return fmt.Sprintf("RollupUsage(%d)", u)
}

// ParseRollupUsage is OpenTSDB's ROLLUP_USAGE.parse: the name in any case;
// "" and an unknown name are the default, ROLLUP_NOFALLBACK (OpenTSDB logs
// a warning and goes on).
func ParseRollupUsage(s string) RollupUsage {
	u := strings.ToUpper(s)
	for i, n := range rollupUsageNames {
		if n == u {
			return RollupUsage(i)
		}
	}
	return RollupNoFallback
}

// RollupReader reads stored rollup buckets.
type RollupReader interface {
	// Intervals returns the rollup intervals (ms) stored, ascending.
	Intervals() []int64
	// ReadBuckets calls fn with each bucket of interval iv (ms) starting in
	// [start, end) of each of entries, a series' buckets in time order; i
	// is the series' index in entries. fn must not keep b. Calls for
	// different series may come from different goroutines, never two at
	// once for one series. It stops at fn's first error and returns it.
	// f says which fields fn needs (the others may be zero).
	ReadBuckets(ctx context.Context, entries []*series.Entry, iv, start, end int64, f rollup.Fields, fn func(i int, b *rollup.Bucket) error) error
}

// rollupState is the engine's rollup reader and counters.
type rollupState struct {
	reader RollupReader
	reads  *prometheus.CounterVec // nil when not registered
}

// SetRollups makes e answer downsampled requests from r where exact, and
// registers on reg (when not nil) hourglass_query_rollup_reads_total
// {interval}: the sub-queries answered from rollups of each interval. Call
// it before e serves queries.
func (e *Engine) SetRollups(r RollupReader, reg prometheus.Registerer) {
	e.ru.reader = r
	if reg == nil {
		return
	}
	e.ru.reads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hourglass_query_rollup_reads_total",
		Help: "Queries (OpenTSDB sub-queries, PromQL selectors) answered from rollups, by rollup interval.",
	}, []string{"interval"})
	for _, iv := range r.Intervals() {
		e.ru.reads.WithLabelValues(FormatInterval(iv))
	}
	reg.MustRegister(e.ru.reads)
}

// countRollupRead counts a read answered from rollups of interval iv.
func (e *Engine) countRollupRead(iv int64) {
	if e.ru.reads != nil {
		e.ru.reads.WithLabelValues(FormatInterval(iv)).Inc()
	}
}

// FormatInterval writes an interval (ms) as rollup intervals are written:
// 10m, 1h, 1d, 30s.
func FormatInterval(ms int64) string {
	switch {
	case ms%(24*3600_000) == 0:
		return strconv.FormatInt(ms/(24*3600_000), 10) + "d"
	case ms%3600_000 == 0:
		return strconv.FormatInt(ms/3600_000, 10) + "h"
	case ms%60_000 == 0:
		return strconv.FormatInt(ms/60_000, 10) + "m"
	case ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// RollupIntervals returns the rollup intervals the engine reads (ms,
// ascending); nil without rollups.
func (e *Engine) RollupIntervals() []int64 {
	if e.ru.reader == nil {
		return nil
	}
	return e.ru.reader.Intervals()
}

// rollupAggs are the downsampling functions a bucket answers; the others
// (dev, median, percentiles, mult, squareSum) need the raw points.
var rollupAggs = map[string]bool{
	"sum": true, "zimsum": true, "pfsum": true, "min": true, "mimmin": true, "max": true, "mimmax": true,
	"avg": true, "count": true, "first": true, "last": true, "diff": true,
}

// fixedInterval returns the width of spec's buckets when they are
// epoch-aligned and all of one width: a fixed interval, or a calendar one
// that is the same in UTC (minutes dividing an hour, hours dividing a day,
// one day).
func fixedInterval(spec *downsample.Spec, loc *time.Location) (int64, bool) {
	if spec.All || spec.Interval <= 0 {
		return 0, false
	}
	if !spec.Calendar {
		return spec.Interval, true
	}
	if loc != nil && loc != time.UTC {
		return 0, false
	}
	switch {
	case spec.Unit == "m" && 60%spec.N == 0, spec.Unit == "h" && 24%spec.N == 0, spec.Unit == "d" && spec.N == 1:
		return spec.Interval, true
	}
	return 0, false
}

// rollupIntervals returns the stored intervals that can answer req,
// best first (OpenTSDB's order: the largest that divides the downsample
// interval), or nil when req must read raw points: no rollups, ROLLUP_RAW,
// no downsample, an aggregator buckets do not answer, or buckets that are
// not whole multiples of a rollup interval (0all, a calendar in a time
// zone other than UTC, months, years).
func (e *Engine) rollupIntervals(req Request) []int64 {
	if e.ru.reader == nil || req.Rollup == RollupRaw || req.Downsample == nil {
		return nil
	}
	spec := req.Downsample
	if !rollupAggs[spec.Agg.Name()] {
		return nil
	}
	d, ok := fixedInterval(spec, req.Location)
	if !ok {
		return nil
	}
	all := e.ru.reader.Intervals()
	var out []int64
	for i := len(all) - 1; i >= 0; i-- {
		if iv := all[i]; iv > 0 && iv <= d && d%iv == 0 {
			out = append(out, iv)
		}
	}
	return out
}

// RollupPlan says how the engine would read req: the rollup interval (ms)
// it tries first, or 0 for raw points. The web page and the docs use it.
func (e *Engine) RollupPlan(req Request) int64 {
	if ivs := e.rollupIntervals(req); len(ivs) > 0 {
		return ivs[0]
	}
	return 0
}
