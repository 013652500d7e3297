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

// QueueError is a query that waited Limits.QueueTimeout for one of the
// Limits.MaxConcurrent slots and got none: the edge answers 503 with a
// Retry-After (OpenTSDB's error, Prometheus' errorType "unavailable").
type QueueError struct {
	Limit  int
	Waited time.Duration
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("too many queries at once: %d are running (-query-max-concurrent) and this one waited %s (-query-queue-timeout); retry later",
		e.Limit, e.Waited.Round(time.Millisecond))
}

// admission bounds the queries running at once: a counting semaphore with
// a queue bounded in time. Its zero value (no slots) admits everything.
type admission struct {
	slots   chan struct{}
	timeout time.Duration

	waiting  prometheus.Gauge
	running  prometheus.Gauge
	timeouts prometheus.Counter
}

func newAdmission(l Limits) *admission {
	a := &admission{
		timeout: l.QueueTimeout,
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hourglass_query_queue_waiting",
			Help: "Queries waiting for a slot of -query-max-concurrent."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hourglass_query_queue_running",
			Help: "Queries holding a slot of -query-max-concurrent."}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: "hourglass_query_queue_timeouts_total",
			Help: "Queries refused (503) after waiting -query-queue-timeout for a slot of -query-max-concurrent."}),
	}
	if l.MaxConcurrent > 0 {
		a.slots = make(chan struct{}, l.MaxConcurrent)
	}
	return a
}

func (a *admission) register(reg prometheus.Registerer) {
	reg.MustRegister(a.waiting, a.running, a.timeouts)
}

// Admit waits for a slot of Limits.MaxConcurrent, at most
// Limits.QueueTimeout (and no longer than ctx), and returns the function
// that gives it back. Every query of both dialects (OpenTSDB /api/query and
// /api/query/last, PromQL query and query_range, remote read) holds one
// while it runs. Past the wait it returns a *QueueError, or ctx's error.
func (e *Engine) Admit(ctx context.Context) (release func(), err error) {
	a := e.admit
	if a.slots == nil {
		return func() {}, nil
	}
	select {
	case a.slots <- struct{}{}:
	default:
		a.waiting.Inc()
		began := time.Now()
		t := time.NewTimer(a.timeout)
		defer t.Stop()
		select {
		case a.slots <- struct{}{}:
			a.waiting.Dec()
		case <-t.C:
			a.waiting.Dec()
			a.timeouts.Inc()
			return nil, &QueueError{Limit: cap(a.slots), Waited: time.Since(began)}
		case <-ctx.Done():
			a.waiting.Dec()
			return nil, ctx.Err()
		}
	}
	a.running.Inc()
	return func() {
		a.running.Dec()
		<-a.slots
	}, nil
}
