package downsample

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
)

// A day of 10-second data: 8,640 points.
const benchPoints = 8640

// benchSeries returns n series of benchPoints points 10 s apart. With
// jitter each series is shifted by up to 10 s, so that no two share a
// timestamp and every output point interpolates n−1 series.
func benchSeries(n int, jitter, floats bool) [][]chunk.Point {
	r := rand.New(rand.NewPCG(7, 8))
	series := make([][]chunk.Point, n)
	for i := range series {
		var off int64
		if jitter {
			off = r.Int64N(10 * sec)
		}
		pts := make([]chunk.Point, benchPoints)
		v := r.Int64N(1000)
		for j := range pts {
			v += r.Int64N(100)
			pts[j].T = 1_700_000_000_000 + int64(j)*10*sec + off
			if floats {
				pts[j].V = chunk.Float(float64(v) / 3)
			} else {
				pts[j].V = chunk.Int(v)
			}
		}
		series[i] = pts
	}
	return series
}

func benchAggregate(b *testing.B, agg string, jitter, floats bool) {
	series := benchSeries(100, jitter, floats)
	a := mustLookup(b, agg)
	var s Scratch
	dst := s.Aggregate(nil, series, a, false)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst = s.Aggregate(dst[:0], series, a, false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100*benchPoints), "ns/input-point")
}

// Aligned: every series has a point at every output timestamp (the usual
// case after downsampling). Jittered: 864,000 output timestamps, each
// aggregating one exact value and 99 interpolated ones.
func BenchmarkAggregateSum100x8640(b *testing.B)         { benchAggregate(b, "sum", false, false) }
func BenchmarkAggregateSum100x8640Floats(b *testing.B)   { benchAggregate(b, "sum", false, true) }
func BenchmarkAggregateSum100x8640Jittered(b *testing.B) { benchAggregate(b, "sum", true, false) }
func BenchmarkAggregateP95100x8640(b *testing.B)         { benchAggregate(b, "p95", false, true) }
func BenchmarkAggregateP95100x8640Jittered(b *testing.B) { benchAggregate(b, "p95", true, true) }

// The pooled package-level function, as the query layer would call it.
func BenchmarkAggregatePooledSum100x8640(b *testing.B) {
	series := benchSeries(100, false, false)
	a := mustLookup(b, "sum")
	dst := Aggregate(nil, series, a, false)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst = Aggregate(dst[:0], series, a, false)
	}
}

func benchDownsample(b *testing.B, spec string, loc *time.Location) {
	src := benchSeries(1, false, false)[0]
	s := mustSpec(b, spec)
	start, end := src[0].T, src[len(src)-1].T
	dst := Downsample(nil, src, s, start, end, loc)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst = Downsample(dst[:0], src, s, start, end, loc)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPoints), "ns/input-point")
}

func BenchmarkDownsample1mAvg8640(b *testing.B)     { benchDownsample(b, "1m-avg", nil) }
func BenchmarkDownsample1mP958640(b *testing.B)     { benchDownsample(b, "1m-p95", nil) }
func BenchmarkDownsample1mAvgZero8640(b *testing.B) { benchDownsample(b, "1m-avg-zero", nil) }
func BenchmarkDownsample1mcAvgBerlin8640(b *testing.B) {
	benchDownsample(b, "1mc-avg", mustZone(b, "Europe/Berlin"))
}

func BenchmarkRate8640(b *testing.B) {
	src := benchSeries(1, false, false)[0]
	opts := RateOptions{Counter: true}
	dst := Rate(nil, src, opts)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst = Rate(dst[:0], src, opts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPoints), "ns/input-point")
}

// The streaming Downsampler as the read path feeds it: a day of 10 s
// points, by runs of 64 (AddPoints, the head's points) and by decoded
// chunk blocks (AddBlock, the store's; the decoding included), into 1 m
// buckets (6 points each: /api/query's sum and rate kinds), 1 h buckets
// (the long kind) and one bucket (0all-max, the topk kind). keep: 1 m
// buckets with KeepBefore at the middle of the day (a query whose read
// starts half its points before its range: /api/query reads from the
// hour).
func BenchmarkDownsampler(b *testing.B) {
	src := benchSeries(1, false, true)[0]
	start, end := src[0].T, src[len(src)-1].T
	type cell struct {
		hour int64
		data []byte
	}
	var cells []cell
	for i := 0; i < len(src); {
		hour := src[i].T - src[i].T%chunk.HourMillis
		j := i
		for j < len(src) && src[j].T < hour+chunk.HourMillis {
			j++
		}
		enc, err := chunk.Append(nil, hour, src[i:j])
		if err != nil {
			b.Fatal(err)
		}
		cells = append(cells, cell{hour, enc})
		i = j
	}
	for _, spec := range []string{"1m-avg", "1m-avg,keep", "1h-avg", "0all-max"} {
		text, keep := strings.CutSuffix(spec, ",keep")
		s := mustSpec(b, text)
		dst := make([]chunk.Point, 0, benchPoints)
		reset := func(d *Downsampler) {
			d.Reset(dst[:0], s, start, end, nil)
			if keep {
				d.KeepBefore(start+(end-start)/2, 1)
			}
		}
		b.Run(spec+"/points", func(b *testing.B) {
			var d Downsampler
			b.ReportAllocs()
			defer reportCPU(b, cputime.Used(), benchPoints)
			for b.Loop() {
				reset(&d)
				for i := 0; i < len(src); i += 64 {
					d.AddPoints(src[i:min(i+64, len(src))])
				}
				dst = d.Finish()
			}
		})
		b.Run(spec+"/blocks", func(b *testing.B) {
			var d Downsampler
			var it chunk.Iterator
			b.ReportAllocs()
			defer reportCPU(b, cputime.Used(), benchPoints)
			for b.Loop() {
				reset(&d)
				for _, c := range cells {
					if err := it.Reset(c.data, c.hour); err != nil {
						b.Fatal(err)
					}
					for ok := it.Next(); ok; ok = it.Next() {
						blk := it.Block()
						d.AddBlock(&blk)
					}
				}
				dst = d.Finish()
			}
		})
	}
}

// reportCPU reports the process's CPU time per point since start beside
// the wall clock, which on a shared machine counts time spent waiting.
func reportCPU(b *testing.B, start time.Duration, points int) {
	if used := cputime.Used(); used > 0 {
		b.ReportMetric(float64((used-start).Nanoseconds())/float64(b.N*points), "cpu-ns/point")
	}
}
