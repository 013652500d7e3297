package series

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"hourglass/model"

	"github.com/prometheus/client_golang/prometheus"
)

// SeriesLimits bounds how many series the index may hold and how fast new
// ones may come (cardinality). Zero turns a limit off. A point of a new
// series over a limit is refused before any UID is assigned for it, so it
// leaves nothing behind: no UID, no index entry, no head series. Points of
// series that exist are never refused by these limits.
type SeriesLimits struct {
	// MaxSeries bounds the series in the index, in total (-max-series).
	MaxSeries int
	// MaxSeriesPerMetric bounds the series of one metric (-max-series-per-metric).
	MaxSeriesPerMetric int
	// MaxNewSeriesPerMinute bounds how many series are created per minute,
	// as a token bucket of that size refilled over a minute
	// (-max-new-series-per-minute).
	MaxNewSeriesPerMinute int
	// MaxNewSeriesPerRequest bounds the series one request may create
	// (-max-new-series-per-request); see Request.
	MaxNewSeriesPerRequest int
}

// DefaultSeriesLimits returns the limits the flags start from
// (-max-series, -max-series-per-metric, -max-new-series-per-minute off,
// -max-new-series-per-request). A zero field turns its limit off.
func DefaultSeriesLimits() SeriesLimits {
	return SeriesLimits{MaxSeries: 10_000_000, MaxSeriesPerMetric: 1_000_000, MaxNewSeriesPerRequest: 100_000}
}

// ErrSeriesLimit is wrapped by every refusal of a new series over a limit;
// it is in the class errclass.ErrInvalid (model.ErrSeriesLimit).
var ErrSeriesLimit = model.ErrSeriesLimit

// SeriesLimitError names the limit that refused a new series, by its flag.
type SeriesLimitError struct {
	Flag   string // "-max-series", "-max-series-per-metric", ...
	Limit  int
	Metric string // the series' metric, for -max-series-per-metric
}

func (e *SeriesLimitError) Error() string {
	switch e.Flag {
	case "-max-series-per-metric":
		return fmt.Sprintf("%v: metric %q has %d series, the limit of -max-series-per-metric; new series refused", ErrSeriesLimit, truncName(e.Metric), e.Limit)
	case "-max-new-series-per-minute":
		return fmt.Sprintf("%v: %d new series in the last minute, the limit of -max-new-series-per-minute; new series refused", ErrSeriesLimit, e.Limit)
	case "-max-new-series-per-request":
		return fmt.Sprintf("%v: this request created %d new series, the limit of -max-new-series-per-request; its other new series refused", ErrSeriesLimit, e.Limit)
	}
	return fmt.Sprintf("%v: the store holds %d series, the limit of %s; new series refused", ErrSeriesLimit, e.Limit, e.Flag)
}

// Unwrap returns ErrSeriesLimit.
func (e *SeriesLimitError) Unwrap() error { return ErrSeriesLimit }

func truncName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Request counts the series one request has created, for
// MaxNewSeriesPerRequest. The zero value is a request that created none.
// One request appends from one goroutine at a time.
type Request struct {
	created int
	series  []*memSeries // AppendRequest's scratch, kept across batches
}

// Reset starts a new request (no series created) and keeps the scratch.
func (r *Request) Reset() { r.created = 0 }

// Created returns how many series the request created.
func (r *Request) Created() int { return r.created }

// limiter enforces SeriesLimits. Its counts are the index's plus the series
// admitted but not yet in the index (a head series gets its index entry with
// its first point): admission and insertion both run under the index lock
// (shared and exclusive), so concurrent appends never overshoot a limit.
// A reservation whose series never reaches the index (its batch's WAL write
// failed) stays until the series gets a point: the counts err on the side
// of refusing. Series other nodes add through the index sync count once
// this node's index has them.
type limiter struct {
	lim SeriesLimits
	now func() time.Time
	log *slog.Logger

	mu       sync.Mutex
	pending  map[Labels]struct{} // admitted, not yet in the index
	byMetric map[string]int      // pending, by metric
	tokens   float64             // for MaxNewSeriesPerMinute
	refilled time.Time
	lastLog  time.Time

	refused *prometheus.CounterVec
	byFlag  map[string]prometheus.Counter // refused, by the limit's flag
	created prometheus.Counter
}

func newLimiter(lim SeriesLimits, reg prometheus.Registerer, log *slog.Logger, now func() time.Time) *limiter {
	l := &limiter{
		lim: lim, now: now, log: log,
		pending: map[Labels]struct{}{}, byMetric: map[string]int{}, byFlag: map[string]prometheus.Counter{},
		tokens: float64(lim.MaxNewSeriesPerMinute), refilled: now(),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_series_refused_total",
			Help: "Points of new series refused by a series limit, by the limit's flag (max_series, max_series_per_metric, max_new_series_per_minute, max_new_series_per_request)."},
			[]string{"limit"}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_series_created_total", Help: "New series admitted by the series limits (each gets its UIDs, head series and index entry)."}),
	}
	for _, f := range []string{"-max-series", "-max-series-per-metric", "-max-new-series-per-minute", "-max-new-series-per-request"} {
		l.byFlag[f] = l.refused.WithLabelValues(strings.ReplaceAll(f[1:], "-", "_"))
	}
	if reg != nil {
		reg.MustRegister(l.refused, l.created)
	}
	return l
}

// admit reserves room for the new series l, or returns the
// *SeriesLimitError of the first limit it would break. The caller releases
// the reservation if it does not create the series; Index.add releases it
// when the series gets its index entry.
func (l *limiter) admit(ix *Index, s Labels, req *Request) error {
	lim := l.lim
	if req != nil && lim.MaxNewSeriesPerRequest > 0 && req.created >= lim.MaxNewSeriesPerRequest {
		return l.refuse(&SeriesLimitError{Flag: "-max-new-series-per-request", Limit: lim.MaxNewSeriesPerRequest})
	}
	metric := s.Metric()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	total, perMetric := ix.count, 0
	if mi := ix.metrics[metric]; mi != nil {
		perMetric = len(mi.series)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.pending[s]; ok {
		return nil // admitted for another request that is creating it now
	}
	if lim.MaxSeries > 0 && total+len(l.pending) >= lim.MaxSeries {
		return l.refuseLocked(&SeriesLimitError{Flag: "-max-series", Limit: lim.MaxSeries})
	}
	if lim.MaxSeriesPerMetric > 0 && perMetric+l.byMetric[metric] >= lim.MaxSeriesPerMetric {
		return l.refuseLocked(&SeriesLimitError{Flag: "-max-series-per-metric", Limit: lim.MaxSeriesPerMetric, Metric: metric})
	}
	if lim.MaxNewSeriesPerMinute > 0 {
		now := l.now()
		rate := float64(lim.MaxNewSeriesPerMinute) / float64(time.Minute)
		l.tokens = math.Min(float64(lim.MaxNewSeriesPerMinute), l.tokens+float64(now.Sub(l.refilled))*rate)
		l.refilled = now
		if l.tokens < 1 {
			return l.refuseLocked(&SeriesLimitError{Flag: "-max-new-series-per-minute", Limit: lim.MaxNewSeriesPerMinute})
		}
		l.tokens--
	}
	l.pending[s] = struct{}{}
	l.byMetric[metric]++
	if req != nil {
		req.created++
	}
	l.created.Inc()
	return nil
}

// release drops the reservation of s, if any. The caller holds the index
// lock (Index.add) or nothing.
func (l *limiter) release(s Labels) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.pending[s]; !ok {
		return
	}
	delete(l.pending, s)
	m := s.Metric()
	if l.byMetric[m]--; l.byMetric[m] <= 0 {
		delete(l.byMetric, m)
	}
}

func (l *limiter) refuse(err *SeriesLimitError) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refuseLocked(err)
}

// refuseLocked counts a refusal and logs it, at most once every 10 seconds.
func (l *limiter) refuseLocked(err *SeriesLimitError) error {
	l.byFlag[err.Flag].Inc()
	if now := time.Now(); now.Sub(l.lastLog) >= 10*time.Second {
		l.lastLog = now
		l.log.Warn("new series refused (logged at most every 10 s; hourglass_series_refused_total counts them)", "err", err.Error())
	}
	return err
}

// Append is AppendRequest for no request in particular: the limits other
// than MaxNewSeriesPerRequest apply.
func (h *Head) Append(ctx context.Context, samples []Sample, errs []error) error {
	return h.AppendRequest(ctx, samples, errs, nil)
}

// SetSeriesLimits turns the series limits on (call it after Open, before
// the first append; the replay of the WAL is never limited) and registers
// their counters with reg (nil: none).
func (h *Head) SetSeriesLimits(lim SeriesLimits, reg prometheus.Registerer) {
	h.index.lim.Store(newLimiter(lim, reg, h.opts.Logger, h.opts.Now))
}

// getOrCreateLimited is getOrCreate for the write path: a series that is
// neither in the head nor in the index must pass the limits before any UID
// is assigned to its names. req counts the request's new series (nil: no
// per-request limit).
func (h *Head) getOrCreateLimited(ctx context.Context, l Labels, req *Request) (*memSeries, error) {
	lim := h.index.lim.Load()
	if lim == nil || lim.lim == (SeriesLimits{}) {
		return h.getOrCreate(ctx, l)
	}
	if s := h.shard(l).get(l); s != nil {
		return s, nil
	}
	// In the index already (a series the head forgot, or another node's)?
	h.index.mu.RLock()
	known := h.index.byLabels[l] != nil
	h.index.mu.RUnlock()
	if known {
		return h.getOrCreate(ctx, l)
	}
	if err := lim.admit(h.index, l, req); err != nil {
		return nil, err
	}
	s, err := h.getOrCreate(ctx, l)
	if err != nil {
		lim.release(l)
		return nil, err
	}
	// Index.add releases the reservation with the series' first point; a
	// series that another request created and indexed meanwhile has had
	// it, so release now.
	s.mu.Lock()
	indexed := s.entry != nil
	s.mu.Unlock()
	if indexed {
		lim.release(l)
	}
	return s, nil
}
