package query

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/downsample"
)

// Limits bound one query. Zero means no limit.
type Limits struct {
	MaxSeries int // series a query may touch
	MaxPoints int // raw points a query may read
	// MaxOutputPoints bounds the points a query's pipeline produces: the
	// buckets of its downsampled series (every bucket of the range with a
	// fill policy), or the raw points of series it does not downsample,
	// over all its series before they are aggregated (aggregation and
	// rates never make more). Checked from the plan before a series is
	// read where the plan bounds it, and as points are emitted where it
	// cannot; PromQL range queries count steps × series.
	MaxOutputPoints int
	// MaxConcurrent bounds the queries running at once (Engine.Admit);
	// QueueTimeout bounds how long one waits for a slot (admit.go).
	MaxConcurrent int
	QueueTimeout  time.Duration
}

// DefaultMaxOutputPoints is the default of Limits.MaxOutputPoints for the
// binary: 4.9 million buckets of one series peaked at 291 MB RSS (README),
// so a few such queries at once stay under 1 GiB, and it is still 450
// series × 11,000 points, more than a dashboard draws.
const DefaultMaxOutputPoints = 5_000_000

// LimitError says which limit a query exceeded; the edge maps it to 413
// (OpenTSDB) or 422 (PromQL's "execution" error, as for too many samples).
type LimitError struct {
	What  string // "series", "points", "output points", "samples"
	Limit int
	Flag  string // the flag that sets the limit; "" when not known
	Need  int64  // what the query would take, when known (0: unknown)
	// AtLeast says Need is what was counted when the limit was crossed,
	// not the whole query's.
	AtLeast bool
	Why     string // how Need was counted, e.g. "1 series × 86400001 buckets of 1ms-avg-zero"
}

func (e *LimitError) Error() string {
	var msg string
	if e.Need > 0 {
		at := ""
		if e.AtLeast {
			at = "at least "
		}
		msg = fmt.Sprintf("query would take %s%d %s", at, e.Need, e.What)
		if e.Why != "" {
			msg += " (" + e.Why + ")"
		}
		msg += fmt.Sprintf(", past the limit of %d %s", e.Limit, e.What)
	} else {
		msg = fmt.Sprintf("query exceeds the limit of %d %s", e.Limit, e.What)
		if e.Why != "" {
			msg += " (" + e.Why + ")"
		}
	}
	if e.Flag != "" {
		msg += " set by " + e.Flag
	}
	if e.What == "output points" {
		return msg + "; narrow the filters or the time range, use a longer downsample interval or no fill policy, or raise the limit"
	}
	return msg + "; narrow the filters or the time range, or raise the limit"
}

// ErrLimit is what every LimitError unwraps to.
var ErrLimit = errors.New("query limit exceeded")

func (e *LimitError) Unwrap() error { return ErrLimit }

// pointLimit is a bound on the points a scan reads, and how to name it.
type pointLimit struct {
	max             int // 0: none
	what, flag, why string
}

func (l pointLimit) over(n int64) bool { return l.max > 0 && n > int64(l.max) }

func (l pointLimit) err(need int64) *LimitError {
	return &LimitError{What: l.what, Limit: l.max, Flag: l.flag, Need: need, AtLeast: true, Why: l.why}
}

// rawLimit is -query-max-points.
func (e *Engine) rawLimit() pointLimit {
	return pointLimit{max: e.limits.MaxPoints, what: "points", flag: "-query-max-points", why: "raw points read"}
}

// rawOutputLimit bounds the raw points of a request that does not
// downsample: each is an output point. It is the tighter of
// -query-max-points and -query-max-output-points.
func (e *Engine) rawOutputLimit() pointLimit {
	raw, out := e.limits.MaxPoints, e.limits.MaxOutputPoints
	if out > 0 && (raw <= 0 || out < raw) {
		return pointLimit{max: out, what: "output points", flag: "-query-max-output-points",
			why: "raw points read without a downsample, each one output"}
	}
	return e.rawLimit()
}

// engineMetrics count the queries each limit stopped.
type engineMetrics struct {
	exceeded *prometheus.CounterVec
}

// RegisterMetrics registers the engine's counters on reg:
// hourglass_query_limit_exceeded_total{limit} counts the queries refused
// by each limit (series, points, output_points, samples) and stopped by
// the query timeout (timeout). Call it once, before the engine is used.
func (e *Engine) RegisterMetrics(reg prometheus.Registerer) {
	m := &engineMetrics{exceeded: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hourglass_query_limit_exceeded_total",
		Help: "Queries refused by a limit (series, points, output_points, samples) or stopped by the query timeout (timeout).",
	}, []string{"limit"})}
	for _, l := range []string{"series", "points", "output_points", "samples", "timeout"} {
		m.exceeded.WithLabelValues(l)
	}
	reg.MustRegister(m.exceeded)
	e.admit.register(reg)
	e.metrics = m
}

// exceeded counts le under its limit and returns it.
func (e *Engine) exceeded(le *LimitError) *LimitError {
	if e.metrics != nil {
		l := le.What
		if l == "output points" {
			l = "output_points"
		}
		e.metrics.exceeded.WithLabelValues(l).Inc()
	}
	return le
}

// CountTimeout counts a query stopped by the query timeout.
func (e *Engine) CountTimeout() {
	if e.metrics != nil {
		e.metrics.exceeded.WithLabelValues("timeout").Inc()
	}
}

// ctxEvery is how many points a loop handles between two looks at its
// context: a timed-out query stops within this many points of any series.
const ctxEvery = 1 << 14

// ctxEveryRun is ctxEvery for a loop that takes up to 64 points (a run of
// points.run) at a time.
const ctxEveryRun = ctxEvery / 64

// outputError is a LimitError of -query-max-output-points.
func (e *Engine) outputError(need int64, why string) *LimitError {
	return e.exceeded(outputLimit(e.limits.MaxOutputPoints, need, why))
}

// outputLimit is the LimitError of -query-max-output-points, not counted.
func outputLimit(limit int, need int64, why string) *LimitError {
	return &LimitError{What: "output points", Limit: limit,
		Flag: "-query-max-output-points", Need: need, Why: why}
}

// planDownsample refuses, before anything is read, a downsample whose
// fill policy gives each of the n series with a point in [start, end]
// more buckets than the output limit allows: one series is already too
// many. Whether the n series together fit is known only once they are
// read (readDownsampled counts them).
func (e *Engine) planDownsample(spec downsample.Spec, start, end int64, n int) error {
	limit := int64(e.limits.MaxOutputPoints)
	if limit <= 0 || n == 0 || spec.All || spec.Fill == downsample.FillNone {
		return nil
	}
	lo, _ := spec.Buckets(start, end)
	if lo <= limit {
		return nil
	}
	at := ""
	if spec.Calendar {
		at = "at least "
	}
	need := lo
	if lo <= math.MaxInt64/int64(n) {
		need = lo * int64(n)
	}
	return e.outputError(need, fmt.Sprintf("%d series × %s%d buckets of %s from %d to %d ms", n, at, lo, spec, start, end))
}

// CountSamplesLimit counts a PromQL query the engine's own sample limit
// stopped (-prom-query-max-samples, as promql.ErrTooManySamples).
func (e *Engine) CountSamplesLimit() {
	if e.metrics != nil {
		e.metrics.exceeded.WithLabelValues("samples").Inc()
	}
}

// budget is the output points a request may still produce, shared by the
// goroutines of its scan. The zero budget has no limit.
type budget struct {
	limited bool
	left    atomic.Int64
}

func newBudget(max int) *budget {
	b := &budget{limited: max > 0}
	b.left.Store(int64(max))
	return b
}

// take takes up to n points and returns how many it got: n, or what is
// left when that is less.
func (b *budget) take(n int64) int64 {
	if !b.limited {
		return n
	}
	for {
		left := b.left.Load()
		got := min(n, max(left, 0))
		if b.left.CompareAndSwap(left, left-got) {
			return got
		}
	}
}

// give returns n points taken and not used.
func (b *budget) give(n int64) {
	if b.limited && n > 0 {
		b.left.Add(n)
	}
}
