package series_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/internal/dbtest"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestHeadMinTime: HeadMinTime is the hour of the oldest chunk the head
// holds, at or before every point Snapshot returns; a head whose chunks
// are all in the store holds none.
func TestHeadMinTime(t *testing.T) {
	e := openEnv(t, t.TempDir(), nil)
	defer e.close()
	if m, ok := e.head.HeadMinTime(); ok {
		t.Fatalf("an empty head: %d, true", m)
	}
	e.append(series.Sample{Labels: host(1), T: t0 + 2*rowkey.HourMs + 5, V: chunk.Int(1)},
		series.Sample{Labels: host(2), T: t0 + rowkey.HourMs + 7, V: chunk.Int(2)},
		series.Sample{Labels: host(1), T: t0 + 3*rowkey.HourMs, V: chunk.Int(3)})
	m, ok := e.head.HeadMinTime()
	if !ok || m != t0+rowkey.HourMs {
		t.Fatalf("HeadMinTime %d, %v; want %d (host 2's hour)", m, ok, t0+rowkey.HourMs)
	}
	for _, h := range []int{1, 2} {
		if pts := e.head.Snapshot(host(h), 0, m-1, nil); len(pts) != 0 {
			t.Fatalf("host %d: points before HeadMinTime: %v", h, pts)
		}
	}
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The flusher drops a written chunk from its series just after Flush's
	// wait ends: a bounded wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		m, ok := e.head.HeadMinTime()
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after Flush: %d, true", m)
		}
	}
}

// BenchmarkHeadMinTime prices the cluster heartbeat's visit of every series
// (once a second): 20,000 series, one open chunk each. cpu-ns/op is the
// process' CPU time per call (the head's own goroutines included).
func BenchmarkHeadMinTime(b *testing.B) {
	env := dbtest.Open(b, b.TempDir(), nil, nil)
	defer env.Close()
	e := env.DB
	ss := make([]series.Sample, 20_000)
	for i := range ss {
		ss[i] = series.Sample{Labels: series.MakeLabels("bench.min", []series.Tag{{Key: "host", Value: fmt.Sprintf("h%05d", i)}}),
			T: t0 + int64(i), V: chunk.Int(int64(i))}
	}
	errs := make([]error, len(ss))
	if err := e.Append(context.Background(), ss, errs); err != nil {
		b.Fatal(err)
	}
	cpu0 := cputime.Used()
	b.ResetTimer()
	for b.Loop() {
		if m, ok := e.HeadMinTime(); !ok || m != t0 {
			b.Fatalf("%d %v", m, ok)
		}
	}
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}
