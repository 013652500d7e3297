package series_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/internal/dbtest"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
)

// BenchmarkHeadSnapshotOpenHour is the head's share of a short dashboard
// query at compare.sh's scale: 5,000 series, each with an open in-time
// chunk of 359 points at 10 s (a random walk in hundredths, as the load
// generator's gauges), appended one point per series per batch with the
// head's clock at the points' time, so the chunks freeze as a running
// server's do and their blocks lie in memory as theirs. Each operation
// takes the snapshot of every series over the hour ("hour") or its last
// half ("half", the range cutting the chunks), into one reused buffer.
func BenchmarkHeadSnapshotOpenHour(b *testing.B) {
	const nSeries, nSteps = 5000, 360
	var clock int64 = t0
	e := dbtest.Open(b, b.TempDir(), func(o *series.Options) {
		o.WAL.Sync = wal.SyncInterval
		o.Now = func() time.Time { return time.UnixMilli(clock) }
	}, nil)
	defer e.Close()
	h := e.DB
	labels := make([]series.Labels, nSeries)
	for i := range labels {
		labels[i] = series.MakeLabels("bench.open", []series.Tag{{Key: "host", Value: fmt.Sprintf("host-%04d", i)}})
	}
	batch := make([]series.Sample, nSeries)
	errs := make([]error, nSeries)
	walk := make([]int64, nSeries)
	rng := rand.New(rand.NewPCG(3, 4))
	for p := 1; p < nSteps; p++ {
		clock = t0 + int64(p)*10_000
		for j := range batch {
			walk[j] += rng.Int64N(201) - 100
			batch[j] = series.Sample{Labels: labels[j], T: clock, V: chunk.Float(float64(walk[j]) / 100)}
		}
		if err := h.Append(context.Background(), batch, errs); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name       string
		start, end int64
		thin       bool
	}{
		{"hour", t0, t0 + rowkey.HourMs - 1, false},
		{"half", t0 + rowkey.HourMs/2 + 5_000, t0 + rowkey.HourMs - 1, false},
		// Thinned for an instant selector at 1 m steps (SnapshotThin),
		// the points counted as Snapshot's.
		{"hour-thin", t0, t0 + rowkey.HourMs - 1, true},
		{"half-thin", t0 + rowkey.HourMs/2 + 5_000, t0 + rowkey.HourMs - 1, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var buf []chunk.Point
			pts := 0
			for _, l := range labels {
				pts += len(h.Snapshot(l, c.start, c.end, nil))
			}
			th := series.Thin{T0: c.start + 5*60_000, Step: 60_000, End: c.end}
			b.ReportAllocs()
			cpu0 := cputime.Used()
			for b.Loop() {
				n := 0
				for _, l := range labels {
					if c.thin {
						var raw int
						buf, raw = h.SnapshotThin(l, c.start, c.end, th, buf[:0])
						n += raw
						continue
					}
					buf = h.Snapshot(l, c.start, c.end, buf[:0])
					n += len(buf)
				}
				if n != pts {
					b.Fatalf("%d points, want %d", n, pts)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pts), "ns/point")
			b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/float64(b.N*pts), "cpu-ns/point")
		})
	}
}
