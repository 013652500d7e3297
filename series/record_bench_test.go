package series

import (
	"math"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"hourglass/chunk"
	"hourglass/loadtest"
)

// BenchmarkWALSamples encodes the load generator's points (2,000 series,
// 1,440 steps, 4 sources of 5,000-point batches grouped by series, as a
// remote write request carries them) as WAL sample entries, format 1's
// (0x02), the delta-coded (0x06) and the series-state samples (0x07) the
// head writes (one segment: each series' state carried from batch to
// batch), and reports the bytes per point before and after s2 (the WAL
// compresses every record).
func BenchmarkWALSamples(b *testing.B) {
	for _, values := range []string{loadtest.ValuesDecimal, loadtest.ValuesFloat} {
		batches := walBenchBatches(b, values)
		for _, enc := range []string{"v1", "delta", "state"} {
			b.Run(values+"/"+enc, func(b *testing.B) {
				var raw, packed, pts int
				var buf, sb []byte
				for b.Loop() {
					raw, packed, pts = 0, 0, 0
					states := map[uint64]*walState{}
					for _, batch := range batches {
						buf = buf[:0]
						if enc == "state" {
							buf = appendStateSamplesHeader(buf, len(batch))
							var e stateEncoder
							for _, s := range batch {
								st := states[s.ref]
								if st == nil {
									st = &walState{}
									states[s.ref] = st
								}
								buf = e.append(buf, st, 1, s.ref, s.t, s.v)
							}
						} else if enc == "v1" {
							buf = appendSamplesHeaderV1(buf, len(batch))
							var prev int64
							for _, s := range batch {
								buf = appendSampleV1(buf, s.ref, s.t-prev, s.v)
								prev = s.t
							}
						} else {
							buf = appendSamplesHeader(buf, len(batch))
							var e sampleEncoder
							for _, s := range batch {
								buf = e.append(buf, s.ref, s.t, s.v)
							}
						}
						sb = s2.Encode(sb[:cap(sb)], buf)
						raw += len(buf)
						packed += len(sb)
						pts += len(batch)
					}
				}
				b.ReportMetric(float64(raw)/float64(pts), "raw-B/point")
				b.ReportMetric(float64(packed)/float64(pts), "s2-B/point")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pts), "ns/point")
			})
		}
	}
}

func walBenchBatches(b *testing.B, values string) [][]walSample {
	b.Helper()
	g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 1, Series: 2000, Interval: 10 * time.Second,
		Start: time.Unix(1795810820, 0), Steps: 1440, Values: values})
	if err != nil {
		b.Fatal(err)
	}
	refs := map[*loadtest.Series]uint64{}
	var out [][]walSample
	for w := 0; w < 4; w++ {
		src := g.Source(w, 4)
		for !src.Done() {
			batch := src.Fill(nil, 5000, math.MaxInt64)
			bySeries := map[*loadtest.Series][]walSample{}
			var order []*loadtest.Series
			for _, p := range batch {
				r, ok := refs[p.S]
				if !ok {
					r = uint64(len(refs) + 1)
					refs[p.S] = r
				}
				v := chunk.Int(p.V.Int)
				if p.V.IsFloat {
					v = chunk.Float(p.V.Float)
				}
				if _, ok := bySeries[p.S]; !ok {
					order = append(order, p.S)
				}
				bySeries[p.S] = append(bySeries[p.S], walSample{ref: r, t: p.T, v: v})
			}
			var ss []walSample
			for _, s := range order {
				ss = append(ss, bySeries[s]...)
			}
			out = append(out, ss)
		}
	}
	return out
}
