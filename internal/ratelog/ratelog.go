// Package ratelog bounds how many lines a source of log lines writes: a
// token bucket of a rate of lines a second (its burst the same). What it
// drops is counted, and the count goes out with the next line allowed, so
// a flood of one kind of line (bad requests, a store failing in a loop)
// neither fills the disk nor hides that it happened.
package ratelog

import (
	"sync"
	"time"
)

// Limiter is a token bucket for log lines. Safe for concurrent use.
type Limiter struct {
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time

	rate float64

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int64
}

// New returns a Limiter of perSecond lines a second, full.
func New(perSecond float64) *Limiter {
	return &Limiter{rate: perSecond, tokens: perSecond}
}

// Allow takes a token: ok is whether a line may go out, suppressed how
// many were refused since the last one allowed (to log with it).
func (l *Limiter) Allow() (ok bool, suppressed int64) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	t := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.rate, l.tokens+t.Sub(l.last).Seconds()*l.rate)
	}
	l.last = t
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	suppressed = l.suppressed
	l.suppressed = 0
	return true, suppressed
}
