package chunk

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// FuzzHistogramDecode feeds arbitrary bytes to the histogram decoder: it
// must end with samples or a *CorruptionError, never panic or loop.
func FuzzHistogramDecode(f *testing.F) {
	for _, sc := range histScenarios {
		b, _ := AppendHistograms(nil, hBase, sc.generate(3, hBase, 60_000, 8))
		f.Add(b)
	}
	f.Add([]byte{1, 9, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		pts, err := DecodeHistograms(nil, b, hBase)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		// What decodes re-encodes to a chunk that decodes the same.
		b2, err := AppendHistograms(nil, hBase, pts)
		if err != nil {
			t.Fatalf("re-encoding decoded samples: %v", err)
		}
		pts2, err := DecodeHistograms(nil, b2, hBase)
		if err != nil || len(pts2) != len(pts) {
			t.Fatalf("decoding the re-encoded chunk: %d samples, %v", len(pts2), err)
		}
		for i := range pts {
			if !sameHistPoint(pts[i], pts2[i]) {
				t.Fatalf("sample %d differs after re-encoding", i)
			}
		}
	})
}

// FuzzHistogramRoundTrip builds histograms from arbitrary bytes (layouts,
// counts, floats of any bits) and checks that they round-trip.
func FuzzHistogramRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, false)
	f.Add([]byte{255, 0, 128, 7, 7, 7, 7, 7, 7, 7, 7, 1, 2, 3, 200, 100, 50, 25, 12, 6, 3, 1}, true)
	f.Fuzz(func(t *testing.T, data []byte, float bool) {
		rd := func() uint64 {
			if len(data) == 0 {
				return 0
			}
			var buf [8]byte
			n := copy(buf[:], data[:min(len(data), int(data[0]%8)+1)])
			data = data[n:]
			return binary.LittleEndian.Uint64(buf[:])
		}
		var pts []HistPoint
		t0 := int64(hBase)
		for len(data) > 0 && len(pts) < 64 {
			t0 += int64(rd()%5000) + 1
			if t0 >= hBase+HourMillis {
				break
			}
			var spans [2][]histogram.Span
			nb := [2]int{}
			for side := range 2 {
				for range rd() % 3 {
					s := histogram.Span{Offset: int32(rd()), Length: uint32(rd() % 5)}
					spans[side] = append(spans[side], s)
					nb[side] += int(s.Length)
				}
			}
			hint := histogram.CounterResetHint(rd() % 4)
			schema := int32(rd())
			if float || rd()%4 == 0 {
				fh := &histogram.FloatHistogram{CounterResetHint: hint, Schema: schema, ZeroThreshold: math.Float64frombits(rd()),
					ZeroCount: math.Float64frombits(rd()), Count: math.Float64frombits(rd()), Sum: math.Float64frombits(rd()),
					PositiveSpans: spans[0], NegativeSpans: spans[1]}
				for range nb[0] {
					fh.PositiveBuckets = append(fh.PositiveBuckets, math.Float64frombits(rd()))
				}
				for range nb[1] {
					fh.NegativeBuckets = append(fh.NegativeBuckets, math.Float64frombits(rd()))
				}
				pts = append(pts, HistPoint{T: t0, FH: fh})
				continue
			}
			h := &histogram.Histogram{CounterResetHint: hint, Schema: schema, ZeroThreshold: math.Float64frombits(rd()),
				ZeroCount: rd(), Count: rd(), Sum: math.Float64frombits(rd()), PositiveSpans: spans[0], NegativeSpans: spans[1]}
			for range nb[0] {
				h.PositiveBuckets = append(h.PositiveBuckets, int64(rd()))
			}
			for range nb[1] {
				h.NegativeBuckets = append(h.NegativeBuckets, int64(rd()))
			}
			pts = append(pts, HistPoint{T: t0, H: h})
		}
		if len(pts) == 0 {
			return
		}
		// Integer histograms converted to floats lose precision past
		// 2^53: compare only chunks the encoder keeps as they are.
		for i := range pts {
			if pts[i].FH != nil {
				for j := range pts {
					if pts[j].H != nil {
						pts[j] = HistPoint{T: pts[j].T, FH: pts[j].H.ToFloat(nil)}
					}
				}
				break
			}
		}
		want := roundTrip(t, hBase, pts)
		// A HistEncoder that encoded other chunks first writes the same
		// bytes (its kept scratch leaks nothing from one chunk to the next).
		var enc HistEncoder
		for _, other := range [][]HistPoint{pts[len(pts)/2:], pts[:1]} {
			if _, err := enc.Append(nil, hBase, other); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := enc.Append(nil, hBase, pts); err != nil || !slices.Equal(got, want) {
			t.Fatalf("a reused HistEncoder: %v, %x; want %x", err, got, want)
		}
	})
}
