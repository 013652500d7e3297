package chunk

import (
	"slices"
	"testing"
)

// TestHistEncoderReuse: one HistEncoder encoding the chunks of every
// scenario in turn (integer, float, custom buckets, both signs), then each
// of their samples as a one-sample chunk (as the head's WAL does), writes
// the bytes AppendHistograms writes afresh, and they decode to the samples.
func TestHistEncoderReuse(t *testing.T) {
	var enc HistEncoder
	var chunks [][]HistPoint
	for _, sc := range histScenarios {
		chunks = append(chunks, sc.generate(2, hBase, 15_000, 60))
	}
	for _, c := range slices.Clone(chunks) {
		for i := range c {
			chunks = append(chunks, c[i:i+1])
		}
	}
	var dst []byte
	for k, pts := range chunks {
		want, err := AppendHistograms(nil, hBase, pts)
		if err != nil {
			t.Fatal(err)
		}
		from := len(dst)
		if dst, err = enc.Append(dst, hBase, pts); err != nil {
			t.Fatal(err)
		}
		if got := dst[from:]; !slices.Equal(got, want) {
			t.Fatalf("chunk %d (%d samples): a reused encoder wrote %d bytes, AppendHistograms %d", k, len(pts), len(got), len(want))
		}
		dec, err := DecodeHistograms(nil, dst[from:], hBase)
		if err != nil || len(dec) != len(pts) {
			t.Fatalf("chunk %d: decoded %d samples, %v; want %d", k, len(dec), err, len(pts))
		}
		for i := range pts {
			p := pts[i]
			if dec[i].FH != nil && p.H != nil {
				p = asFloat(p)
			}
			if !sameHistPoint(dec[i], p) {
				t.Fatalf("chunk %d sample %d: decoded %+v, want %+v", k, i, dec[i], p)
			}
		}
	}
}
