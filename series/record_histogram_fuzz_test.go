package series

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"

	"hourglass/chunk"
	"hourglass/rowkey"
)

// appendHistEntry writes a histograms entry as AppendHistograms does.
func appendHistEntry(dst []byte, refs []uint64, pts []chunk.HistPoint) []byte {
	dst = append(dst, entryHistograms)
	dst = binary.AppendUvarint(dst, uint64(len(pts)))
	for i, p := range pts {
		b, err := chunk.AppendHistograms(nil, rowkey.HourOf(p.T), []chunk.HistPoint{p})
		if err != nil {
			panic(err)
		}
		dst = binary.AppendUvarint(dst, refs[i])
		dst = binary.AppendVarint(dst, p.T)
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

func appendExemplarEntry(dst []byte, refs []uint64, ex []Exemplar) []byte {
	dst = append(dst, entryExemplars)
	dst = binary.AppendUvarint(dst, uint64(len(ex)))
	for i := range ex {
		dst = binary.AppendUvarint(dst, refs[i])
		dst = appendExemplar(dst, &ex[i])
	}
	return dst
}

// FuzzHistogramExemplarRecord decodes arbitrary bytes as WAL entries of
// histograms and exemplars, and as a persisted exemplar set: never a
// panic; what decodes, written again, decodes to the same bytes.
func FuzzHistogramExemplarRecord(f *testing.F) {
	h := &histogram.Histogram{Schema: 2, Count: 3, Sum: 1.5, PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []int64{1, 1}}
	fh := &histogram.FloatHistogram{Schema: -53, Count: 2, CustomValues: []float64{1, 2}, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []float64{2}}
	rec := appendHistEntry(nil, []uint64{1, 2}, []chunk.HistPoint{{T: 1_700_000_000_000, H: h}, {T: 1_700_000_015_000, FH: fh}})
	ex := []Exemplar{{Labels: []Tag{{Key: "trace_id", Value: "abc"}}, Value: 0.5, T: 1_700_000_000_000}, {Value: -1, T: 3}}
	rec = appendExemplarEntry(rec, []uint64{1, 2}, ex)
	f.Add(rec)
	f.Add(appendExemplarSet(nil, MakeLabels("m", nil), ex))
	f.Add([]byte{entryHistograms, 1, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []byte
		d := recordDecoder{
			onSeries: func(uint64, Labels) error { return nil },
			onSample: func(walSample) error { return nil },
			onDelete: func(int64, int64, []Labels) error { return nil },
			onHist: func(ref uint64, p chunk.HistPoint) error {
				got = appendHistEntry(got, []uint64{ref}, []chunk.HistPoint{p})
				return nil
			},
			onExemplar: func(ref uint64, e Exemplar) error {
				got = appendExemplarEntry(got, []uint64{ref}, []Exemplar{e})
				return nil
			},
		}
		if err := d.decode(b); err == nil && len(got) > 0 {
			again := got
			got = nil
			if err := d.decode(again); err != nil {
				t.Fatalf("re-encoded entries do not decode: %v", err)
			}
			if !bytes.Equal(got, again) {
				t.Fatalf("round trip changed the entries:\n%x\n%x", again, got)
			}
		}
		if l, ex, err := readExemplarSet(b); err == nil {
			// Written again (varints made canonical), it reads the same.
			b2 := appendExemplarSet(nil, l, ex)
			l2, ex2, err := readExemplarSet(b2)
			if err != nil || l2 != l || fmt.Sprint(ex2) != fmt.Sprint(ex) {
				t.Fatalf("exemplar set round trip: %q %v, then %q %v (%v)", l, ex, l2, ex2, err)
			}
		}
	})
}
