package series_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
)

// TestSnapshotWhileFreezing reads series while they are written, frozen
// block by block into their open chunks' buffers, sealed at the hour's
// grace and flushed (two and a half hours at 10 s, the head's clock at the
// points' time), with now and then a point written again (the same value)
// back in time, which leaves its chunk's newer points raw. Every read
// through the engine (the head's snapshot, then the store) gives each
// series a prefix of its points, none missing and none changed; every
// snapshot of the head alone gives points of the series' own values,
// strictly increasing, in the range asked. The last read gives them all.
// Run it with -race.
func TestSnapshotWhileFreezing(t *testing.T) {
	const nSeries, nPoints, step = 4, 900, 10_000
	var clock atomic.Int64
	clock.Store(t0)
	e := openEnv(t, t.TempDir(), func(o *series.Options) {
		o.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
		o.WAL.Sync = wal.SyncInterval
	})
	defer e.close()
	labels := make([]series.Labels, nSeries)
	for i := range labels {
		labels[i] = series.MakeLabels("frz.race", []series.Tag{{Key: "host", Value: fmt.Sprintf("h%d", i)}})
	}
	value := func(s int, t int64) chunk.Value {
		p := (t - t0) / step
		if s == nSeries-1 {
			return chunk.Int(p * 3) // a series of ints: mixed XOR blocks
		}
		return chunk.Float(float64((p*37+int64(s)*11)%1000) / 100)
	}
	// check returns how many points pts holds if they are a prefix of
	// series s's, or an error.
	check := func(s int, pts []chunk.Point, prefix bool) (int, error) {
		for i, p := range pts {
			if prefix && p.T != t0+int64(i)*step {
				return 0, fmt.Errorf("point %d at %d, want %d", i, p.T, t0+int64(i)*step)
			}
			if i > 0 && p.T <= pts[i-1].T {
				return 0, fmt.Errorf("point %d at %d after %d", i, p.T, pts[i-1].T)
			}
			if (p.T-t0)%step != 0 || !p.V.Identical(value(s, p.T)) {
				return 0, fmt.Errorf("point %d at %d holds %v", i, p.T, p.V)
			}
		}
		return len(pts), nil
	}

	var wg sync.WaitGroup
	var failed atomic.Value
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		batch := make([]series.Sample, 0, 2*nSeries)
		errs := make([]error, 2*nSeries)
		for p := 0; p < nPoints; p++ {
			t := t0 + int64(p)*step
			clock.Store(t)
			batch = batch[:0]
			for s := range labels {
				batch = append(batch, series.Sample{Labels: labels[s], T: t, V: value(s, t)})
				if p%97 == 50 && s%2 == 0 { // a point again, back in time
					back := t - 40*step
					batch = append(batch, series.Sample{Labels: labels[s], T: back, V: value(s, back)})
				}
			}
			if err := e.head.Append(context.Background(), batch, errs[:len(batch)]); err != nil {
				failed.Store(fmt.Sprintf("append at %d: %v", t, err))
				return
			}
		}
	}()

	end := t0 + nPoints*step
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			seen := make([]int, nSeries)
			var buf []chunk.Point
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if r == 0 {
					ss, err := e.eng.Select(context.Background(), query.Selector{Metric: "frz.race", Start: t0, End: end})
					if err != nil {
						failed.Store(err.Error())
						return
					}
					for _, s := range ss {
						k := 0
						for k < nSeries && s.Labels.String() != labels[k].String() {
							k++
						}
						n, err := check(k, s.Points, true)
						if err == nil && n < seen[k] {
							err = fmt.Errorf("%d points after %d", n, seen[k])
						}
						if err != nil {
							failed.Store(fmt.Sprintf("read %d, %s: %v", i, s.Labels, err))
							return
						}
						seen[k] = n
					}
					continue
				}
				// The whole span, or a range that cuts the blocks.
				k, from, to := i%nSeries, t0, end
				if i%2 == 1 {
					from = t0 + int64(i*7919%nPoints)*step - step/2
					to = from + int64(i%5)*rowkey.HourMs/4 + step/3
				}
				buf = e.head.Snapshot(labels[k], from, to, buf[:0])
				_, err := check(k, buf, false)
				if err == nil && len(buf) > 0 && (buf[0].T < from || buf[len(buf)-1].T > to) {
					err = fmt.Errorf("points %d..%d out of the range [%d, %d]", buf[0].T, buf[len(buf)-1].T, from, to)
				}
				if err != nil {
					failed.Store(fmt.Sprintf("snapshot %d, %s: %v", i, labels[k], err))
					return
				}
			}
		}(r)
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
	got := e.read("frz.race", t0, end)
	for s, l := range labels {
		if n, err := check(s, got[l.String()], true); err != nil || n != nPoints {
			t.Fatalf("%s after the writes: %d points, want %d (%v)", l, n, nPoints, err)
		}
	}
	if rowkey.HourOf(end) == t0 {
		t.Fatal("the points should span hours")
	}
}
