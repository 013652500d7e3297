package chunk

import (
	"encoding/binary"
	"math"
)

// decodeRegular appends the points of chunk b, of the row whose base hour
// is base, to dst when the chunk has a shape AppendFast gives a block of
// ints or decimals (a gauge's, a counter's): timestamps evenly spaced (no
// timestamp bits) or, for a jittered scrape, one bucket of order-1 steps
// in offset mode at most 22 bits wide; values one bucket of order-1
// zig-zag steps at most 56 bits wide. It decodes them in loops straight
// into dst, without the Iterator's batches, and checks what the Iterator
// checks: the header, the timestamps inside the hour and increasing, each
// stream exactly as long as its steps, its padding zero. For any other
// chunk, or one that fails a check, it returns dst unchanged and false,
// and the Iterator decodes it (and reports what is wrong).
//
// The head's frozen blocks are 32 points each: the Iterator's Reset, its
// batch dispatch and its end checks were a third of decoding them.
func decodeRegular(dst []Point, b []byte, base int64) ([]Point, bool) {
	// No chunk of these shapes is shorter than 8 bytes.
	if base%HourMillis != 0 || base > math.MaxInt64-HourMillis || len(b) < 8 || b[0] != formatVersion {
		return dst, false
	}
	enc := encoding(b[1])
	if enc != encDecimal && enc != encInt {
		return dst, false
	}
	count, n := binary.Uvarint(b[2:])
	if n <= 0 || count == 0 || count > MaxPoints {
		return dst, false
	}
	c := int64(count)
	off := 2 + n
	var ts regularTimes
	if off, n = ts.header(b, off, c); n == 0 {
		return dst, false
	}
	var scale float64
	if enc == encDecimal {
		if off >= len(b) || b[off] > maxScale {
			return dst, false
		}
		scale = pow10[b[off]]
		off++
	}
	// The values: order 1, one bucket of at most 56 bits, zig-zag.
	if len(b)-off < 3 || b[off] != 0 || b[off+1] > 56 {
		return dst, false
	}
	w := uint(b[off+1])
	x, n := binary.Varint(b[off+2:])
	if n <= 0 {
		return dst, false
	}
	off += 2 + n
	if !streamFits(b, off, len(b), c-1, w) {
		return dst, false
	}

	n = len(dst)
	if cap(dst)-n < int(c) {
		grown := make([]Point, n, n+int(c))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:n+int(c)]
	out := dst[n:]
	t, step := base+ts.x0, ts.step
	out[0] = Point{T: t, V: regularValue(x, enc, scale)}
	out = out[1:]
	if w == 0 {
		v := regularValue(x, enc, scale)
		for i := range out {
			t += step
			out[i] = Point{T: t, V: v}
		}
	} else {
		per := int(56 / w)
		rs := (64 - w) & 63
		for p := off * 8; len(out) > 0; {
			// 56/w steps from each load of eight bytes.
			buf := load64(b, p)
			k := min(per, len(out))
			blk := out[:k]
			switch {
			case enc == encInt:
				for j := range blk {
					u := buf >> rs
					buf <<= w
					x += int64(u>>1) ^ -int64(u&1)
					t += step
					blk[j] = Point{T: t, V: Value{bits: uint64(x), isInt: true}}
				}
			case scale == 1:
				for j := range blk {
					u := buf >> rs
					buf <<= w
					x += int64(u>>1) ^ -int64(u&1)
					t += step
					blk[j] = Point{T: t, V: Value{bits: math.Float64bits(float64(x))}}
				}
			default:
				for j := range blk {
					u := buf >> rs
					buf <<= w
					x += int64(u>>1) ^ -int64(u&1)
					t += step
					blk[j] = Point{T: t, V: Value{bits: math.Float64bits(float64(x) / scale)}}
				}
			}
			p += k * int(w)
			out = out[k:]
		}
	}
	if ts.w > 0 && !ts.decode(dst[n:], b, base) {
		return dst[:n], false
	}
	return dst, true
}

// regularTimes is the timestamp section of a chunk decodeRegular reads:
// from the first point's offset x0, either every step the same (w 0), or
// each step lo plus w bits from the stream starting at byte at.
type regularTimes struct {
	x0, step int64 // step: the step of a regular section, 0 for one of bits
	lo       int64
	w        uint
	at       int
}

// header reads the section from off, and returns the offset after it and
// 1, or 0 for a section of another shape or not valid.
func (ts *regularTimes) header(b []byte, off int, c int64) (int, int) {
	if len(b)-off < 2 {
		return off, 0
	}
	desc, w := b[off], uint(b[off+1])
	off += 2
	switch {
	case desc == descOrder2 && w == 0: // regular: x0, the step
	case desc == 0 && w == 0 && c == 1: // one point: x0
	case desc == descOffset && w > 0 && w <= 22: // jittered: lo, x0, bits
		lo, n := binary.Varint(b[off:])
		if n <= 0 || lo <= 0 || lo >= HourMillis {
			return off, 0
		}
		ts.lo, ts.w = lo, w
		off += n
	default:
		return off, 0
	}
	x0, n := binary.Uvarint(b[off:])
	if n <= 0 || x0 >= HourMillis {
		return off, 0
	}
	ts.x0 = int64(x0)
	off += n
	if desc == descOrder2 && c >= 2 {
		d1, n := binary.Uvarint(b[off:])
		if n <= 0 || d1 == 0 || d1 >= HourMillis || ts.x0+(c-1)*int64(d1) >= HourMillis {
			return off, 0
		}
		ts.step = int64(d1)
		off += n
	}
	// The stream's length.
	sl, n := binary.Uvarint(b[off:])
	if n <= 0 || sl > uint64(len(b)-off-n) {
		return off, 0
	}
	off += n
	ts.at = off
	if !streamFits(b, off, off+int(sl), c-1, w) {
		return off, 0
	}
	return off + int(sl), 1
}

// decode sets the timestamps of out, the chunk's points, from a section of
// bits, and reports whether they stay inside the hour (each step is lo or
// more, lo positive: they increase).
func (ts *regularTimes) decode(out []Point, b []byte, base int64) bool {
	w := ts.w
	per, rs := int(56/w), (64-w)&63
	t, lo := base+ts.x0, ts.lo
	rest := out[1:]
	for p := ts.at * 8; len(rest) > 0; {
		buf := load64(b, p)
		k := min(per, len(rest))
		blk := rest[:k]
		for j := range blk {
			t += lo + int64(buf>>rs)
			buf <<= w
			blk[j].T = t
		}
		p += k * int(w)
		rest = rest[k:]
	}
	// w ≤ 22 and lo below an hour: t cannot overflow.
	return t < base+HourMillis
}

// streamFits reports whether the bytes b[from:to] hold exactly k fields of
// w bits, zero-padded to a byte.
func streamFits(b []byte, from, to int, k int64, w uint) bool {
	nbits := uint64(k) * uint64(w)
	if uint64(to-from) != (nbits+7)/8 {
		return false
	}
	pad := uint(uint64(to-from)*8 - nbits)
	return pad == 0 || b[to-1]&(1<<pad-1) == 0
}

// load64 returns the 64 bits of b from bit p on (most significant first),
// zeros past b's end; b holds 8 bytes or more, and bit p.
func load64(b []byte, p int) uint64 {
	q := p >> 3
	var v uint64
	if q+8 <= len(b) {
		v = binary.BigEndian.Uint64(b[q:])
	} else {
		v = binary.BigEndian.Uint64(b[len(b)-8:]) << (uint(q+8-len(b)) * 8 & 63)
	}
	return v << (uint(p) & 7)
}

// regularValue is the value of the integer x in a chunk of encoding enc
// (encInt or encDecimal of scale 10^k).
func regularValue(x int64, enc encoding, scale float64) Value {
	if enc == encInt {
		return Int(x)
	}
	return Value{bits: math.Float64bits(float64(x) / scale)}
}
