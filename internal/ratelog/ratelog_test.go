package ratelog

import (
	"sync"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := New(5)
	l.Now = func() time.Time { return now }
	allowed := 0
	for range 20 {
		if ok, _ := l.Allow(); ok {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("%d lines allowed in one instant, want the burst of 5", allowed)
	}
	now = now.Add(200 * time.Millisecond) // one token back
	ok, suppressed := l.Allow()
	if !ok || suppressed != 15 {
		t.Fatalf("after 200 ms: ok %v, suppressed %d, want true, 15", ok, suppressed)
	}
	if ok, _ := l.Allow(); ok {
		t.Fatal("a second line within the same 200 ms was allowed")
	}
	now = now.Add(time.Hour) // the bucket refills to its burst, no more
	allowed = 0
	for range 20 {
		if ok, _ := l.Allow(); ok {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("%d lines allowed after an hour, want the burst of 5", allowed)
	}
}

func TestLimiterConcurrent(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l := New(10)
	l.Now = func() time.Time { return now }
	var mu sync.Mutex
	allowed, suppressedSeen := 0, int64(0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				ok, s := l.Allow()
				mu.Lock()
				if ok {
					allowed++
				}
				suppressedSeen += s
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 10 || suppressedSeen != 0 {
		t.Fatalf("allowed %d, suppressed reported %d; want 10 and 0", allowed, suppressedSeen)
	}
	if ok, s := l.Allow(); ok || s != 0 {
		t.Fatalf("with the clock still: ok %v, suppressed %d", ok, s)
	}
}
