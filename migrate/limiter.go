package migrate

import (
	"context"
	"sync"
	"time"
)

// Limiter holds a flow of points to a rate: Wait(n) returns when n more
// points fit in rate points per second, allowing a burst of one second's
// worth after an idle spell. A nil *Limiter does not limit. Safe for
// concurrent use.
type Limiter struct {
	mu    sync.Mutex
	rate  float64
	next  time.Time // when the budget spent so far is paid back
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// NewLimiter returns a limiter of rate points per second, or nil (no limit)
// when rate <= 0.
func NewLimiter(rate float64) *Limiter {
	if rate <= 0 {
		return nil
	}
	return &Limiter{rate: rate, now: time.Now, sleep: sleepCtx}
}

// Wait blocks until n points may go, or ctx is done.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l == nil || n <= 0 {
		return ctx.Err()
	}
	l.mu.Lock()
	now := l.now()
	if floor := now.Add(-time.Second); l.next.Before(floor) {
		l.next = floor // idle: at most one second of burst
	}
	at := l.next // the points go once the budget before them is paid back
	l.next = l.next.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	l.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		return l.sleep(ctx, d)
	}
	return ctx.Err()
}

// sleepCtx sleeps for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
