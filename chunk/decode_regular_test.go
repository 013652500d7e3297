package chunk

import (
	"encoding/binary"
	"testing"
)

// decodeIter decodes chunk b through the Iterator's batches (Reset, Next,
// Block), never through decodeRegular: the reference decodeRegular is
// held to.
func decodeIter(b []byte, base int64) ([]Point, error) {
	var it Iterator
	if err := it.Reset(b, base); err != nil {
		return nil, err
	}
	var pts []Point
	for it.Next() {
		blk := it.Block()
		for i, t := range blk.T {
			pts = append(pts, Point{T: t, V: blk.Value(i)})
		}
	}
	return pts, it.Err()
}

// regularPoints derives points of the shapes decodeRegular reads from
// arbitrary bytes: 1 to 300 points evenly spaced or jittered from a start
// inside the hour, ints or decimals of scale 0 to 4 (or, now and then, a point off
// the step or a float that is not a decimal, which AppendFast writes in
// another shape), stepping by amounts of a width the data picks.
func regularPoints(data []byte) (int64, []Point) {
	in := fuzzInput(data)
	take := in.take
	base := testBase + (int64(take(1)%16)-8)*HourMillis
	n := 1 + int(take(2)%300)
	step := 1 + int64(take(3)%20000)
	t := base + int64(take(3)%HourMillis)
	mode := take(1)
	scale := int(mode % 5)
	wbits := uint(take(1) % 60)
	jitter := int64(take(1) % 4 * 16) // 0: evenly spaced
	m := int64(take(8))
	if mode&0x80 == 0 {
		m >>= 12 // a mantissa a float holds exactly
	}
	var pts []Point
	for i := 0; i < n && t < base+HourMillis; i++ {
		var v Value
		switch {
		case mode&0x40 != 0:
			v = Int(m)
		case mode&0x20 != 0 && i == n/2:
			v = Float(1.0 / 3)
		default:
			v = Float(float64(m) / pow10[scale])
		}
		pts = append(pts, Point{T: t, V: v})
		r := int64(take(8))
		if wbits < 63 {
			r >>= 63 - wbits
		}
		m += r
		if mode&0x80 == 0 {
			m = m << 12 >> 12
		}
		t += step
		if jitter > 0 {
			t += int64(take(1)) % jitter
		}
		if mode&0x10 != 0 && i == n/3 {
			t += int64(take(1)) + 1 // one point off the step
		}
	}
	return base, pts
}

// FuzzDecodeRegular holds decodeRegular to the Iterator: on AppendFast's
// blocks of regular points, intact or with a byte changed, cut short or
// lengthened, and on the fuzzer's bytes as they are, whatever
// decodeRegular decodes the Iterator decodes to the same points, bit for
// bit, and every intact block of ints or decimals whose steps fit in 56
// bits is decoded by it.
func FuzzDecodeRegular(f *testing.F) {
	f.Add([]byte{}, uint16(0), uint8(0))
	f.Add([]byte("\x08\x01\x00\x00\x27\x10\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), uint16(0), uint8(0))
	f.Add([]byte("\x08\x00\x20\x00\x27\x10\x00\x00\x00\x42\x05\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00"), uint16(9), uint8(1))
	f.Add([]byte("\x03\x01\x40\x00\x00\x10\x00\x00\x00\x21\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09"), uint16(40), uint8(0x80))
	f.Add([]byte("\x01\x00\x05\x00\x10\x00\x00\x00\x00\x12\x30"), uint16(3), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, at uint16, change uint8) {
		check := func(b []byte, base int64, must bool) {
			t.Helper()
			got, ok := decodeRegular([]Point{{T: 1}}, b, base)
			if !ok {
				if must {
					t.Fatalf("decodeRegular refused an intact block of its shape\nchunk %x", b)
				}
				return
			}
			want, err := decodeIter(b, base)
			if err != nil {
				t.Fatalf("decodeRegular decoded %d points, the Iterator fails: %v\nchunk %x", len(got)-1, err, b)
			}
			if got[0] != (Point{T: 1}) {
				t.Fatalf("decodeRegular changed the point already in dst")
			}
			checkSame(t, got[1:], want)
		}
		check(data, testBase, false)

		base, pts := regularPoints(data)
		b, err := AppendFast(nil, base, pts)
		if err != nil {
			t.Fatalf("AppendFast: %v", err)
		}
		got, err := decodeIter(b, base)
		if err != nil {
			t.Fatalf("AppendFast's block does not decode: %v\nchunk %x", err, b)
		}
		checkSame(t, got, pts)
		shaped := true
		if _, ok := decimalScale(pts); !ok {
			shaped = false
		}
		if enc := encoding(b[1]); enc != encInt && enc != encDecimal {
			shaped = false
		} else if regularWidth(b) > 56 {
			shaped = false
		}
		check(b, base, shaped)

		// Changed: one byte, cut short, one byte more.
		i := int(at) % len(b)
		switch c := append([]byte(nil), b...); change % 4 {
		case 0:
			c[i] ^= 1 << (change >> 5)
			check(c, base, false)
		case 1:
			check(c[:i], base, false)
		case 2:
			check(append(c, change), base, false)
		case 3:
			c[i] = change
			check(c, base, false)
		}
	})
}

// regularWidth is the bit width of the value steps of an int or decimal
// chunk b whose value sequence has one bucket (0 if it cannot tell).
func regularWidth(b []byte) int {
	var ts seqDec
	count, off, err := leadingHeader(b, testBase, &ts)
	if err != nil {
		return 0
	}
	n, k := binary.Uvarint(b[off:])
	off += k + int(n)
	if encoding(b[1]) == encDecimal {
		off++
	}
	var vs seqDec
	if _, err := vs.header(b, off, int(count), false); err != nil || !vs.fixed {
		return 0
	}
	return int(vs.tab[0].w)
}
