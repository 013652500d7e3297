package migrate

import (
	"context"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when the limiter sleeps.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	return nil
}

func TestLimiterRate(t *testing.T) {
	tests := []struct {
		name   string
		rate   float64
		batch  int
		points int
	}{
		{"small batches", 1000, 10, 10000},
		{"batches bigger than a second", 100, 500, 5000},
		{"one point at a time", 50, 1, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1000, 0)}
			l := NewLimiter(tc.rate)
			l.now, l.sleep = clk.now, clk.sleep
			start := clk.t
			for sent := 0; sent < tc.points; sent += tc.batch {
				if err := l.Wait(context.Background(), tc.batch); err != nil {
					t.Fatal(err)
				}
			}
			// The last batch goes once the ones before it are paid for,
			// less the one second of burst allowed at the start.
			want := time.Duration(float64(tc.points-tc.batch)/tc.rate*float64(time.Second)) - time.Second
			want = max(want, 0)
			if got := clk.t.Sub(start); got < want-time.Millisecond || got > want+time.Millisecond {
				t.Fatalf("sending %d points at %g/s took %v, want %v", tc.points, tc.rate, got, want)
			}
		})
	}
}

func TestLimiterIdleBurst(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(100)
	l.now, l.sleep = clk.now, clk.sleep
	_ = l.Wait(context.Background(), 100)
	clk.t = clk.t.Add(time.Hour) // idle: no more than a second's burst saved up
	start := clk.t
	for range 3 {
		_ = l.Wait(context.Background(), 100)
	}
	if got := clk.t.Sub(start); got != time.Second {
		t.Fatalf("300 points at 100/s after an idle hour took %v, want 1s (one second of burst, not an hour's)", got)
	}
}

func TestLimiterNilAndCancel(t *testing.T) {
	if NewLimiter(0) != nil {
		t.Fatal("NewLimiter(0) limits")
	}
	var l *Limiter
	if err := l.Wait(context.Background(), 1e9); err != nil {
		t.Fatal(err)
	}
	l = NewLimiter(1)
	ctx, cancel := context.WithCancel(context.Background())
	_ = l.Wait(ctx, 10) // the burst
	cancel()
	if err := l.Wait(ctx, 10); err == nil {
		t.Fatal("Wait on a cancelled context returned nil")
	}
}
