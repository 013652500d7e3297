package query

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAdmit: past MaxConcurrent a query waits for a slot, gets one when a
// running query ends, and fails with a QueueError past QueueTimeout.
func TestAdmit(t *testing.T) {
	e := &Engine{admit: newAdmission(Limits{MaxConcurrent: 1, QueueTimeout: 50 * time.Millisecond})}
	e.RegisterMetrics(prometheus.NewRegistry())
	ctx := context.Background()
	rel, err := e.Admit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Admit(ctx)
	var qe *QueueError
	if !errors.As(err, &qe) || qe.Limit != 1 || qe.Waited < 50*time.Millisecond {
		t.Fatalf("second query: %v, want a QueueError after 50ms", err)
	}
	if got := testutil.ToFloat64(e.admit.heavy.timeouts); got != 1 {
		t.Fatalf("timeouts %v", got)
	}
	done := make(chan error, 1)
	e2 := e
	e2.admit.timeout = 5 * time.Second
	go func() {
		r, err := e2.Admit(ctx)
		if err == nil {
			r()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rel() // the waiting query gets the slot
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting query got no slot")
	}
	if w, r := testutil.ToFloat64(e.admit.heavy.waiting), testutil.ToFloat64(e.admit.heavy.running); w != 0 || r != 0 {
		t.Fatalf("waiting %v running %v after all ended", w, r)
	}
	cctx, cancel := context.WithCancel(ctx)
	rel, _ = e.Admit(ctx)
	cancel()
	if _, err := e.Admit(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled wait: %v", err)
	}
	rel()
	free := &Engine{admit: newAdmission(Limits{})}
	for range 100 {
		if _, err := free.Admit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
