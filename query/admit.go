package query

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxConcurrent is the default of Limits.MaxConcurrent for the
// binary. One query within DefaultMaxOutputPoints peaked at about 300 MB
// RSS (README), so two running at once stay under 1 GiB with room for
// ingestion; the others wait in the queue.
const DefaultMaxConcurrent = 2

// DefaultQueueTimeout is the default of Limits.QueueTimeout for the binary.
const DefaultQueueTimeout = 10 * time.Second

// QueueError is a query that waited Limits.QueueTimeout for a slot and got
// none: the edge answers 503 with a Retry-After (OpenTSDB's error,
// Prometheus' errorType "unavailable").
type QueueError struct {
	Limit  int // the heavy slots, -query-max-concurrent
	Waited time.Duration
	// Light is the light lane's slots (-query-light-max-concurrent) when
	// the query was light: it waited for either lane's slot.
	Light int
}

func (e *QueueError) Error() string {
	if e.Light > 0 {
		return fmt.Sprintf("too many queries at once: %d light ones (-query-light-max-concurrent) and %d others (-query-max-concurrent) are running and this one waited %s (-query-queue-timeout); retry later",
			e.Light, e.Limit, e.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("too many queries at once: %d are running (-query-max-concurrent) and this one waited %s (-query-queue-timeout); retry later",
		e.Limit, e.Waited.Round(time.Millisecond))
}

// lane is a counting semaphore and its gauges.
type lane struct {
	slots    chan struct{} // nil: no limit
	waiting  prometheus.Gauge
	running  prometheus.Gauge
	timeouts prometheus.Counter
}

func newLane(n int, prefix, flag string) lane {
	l := lane{
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: prefix + "_waiting",
			Help: "Queries waiting for a slot of " + flag + "."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: prefix + "_running",
			Help: "Queries holding a slot of " + flag + "."}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: prefix + "_timeouts_total",
			Help: "Queries refused (503) after waiting -query-queue-timeout for a slot of " + flag + "."}),
	}
	if n > 0 {
		l.slots = make(chan struct{}, n)
	}
	return l
}

// admission bounds the queries running at once: two counting semaphores
// (lanes) with a queue bounded in time. Every query takes one slot, once,
// before it reads any data, and holds it to its end, so no query waits
// while holding a slot and slots cannot deadlock. A heavy query takes one
// of Limits.MaxConcurrent's slots; a light one (lane.go) one of
// Lanes.LightMaxConcurrent's, or a heavy slot when one is free first.
// With no heavy slots (MaxConcurrent 0) everything is admitted.
type admission struct {
	heavy, light lane
	timeout      time.Duration
	lightMax     int64 // Limits.LightMaxPoints; 0 with the light lane off

	admitted *prometheus.CounterVec // by lane: light, heavy
}

func newAdmission(l Limits) *admission { return newLanes(l, Lanes{}) }

// newLanes is newAdmission with a light lane as ln says.
func newLanes(l Limits, ln Lanes) *admission {
	a := &admission{
		timeout: l.QueueTimeout,
		heavy:   newLane(l.MaxConcurrent, "hourglass_query_queue", "-query-max-concurrent"),
		light:   newLane(ln.LightMaxConcurrent, "hourglass_query_light_queue", "-query-light-max-concurrent"),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hourglass_query_admitted_total",
			Help: "Queries admitted, by lane: light (found small before their data is read, -query-light-max-points) or heavy."}, []string{"lane"}),
	}
	if a.heavy.slots != nil && a.light.slots != nil && ln.LightMaxPoints > 0 {
		a.lightMax = int64(ln.LightMaxPoints)
	} else {
		a.light.slots = nil
	}
	a.admitted.WithLabelValues("light")
	a.admitted.WithLabelValues("heavy")
	return a
}

func (a *admission) register(reg prometheus.Registerer) {
	reg.MustRegister(a.heavy.waiting, a.heavy.running, a.heavy.timeouts,
		a.light.waiting, a.light.running, a.light.timeouts, a.admitted)
}

// lightOn reports whether queries are sorted into lanes at all.
func (a *admission) lightOn() bool { return a.lightMax > 0 }

// Admit waits for a slot of Limits.MaxConcurrent, at most
// Limits.QueueTimeout (and no longer than ctx), and returns the function
// that gives it back. Every query of both dialects (OpenTSDB /api/query and
// /api/query/last, PromQL query and query_range, remote read) holds a slot
// while it runs: this one, or a light one (AdmitPromQL, AdmitRequests).
// Past the wait it returns a *QueueError, or ctx's error.
func (e *Engine) Admit(ctx context.Context) (release func(), err error) {
	return e.admit.take(ctx, false)
}

// take waits for a slot: a heavy one, or for a light query the first free
// of a light one and a heavy one.
func (a *admission) take(ctx context.Context, light bool) (func(), error) {
	if a.heavy.slots == nil {
		return func() {}, nil
	}
	kind := "heavy"
	var first, second *lane = &a.heavy, nil
	if light && a.light.slots != nil {
		kind = "light"
		first, second = &a.light, &a.heavy
	}
	got, err := a.wait(ctx, first, second)
	if err != nil {
		return nil, err
	}
	a.admitted.WithLabelValues(kind).Inc()
	got.running.Inc()
	return func() {
		got.running.Dec()
		<-got.slots
	}, nil
}

// wait takes a slot of first, or of second when it is not nil, whichever
// is free first; it waits in first's queue.
func (a *admission) wait(ctx context.Context, first, second *lane) (*lane, error) {
	select {
	case first.slots <- struct{}{}:
		return first, nil
	default:
	}
	var other chan struct{} // nil: never ready
	if second != nil {
		other = second.slots
		select {
		case other <- struct{}{}:
			return second, nil
		default:
		}
	}
	first.waiting.Inc()
	defer first.waiting.Dec()
	began := time.Now()
	t := time.NewTimer(a.timeout)
	defer t.Stop()
	select {
	case first.slots <- struct{}{}:
		return first, nil
	case other <- struct{}{}:
		return second, nil
	case <-t.C:
		first.timeouts.Inc()
		qe := &QueueError{Limit: cap(a.heavy.slots), Waited: time.Since(began)}
		if second != nil {
			qe.Light = cap(first.slots)
		}
		return nil, qe
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
