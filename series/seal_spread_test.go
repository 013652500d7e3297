package series

import (
	"encoding/binary"
	"testing"
)

// TestSealAtSpread: with ChunkSpread the series seal at counts of their own
// between ChunkMaxPoints-ChunkSpread and ChunkMaxPoints, the same count for
// the same TSUID; without it, all at ChunkMaxPoints; a spread past half the
// maximum is cut to half.
func TestSealAtSpread(t *testing.T) {
	tsuid := func(i int) []byte { return binary.BigEndian.AppendUint32([]byte{0, 0, 1}, uint32(i)) }
	o := Options{ChunkMaxPoints: 480, ChunkSpread: 120}
	o.fill()
	h := &Head{opts: o}
	seen := map[int]bool{}
	for i := range 2000 {
		n := h.sealAt(tsuid(i))
		if n < 360 || n > 480 {
			t.Fatalf("series %d seals at %d, outside [360, 480]", i, n)
		}
		if h.sealAt(tsuid(i)) != n {
			t.Fatalf("series %d: two seal counts", i)
		}
		seen[n] = true
	}
	if len(seen) < 100 {
		t.Fatalf("2,000 series seal at %d distinct counts, want most of the 121", len(seen))
	}
	h.opts.ChunkSpread = 0
	if n := h.sealAt(tsuid(7)); n != 480 {
		t.Fatalf("without a spread: seals at %d, want 480", n)
	}
	o = Options{ChunkMaxPoints: 10, ChunkSpread: 100}
	o.fill()
	if o.ChunkSpread != 5 {
		t.Fatalf("a spread of 100 on chunks of 10 became %d, want 5", o.ChunkSpread)
	}
}
