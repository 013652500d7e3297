package series_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/internal/dbtest"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// BenchmarkHeadAppend is the in-process write path below the HTTP decoder:
// batches of 5,000 points (one per series, as a scrape or a 10 s collection
// round sends them) appended to the head: WAL record, commit, open chunks,
// sealing and the flusher writing chunks to Pebble in the background.
func BenchmarkHeadAppend(b *testing.B) {
	for _, mode := range []wal.SyncMode{wal.SyncInterval, wal.SyncAlways} {
		b.Run("fsync="+mode.String(), func(b *testing.B) {
			dir := b.TempDir()
			e := dbtest.Open(b, dir, func(o *series.Options) { o.WAL.Sync, o.WAL.Compress = mode, true }, nil)
			defer e.Close()
			h := e.DB
			const nSeries = 5000
			labels := make([]series.Labels, nSeries)
			for i := range labels {
				labels[i] = series.MakeLabels("bench.cpu", []series.Tag{
					{Key: "host", Value: fmt.Sprintf("host-%04d", i)}, {Key: "dc", Value: fmt.Sprintf("dc%d", i%4)}, {Key: "rack", Value: fmt.Sprintf("r%d", i%40)}})
			}
			batch := make([]series.Sample, nSeries)
			errs := make([]error, nSeries)
			ctx := context.Background()
			// The first round creates the series (UID assignment, index);
			// the benchmark measures the steady state after it.
			for j := range batch {
				batch[j] = series.Sample{Labels: labels[j], T: t0 - 10_000, V: chunk.Float(0)}
			}
			if err := h.Append(ctx, batch, errs); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				ts := t0 + int64(i)*10_000
				for j := range batch {
					batch[j] = series.Sample{Labels: labels[j], T: ts, V: chunk.Float(float64(i%1000) + float64(j%100)/100)}
				}
				if err := h.Append(ctx, batch, errs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*nSeries)/b.Elapsed().Seconds(), "points/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nSeries), "ns/point")
		})
	}
}

// BenchmarkHeadNewSeries is the cost of a batch of 5,000 series the head
// has never seen: UID assignment for each new tag value, the index entry,
// the WAL series definitions.
func BenchmarkHeadNewSeries(b *testing.B) {
	dir := b.TempDir()
	e := dbtest.Open(b, dir, nil, nil)
	defer e.Close()
	h := e.DB
	const n = 5000
	batch := make([]series.Sample, n)
	errs := make([]error, n)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range batch {
			batch[j] = series.Sample{
				Labels: series.MakeLabels("bench.new", []series.Tag{{Key: "host", Value: fmt.Sprintf("host-%d-%04d", i, j)}, {Key: "dc", Value: fmt.Sprintf("dc%d", j%4)}}),
				T:      t0, V: chunk.Int(int64(j)),
			}
		}
		if err := h.Append(context.Background(), batch, errs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
}

// BenchmarkLateRewrite is issue 11's case: two past hours of 1 s points for
// 4 series, sent in /api/put-sized batches of 500 and flushed to the store.
// "first" sends two new hours each time; "resend" sends the same two hours
// again (new values) after they are in the store. cpu-ns/point is the process' CPU
// (every goroutine: flusher, WAL, store) per point sent.
func BenchmarkLateRewrite(b *testing.B) {
	for _, mode := range []string{"first", "resend"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			e := dbtest.Open(b, dir, func(o *series.Options) { o.WAL.Sync = wal.SyncInterval }, nil)
			defer e.Close()
			h := e.DB
			const nSeries, perHour = 4, 3600
			ctx := context.Background()
			send := func(hour int64, round int) {
				batch := make([]series.Sample, 0, 500)
				errs := make([]error, 500)
				for p := int64(0); p < 2*perHour; p++ {
					for s := 0; s < nSeries; s++ {
						batch = append(batch, series.Sample{Labels: host(s), T: t0 + hour*rowkey.HourMs + p*1000, V: chunk.Float(float64(p+int64(round)) / 4)})
						if len(batch) == cap(batch) {
							if err := h.Append(ctx, batch, errs); err != nil {
								b.Fatal(err)
							}
							batch = batch[:0]
						}
					}
				}
				if len(batch) > 0 {
					if err := h.Append(ctx, batch, errs[:len(batch)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := h.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			send(0, 0) // series, UIDs and, for resend, the hour in the store
			cpu0 := cputime.Used()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if mode == "first" {
					send(int64(2*i+2), i)
				} else {
					send(0, i+1)
				}
			}
			pts := float64(b.N * nSeries * 2 * perHour)
			b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/pts, "cpu-ns/point")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pts, "ns/point")
		})
	}
}

// BenchmarkCloseScatteredLate is the worst case for the late-point bound
// at SIGTERM: 500,000 late points (the default -late-max-points), one per
// row (5,000 series × 100 past hours), each row already holding a cell,
// then Close. It reports the heap they take and how long Close takes.
func BenchmarkCloseScatteredLate(b *testing.B) {
	const nSeries, hours = 5000, 100
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		layout := rowkey.DefaultLayout()
		h, err := series.OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), series.Options{
			Layout: layout, Logger: quiet, WAL: wal.Options{Dir: filepath.Join(dir, "wal"), Sync: wal.SyncInterval},
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		send := func(offset int64) {
			batch := make([]series.Sample, 0, 5000)
			errs := make([]error, 5000)
			for hr := int64(0); hr < hours; hr++ {
				for s := 0; s < nSeries; s++ {
					batch = append(batch, series.Sample{Labels: host(s), T: t0 + hr*rowkey.HourMs + offset + int64(s), V: chunk.Int(hr)})
					if len(batch) == cap(batch) {
						if err := h.Append(ctx, batch, errs); err != nil {
							b.Fatal(err)
						}
						batch = batch[:0]
					}
				}
			}
		}
		send(0)
		if err := h.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		send(60_000) // a minute later in each hour: a late point per row
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse>>20), "heap-MB")
		b.StartTimer()
		start := time.Now()
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "close-s")
		b.StopTimer()
		st.Close()
	}
}
