package migrate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource has one series with a point every ms of [0, n), and fails
// reads of the slice starting at failAt (when >= 0).
type fakeSource struct {
	n      int64
	failAt int64
}

func (f *fakeSource) Read(_ context.Context, s Slice, fn func(*Series) error) error {
	if s.Start == f.failAt {
		return errors.New("boom")
	}
	ser := &Series{Labels: []Label{{MetricLabel, "m"}}}
	for t := s.Start; t < s.End && t < f.n; t++ {
		ser.Points = append(ser.Points, Point{T: t, V: float64(t)})
	}
	return fn(ser)
}

// fakeDest counts the points written to it, per timestamp.
type fakeDest struct {
	mu  sync.Mutex
	got map[int64]int
}

type fakeSink struct {
	d   *fakeDest
	buf []Point
}

func (s *fakeSink) Write(_ context.Context, ser *Series) error {
	s.buf = append(s.buf, ser.Points...)
	return nil
}

func (s *fakeSink) Flush(context.Context) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	for _, p := range s.buf {
		s.d.got[p.T]++
	}
	s.buf = s.buf[:0]
	return nil
}

func (d *fakeDest) Read(_ context.Context, s Slice, fn func(*Series) error) error {
	d.mu.Lock()
	ser := &Series{}
	for t, n := range d.got {
		if t >= s.Start && t < s.End {
			for range n {
				ser.Points = append(ser.Points, Point{T: t})
			}
		}
	}
	d.mu.Unlock()
	return fn(ser)
}

func TestRunResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	key := StateKey{From: "x", Start: 0, End: 100, Slice: 10}
	src := &fakeSource{n: 100, failAt: 50}
	dst := &fakeDest{got: map[int64]int{}}
	newRun := func() *Run {
		st, err := OpenState(path, key)
		if err != nil {
			t.Fatal(err)
		}
		return &Run{Source: src, NewSink: func() Sink { return &fakeSink{d: dst} }, Slices: Slices(0, 100, 10),
			State: st, Concurrency: 3, Progress: NewProgress(nil, time.Time{})}
	}
	r := newRun()
	err := r.Copy(context.Background(), r.Todo())
	if err == nil || !strings.Contains(err.Error(), "slice [1970-01-01T00:00:00.05Z, 1970-01-01T00:00:00.06Z)") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Copy = %v, want the failure naming slice 50", err)
	}
	if r.State.Done(50) {
		t.Fatal("the failed slice is recorded as done")
	}
	// Every slice recorded as done has all its points at the destination.
	for _, s := range r.Slices {
		if r.State.Done(s.Start) {
			for t0 := s.Start; t0 < s.End; t0++ {
				if dst.got[t0] != 1 {
					t.Fatalf("slice %v is recorded done but point %d arrived %d times", s, t0, dst.got[t0])
				}
			}
		}
	}
	src.failAt = -1
	r = newRun()
	todo := r.Todo()
	if len(todo) == 0 || len(todo) == 10 {
		t.Fatalf("the rerun has %d slices to do, want those not done", len(todo))
	}
	if err := r.Copy(context.Background(), todo); err != nil {
		t.Fatal(err)
	}
	for t0 := int64(0); t0 < 100; t0++ {
		if dst.got[t0] != 1 {
			t.Fatalf("after the rerun point %d arrived %d times, want once", t0, dst.got[t0])
		}
	}
	if got := r.Progress.Points(); got != int64(10*len(todo)) {
		t.Fatalf("progress counted %d points, want %d", got, 10*len(todo))
	}
	if len(newRun().Todo()) != 0 {
		t.Fatal("after the rerun slices remain to do")
	}
	diffs, total, err := Verify(context.Background(), src, dst, Slices(0, 100, 10), 2)
	if err != nil || len(diffs) != 0 || total != 100 {
		t.Fatalf("Verify = %v, %d, %v; want no difference over 100 points", diffs, total, err)
	}
	dst.got[42] = 0
	diffs, _, err = Verify(context.Background(), src, dst, Slices(0, 100, 10), 2)
	if err != nil || len(diffs) != 1 || fmt.Sprint(diffs[0]) != fmt.Sprint(Diff{Slice{40, 50}, 10, 9}) {
		t.Fatalf("Verify after losing a point = %v, %v; want slice [40,50) 10 against 9", diffs, err)
	}
}
