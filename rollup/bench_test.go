package rollup

import (
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/loadtest"
)

// loadSeries returns one day of the load generator's data (its default
// 10 s interval, decimal values), hosts×12 series, grouped by series, in
// time order, as the loadtest command writes it.
func loadSeries(tb testing.TB, hosts int) (kinds []loadtest.Kind, series [][]chunk.Point) {
	tb.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 1, Series: hosts * len(loadtest.Metrics),
		Interval: 10 * time.Second, Start: start, Steps: 8640})
	if err != nil {
		tb.Fatal(err)
	}
	idx := map[*loadtest.Series]int{}
	g.Each(func(p loadtest.Point) {
		i, ok := idx[p.S]
		if !ok {
			i = len(series)
			idx[p.S] = i
			series = append(series, nil)
			kinds = append(kinds, p.S.Kind)
		}
		v := chunk.Int(p.V.Int)
		if p.V.IsFloat {
			v = chunk.Float(p.V.Float)
		}
		series[i] = append(series[i], chunk.Point{T: p.T, V: v})
	})
	return kinds, series
}

// BenchmarkCompute is the cost of computing rollups, per point, over a
// day of load-generator series of one kind.
func BenchmarkCompute(b *testing.B) {
	kinds, series := loadSeries(b, 1)
	for _, iv := range []struct {
		name string
		ms   int64
	}{{"10m", 600_000}, {"1h", 3_600_000}} {
		for _, kind := range []loadtest.Kind{loadtest.Gauge, loadtest.Counter} {
			var pts []chunk.Point
			for i, k := range kinds {
				if k == kind {
					pts = series[i]
					break
				}
			}
			b.Run(kind.String()+"/"+iv.name, func(b *testing.B) {
				dst := make([]Bucket, 0, 256)
				b.ReportAllocs()
				cpu0, cpuOK := cputime.Process()
				for b.Loop() {
					dst, _ = Compute(dst[:0], pts, iv.ms)
				}
				per := float64(b.N) * float64(len(pts))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/point")
				if cpu1, ok := cputime.Process(); ok && cpuOK {
					b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/per, "cpu-ns/point")
				}
			})
		}
	}
}

// BenchmarkCell is the cost of encoding and decoding a day of 10m buckets
// of a gauge, and its size.
func BenchmarkCell(b *testing.B) {
	kinds, series := loadSeries(b, 1)
	var bs []Bucket
	for i, k := range kinds {
		if k == loadtest.Gauge {
			bs, _ = Compute(nil, series[i], 600_000)
			break
		}
	}
	base := BucketStart(bs[0].Start, dayMs)
	cell, _ := AppendCell(nil, base, 600_000, bs)
	b.Run("append", func(b *testing.B) {
		dst := make([]byte, 0, 2*len(cell))
		b.ReportAllocs()
		for b.Loop() {
			dst, _ = AppendCell(dst[:0], base, 600_000, bs)
		}
		b.ReportMetric(float64(len(cell))/float64(len(bs)), "B/bucket")
	})
	b.Run("iterate", func(b *testing.B) {
		var it Iterator
		b.ReportAllocs()
		cpu0, cpuOK := cputime.Process()
		for b.Loop() {
			for it.Reset(cell, base); it.Next(); {
			}
		}
		per := float64(b.N) * float64(len(bs))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/bucket")
		if cpu1, ok := cputime.Process(); ok && cpuOK {
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/per, "cpu-ns/bucket")
		}
	})
}
