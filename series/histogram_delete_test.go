package series_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"

	"hourglass/chunk"
	"hourglass/series"
	"hourglass/store"
)

// appendHists appends one small integer histogram at each of ts to l.
func (e *env) appendHists(l series.Labels, ts ...int64) {
	e.t.Helper()
	var ss []series.HistSample
	for _, t := range ts {
		h := &histogram.Histogram{Schema: 0, Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}
		ss = append(ss, series.HistSample{Labels: l, T: t, H: h})
	}
	errs := make([]error, len(ss))
	if err := e.head.Head.AppendHistograms(context.Background(), ss, errs, &series.Request{}); err != nil {
		e.t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// storedHists flushes the head and returns the timestamps of every
// histogram sample in the store, as offsets from t0.
func (e *env) storedHists() []int64 {
	e.t.Helper()
	if err := e.head.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var out []int64
	var cerr error
	err := e.st.Scan(context.Background(), store.TableData, []store.KeyRange{{Start: []byte{}}}, func(c store.Cell) bool {
		if !chunk.IsHistogramChunk(c.Value) {
			return true
		}
		_, hour, _, err := e.opts.Layout.ParseRowKey(nil, c.Row)
		if err != nil {
			cerr = err
			return false
		}
		pts, err := chunk.DecodeHistograms(nil, c.Value, hour)
		if err != nil {
			cerr = err
			return false
		}
		for _, p := range pts {
			out = append(out, p.T-t0)
		}
		return true
	})
	if err != nil || cerr != nil {
		e.t.Fatal(err, cerr)
	}
	slices.Sort(out)
	return out
}

// TestHistogramDeleteRacingFlush: a delete of histograms that a flush of
// the same hour is writing wins, whichever way they interleave, and no
// deleted sample comes back after a crash (WAL replay) or a restart.
// The interleavings are forced through the flush's test hooks.
func TestHistogramDeleteRacingFlush(t *testing.T) {
	dir := t.TempDir()
	// The clock stays in t0's hour: no sweep finds the buffers due, only
	// Flush writes them.
	now := func(o *series.Options) { o.Now = func() time.Time { return time.UnixMilli(t0 + 10*60_000) } }
	e := openEnv(t, dir, now)
	l := series.MakeLabels("hist.del", []series.Tag{{Key: "host", Value: "a"}})
	ctx := context.Background()
	e.appendHists(l, t0+1000)
	if got := e.storedHists(); !slices.Equal(got, []int64{1000}) {
		t.Fatalf("first flush: %v", got)
	}

	// 1. The delete and its store rewrite run while a flush holds the
	// samples it took (before it reads the row): the flush must not write
	// the deleted ones back.
	e.appendHists(l, t0+2000, t0+3000, t0+4000)
	e.head.SetHistFlushHooks(func() {
		e.head.SetHistFlushHooks(nil, nil)
		if err := e.head.Delete(ctx, []series.Labels{l}, t0+1000, t0+3000); err != nil {
			t.Error(err)
		}
	}, nil)
	if got := e.storedHists(); !slices.Equal(got, []int64{4000}) {
		t.Fatalf("a delete while the flush held its samples: stored %v, want [4000]", got)
	}

	// 2. The delete comes after the flush read the row: its store rewrite
	// must wait for the write (else the flush writes back the row it read
	// before the rewrite), and the flush must leave out the deleted
	// samples it took.
	e.appendHists(l, t0+5000, t0+6000)
	errc := make(chan error, 1)
	e.head.SetHistFlushHooks(nil, func() {
		e.head.SetHistFlushHooks(nil, nil)
		go func() { errc <- e.head.Delete(ctx, []series.Labels{l}, t0+4000, t0+5000) }()
		deadline := time.Now().Add(10 * time.Second)
		for e.head.HistCuts() == 0 { // the tombstone is applied
			if time.Now().After(deadline) {
				t.Error("the delete's tombstone did not reach the buffer in 10 s")
				return
			}
			time.Sleep(time.Millisecond)
		}
		select {
		case err := <-errc:
			t.Errorf("the delete finished (%v) while the flush held the row", err)
			errc <- err
		case <-time.After(100 * time.Millisecond):
		}
	})
	e.storedHists() // the flush the hook stops in
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := e.storedHists(); !slices.Equal(got, []int64{6000}) {
		t.Fatalf("a delete after the flush read the row: stored %v, want [6000]", got)
	}

	// The WAL replays the samples and both tombstones in order.
	e.crash()
	e = openEnv(t, dir, now)
	if got := e.storedHists(); !slices.Equal(got, []int64{6000}) {
		t.Fatalf("after a crash: stored %v, want [6000]", got)
	}
	e.close()
	e = openEnv(t, dir, now)
	defer e.close()
	if got := e.storedHists(); !slices.Equal(got, []int64{6000}) {
		t.Fatalf("after a restart: stored %v, want [6000]", got)
	}
}
