package chunk

import (
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// promHistBytes encodes pts with Prometheus' own histogram chunks
// (tsdb/chunkenc, the same version as go.mod), appended in order as its
// head does, and returns the bytes of every chunk it made (Bytes(): the
// chunk's data without the chunk-file framing). A new chunk is started
// whenever chunkenc asks for one (a counter reset, a layout it cannot
// recode into the current chunk).
func promHistBytes(t testing.TB, pts []HistPoint) int {
	var c chunkenc.Chunk
	if pts[0].FH != nil {
		c = chunkenc.NewFloatHistogramChunk()
	} else {
		c = chunkenc.NewHistogramChunk()
	}
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	var done int
	for _, p := range pts {
		var nc chunkenc.Chunk
		if p.FH != nil {
			nc, _, app, err = app.AppendFloatHistogram(nil, 0, p.T, p.FH, false)
		} else {
			nc, _, app, err = app.AppendHistogram(nil, 0, p.T, p.H, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		if nc != nil && nc != c {
			// A recode returns the rewritten chunk in place of the old
			// one; a cut returns a new chunk holding only this sample.
			if nc.NumSamples() == 1 {
				done += len(c.Bytes())
			}
			c = nc
		}
	}
	return done + len(c.Bytes())
}

// TestHistogramSizeVsPrometheus encodes one hour of each scenario (240
// samples every 15 s) as one hourglass chunk and as Prometheus chunks, and
// logs both in bytes per sample. It fails if hourglass' chunks are more
// than 5% larger (they are smaller for the exponential scenarios, and
// within 1-3% for custom buckets and non-integral float counts).
func TestHistogramSizeVsPrometheus(t *testing.T) {
	for _, sc := range histScenarios {
		var ours, theirs, n int
		for seed := range uint64(5) {
			pts := sc.generate(seed+10, hBase, 15_000, 240)
			b, err := AppendHistograms(nil, hBase, pts)
			if err != nil {
				t.Fatal(err)
			}
			ours += len(b)
			theirs += promHistBytes(t, pts)
			n += len(pts)
		}
		o, p := float64(ours)/float64(n), float64(theirs)/float64(n)
		t.Logf("%-24s hourglass %7.2f bytes/sample  prometheus %7.2f bytes/sample  ratio %.2f", sc.name, o, p, o/p)
		if float64(ours) > 1.05*float64(theirs) {
			t.Errorf("%s: hourglass %d bytes, prometheus %d", sc.name, ours, theirs)
		}
	}
}

// BenchmarkHistogramEncode reports the encoding cost and size of one hour
// of the schema-3 integer scenario, beside Prometheus' size.
func BenchmarkHistogramEncode(b *testing.B) {
	for _, sc := range histScenarios {
		pts := sc.generate(7, hBase, 15_000, 240)
		b.Run(sc.name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf, _ = AppendHistograms(buf[:0], hBase, pts)
			}
			b.ReportMetric(float64(len(buf))/float64(len(pts)), "B/sample")
			b.ReportMetric(float64(promHistBytes(b, pts))/float64(len(pts)), "prom-B/sample")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pts)), "ns/sample")
		})
	}
}

// BenchmarkHistogramDecode reports the decoding cost per sample.
func BenchmarkHistogramDecode(b *testing.B) {
	for _, sc := range histScenarios {
		pts := sc.generate(7, hBase, 15_000, 240)
		buf, _ := AppendHistograms(nil, hBase, pts)
		b.Run(sc.name, func(b *testing.B) {
			var it HistIterator
			for b.Loop() {
				_ = it.Reset(buf, hBase)
				for it.Next() {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pts)), "ns/sample")
		})
	}
}
