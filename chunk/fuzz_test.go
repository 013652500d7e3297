package chunk

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// fuzzInput hands out a fuzz input's bytes as big-endian numbers of n
// bytes, zeros once it runs out.
type fuzzInput []byte

func (in *fuzzInput) take(n int) uint64 {
	var b [8]byte
	k := copy(b[8-n:], *in)
	*in = (*in)[k:]
	return binary.BigEndian.Uint64(b[:])
}

// fuzzPoints derives a valid chunk's worth of points from arbitrary bytes,
// steering timestamps (regular, jittered, irregular, far apart) and values
// (repeats, small and huge ints, raw float bits, decimals, NaN payloads,
// ±Inf, -0) so that every encoding gets exercised.
func fuzzPoints(data []byte) (int64, []Point) {
	in := fuzzInput(data)
	take := in.take
	base := testBase + (int64(take(1)%16)-8)*HourMillis
	end := base + HourMillis
	t := base + int64(take(3)%HourMillis)
	specials := []Value{staleNaN, Float(math.NaN()), FloatBits(0xfff0000000000123), Float(math.Inf(1)), Float(math.Inf(-1)),
		Float(math.Copysign(0, -1)), Float(0), Int(math.MinInt64), Int(math.MaxInt64), Int(1<<53 + 1), Float(1<<53 + 2)}
	var pts []Point
	prev := Float(0)
	m := int64(0)
	for len(in) > 0 && len(pts) < 5000 {
		op := take(1)
		v := prev
		switch op >> 4 & 7 {
		case 0: // repeat
		case 1:
			v = Int(int64(take(8)))
		case 2:
			v = FloatBits(take(8))
		case 3:
			v = Int(prev.Int() + int64(take(1)) - 128)
		case 4, 5:
			m += int64(take(1)) - 128
			v = Float(float64(m) / pow10[op>>7*3]) // scale 0 or 3
		case 6:
			v = specials[take(1)%uint64(len(specials))]
		case 7:
			v = Float(prev.Float() + float64(int64(take(1))-128)/8)
		}
		pts = append(pts, Point{T: t, V: v})
		prev = v
		var gap int64
		switch op & 3 {
		case 0:
			gap = 10000
		case 1:
			gap = 15000 + int64(take(1)%32) - 16
		case 2:
			gap = 1 + int64(take(1))
		case 3:
			gap = 1 + int64(take(3)%HourMillis)
		}
		if t += gap; t >= end {
			break
		}
	}
	if len(pts) == 0 {
		pts = append(pts, Point{T: t, V: prev})
	}
	return base, pts
}

func fuzzSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0x40, 0x40, 0x40})
	f.Add([]byte("\x03\x00\x00\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x20\x21\x22\x23\x24\x25\x26\x27\x28\x29\x30\x31"))
	f.Add([]byte("\x05\x00\x01\x00\x60\x01\x60\x02\x60\x03\x60\x04\x60\x05\x60\x06\x60\x07\x60\x08\x60\x09\x60\x0a\x60\x0b\x13\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte("\x07\x01\x02\x03\x41\x80\x41\x81\x41\x7f\x41\x90\xc1\x20\xc1\x21\x51\x05\x51\x06\x21\x7f\xf0\x00\x00\x00\x00\x00\x02"))
	// Decimals at scale 3 with ints among them: mixed-decimal.
	f.Add([]byte("\x00\x00\x00\x00\xc0\x10\xc0\x20\xc0\x30\x30\x05\xc0\x40\xc0\x50\x30\x07\xc0\x60\x40\x10"))
}

// FuzzRoundTrip: any derived points must come back bit for bit, with the
// encoding Append picks, with the fallback mixed encoding, and with
// mixed-decimal where it fits (every float a decimal at one scale k, every
// int times 10^k an int64: mixedDecimalScale).
func FuzzRoundTrip(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		base, pts := fuzzPoints(data)
		_, fits := mixedDecimalScale(pts)
		for _, enc := range []encoding{0, encMixed, encMixedDecimal} {
			b, err := appendChunk(nil, base, pts, enc)
			if enc == encMixedDecimal && !fits {
				if !errors.Is(err, ErrInvalidPoints) {
					t.Fatalf("encode (%s) of points it does not fit: err = %v", enc, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("encode (%s): %v", enc, err)
			}
			got, err := Decode(nil, b, base)
			if err != nil {
				t.Fatalf("decode (%s): %v\nchunk %x", encoding(b[1]), err, b)
			}
			checkSame(t, got, pts)
			checkCountRange(t, b, base, pts)
		}
		// AppendFast (the head's frozen blocks) round-trips the same points.
		b, err := AppendFast(nil, base, pts)
		if err != nil {
			t.Fatalf("encode (fast): %v", err)
		}
		got, err := Decode(nil, b, base)
		if err != nil {
			t.Fatalf("decode (fast, %s): %v\nchunk %x", encoding(b[1]), err, b)
		}
		checkSame(t, got, pts)
		checkCountRange(t, b, base, pts)
	})
}

// FuzzDecode: arbitrary bytes never panic or loop; whatever decodes
// cleanly is a valid chunk's points and survives a round trip.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	for _, b := range sampleChunks(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var it Iterator
		pc, first, perr := Peek(b, testBase)
		if it.Reset(b, testBase) == nil {
			// Peek reads the header Reset checks: it agrees.
			if perr != nil || pc != it.Len() || first != it.First() {
				t.Fatalf("Peek = %d, %d, %v; Reset: Len %d, First %d", pc, first, perr, it.Len(), it.First())
			}
			n := 0
			for it.Next() {
				n++
			}
			if it.Err() == nil && n != it.Len() {
				t.Fatalf("iterated %d points, header says %d", n, it.Len())
			}
			it.Reset(b, testBase)
			it.SeekTo(testBase + 1800000)
			it.Next()
		}
		pts, err := Decode(nil, b, testBase)
		if err != nil {
			return
		}
		checkCountRange(t, b, testBase, pts)
		// By blocks, from inside the first batch: the same points.
		byBlock, err := blockPoints(t, b, math.MinInt64, len(b)%3)
		if err != nil {
			t.Fatalf("Decode succeeded, by blocks: %v", err)
		}
		checkSame(t, byBlock, pts)
		if it.Reset(b, testBase); it.First() != pts[0].T {
			t.Fatalf("First = %d, first point at %d", it.First(), pts[0].T)
		}
		c, err := Append(nil, testBase, pts)
		if err != nil {
			t.Fatalf("decoded points do not encode: %v", err)
		}
		got, err := Decode(nil, c, testBase)
		if err != nil {
			t.Fatalf("re-encoded chunk does not decode: %v", err)
		}
		checkSame(t, got, pts)
		// Through an Iterator that decoded another chunk just before (as
		// the head's snapshot decodes its blocks): the same points, after
		// the ones already in dst.
		it.Decode(nil, c, testBase)
		again, err := it.Decode(pts[:1:1], b, testBase)
		if err != nil || len(again) != 1+len(pts) {
			t.Fatalf("decoded again through a used Iterator: %d points, %v", len(again), err)
		}
		checkSame(t, again[1:], pts)
	})
}

// checkCountRange holds CountRange to the points pts that chunk b decodes
// to, over ranges that cut it at its ends, inside and outside.
func checkCountRange(t *testing.T, b []byte, base int64, pts []Point) {
	t.Helper()
	lo, hi := pts[0].T, pts[len(pts)-1].T
	mid := lo + (hi-lo)/2
	for _, r := range [][2]int64{
		{math.MinInt64, math.MaxInt64}, {lo, hi}, {lo + 1, hi - 1}, {mid, mid}, {mid - 7, mid + 10001},
		{math.MinInt64, lo}, {hi, math.MaxInt64}, {hi + 1, math.MaxInt64}, {math.MinInt64, lo - 1}, {hi, lo},
	} {
		want := 0
		for _, p := range pts {
			if p.T >= r[0] && p.T <= r[1] {
				want++
			}
		}
		k, first, err := CountRange(b, base, r[0], r[1])
		if err != nil || k != want || first != lo {
			t.Fatalf("CountRange(%d, %d) = %d, %d, %v; want %d, %d", r[0], r[1], k, first, err, want, lo)
		}
	}
}
