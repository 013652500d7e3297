package series_test

import (
	"context"
	"fmt"
	"testing"

	"hourglass/chunk"
	"hourglass/internal/dbtest"
	"hourglass/series"
	"hourglass/series/wal"
)

// BenchmarkHeadSnapshot is a query's copy of the head: Head.Snapshot of a
// series holding 400 points at 10 s (66 minutes: a full hour's open chunk,
// still within -seal-grace, and the next hour's) over the whole range, as
// every query reading the series takes it.
func BenchmarkHeadSnapshot(b *testing.B) {
	dir := b.TempDir()
	e := dbtest.Open(b, dir, func(o *series.Options) { o.WAL.Sync = wal.SyncInterval }, nil)
	defer e.Close()
	h := e.DB
	const nSeries, nPoints = 50, 400
	labels := make([]series.Labels, nSeries)
	for i := range labels {
		labels[i] = series.MakeLabels("bench.snap", []series.Tag{{Key: "host", Value: fmt.Sprintf("host-%03d", i)}})
	}
	batch := make([]series.Sample, nSeries)
	errs := make([]error, nSeries)
	for p := range nPoints {
		for j := range batch {
			batch[j] = series.Sample{Labels: labels[j], T: t0 + int64(p)*10_000, V: chunk.Float(float64(p))}
		}
		if err := h.Append(context.Background(), batch, errs); err != nil {
			b.Fatal(err)
		}
	}
	end := t0 + nPoints*10_000
	if n := len(h.Snapshot(labels[0], t0, end, nil)); n != nPoints {
		b.Fatalf("snapshot holds %d points, want %d", n, nPoints)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if pts := h.Snapshot(labels[i%nSeries], t0, end, nil); len(pts) != nPoints {
			b.Fatalf("snapshot holds %d points, want %d", len(pts), nPoints)
		}
	}
}
