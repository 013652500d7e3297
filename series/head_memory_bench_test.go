package series_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// BenchmarkHeadMemory is what the head holds per point while chunks are
// open: 2,000 series × 360 points (one hour every 10 s, values a random
// walk with two decimals, as the load generator's gauges), appended in
// batches of one point per series with the clock inside that hour, so
// nothing seals. It reports the live heap after the points (a GC before
// each reading) minus the heap before, per point. Its late case is the
// same points with the clock a day later, as in a backfill: every chunk is
// a late one (late.go), none due before the points are in. Its
// open-next case is the open one for series that wrote the hour before
// (360 points, sealed and flushed before the measure), as in a running
// server after its first hour: each chunk then knows how many points its
// series' last one held.
func BenchmarkHeadMemory(b *testing.B) {
	b.Run("open", func(b *testing.B) { benchHeadMemory(b, t0+1000, false) })
	b.Run("open-next", func(b *testing.B) { benchHeadMemory(b, t0+1000, true) })
	b.Run("late", func(b *testing.B) { benchHeadMemory(b, t0+24*rowkey.HourMs, false) })
}

func benchHeadMemory(b *testing.B, now int64, prior bool) {
	const nSeries, nSteps = 2000, 360
	labels := make([]series.Labels, nSeries)
	for i := range labels {
		labels[i] = series.MakeLabels("bench.mem", []series.Tag{
			{Key: "host", Value: fmt.Sprintf("host-%04d", i)}, {Key: "dc", Value: fmt.Sprintf("dc%d", i%4)}})
	}
	var perPoint float64
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet, CacheSize: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		layout := rowkey.DefaultLayout()
		h, err := series.OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), series.Options{
			Layout: layout, Logger: quiet, Now: func() time.Time { return time.UnixMilli(now) },
			WAL: wal.Options{Dir: filepath.Join(dir, "wal"), Sync: wal.SyncInterval},
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		batch := make([]series.Sample, nSeries)
		errs := make([]error, nSeries)
		walk := make([]int64, nSeries)
		rng := rand.New(rand.NewPCG(1, 2))
		appendStep := func(i int) {
			for j := range batch {
				walk[j] += rng.Int64N(201) - 100
				batch[j] = series.Sample{Labels: labels[j], T: t0 + int64(i)*10_000, V: chunk.Float(float64(walk[j]) / 100)}
			}
			if err := h.Append(ctx, batch, errs); err != nil {
				b.Fatal(err)
			}
		}
		if prior {
			for i := -nSteps; i < 0; i++ {
				appendStep(i)
			}
			if err := h.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		appendStep(0) // the series exist: their own memory is not the points'
		before := liveHeap()
		b.StartTimer()
		for i := 1; i < nSteps; i++ {
			appendStep(i)
		}
		b.StopTimer()
		after := liveHeap()
		perPoint += float64(after-before) / float64(nSeries*(nSteps-1))
		runtime.KeepAlive(h)
		h.Close()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(perPoint/float64(b.N), "heap-B/point")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nSeries*(nSteps-1)), "ns/point")
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
