package chunk

import (
	"encoding/binary"
	"math"
	"testing"
)

// decodeRef is seqDec.decode as it was before the loops of their own for
// one-bucket order-1 sequences (fixedZigzag, fixedOffset; main 36d87e1),
// the reference FuzzSeqDecode holds decode to.
//
// It decodes the next len(dst) integers into dst, and reports false if
// the stream ends too soon. With a scale other than 0 it stores, instead of
// each integer m, the bits of float64(m)/scale: the division then overlaps
// the integer work.
func (s *seqDec) decodeRef(dst []int64, scale float64) bool {
	conv := scale != 0
	// The first one or two integers come from the header.
	for len(dst) > 0 && s.i < s.order {
		if s.i == 1 {
			s.d = s.d1
			s.x += s.d
		}
		dst[0] = s.x
		if conv {
			dst[0] = int64(math.Float64bits(float64(s.x) / scale))
		}
		dst = dst[1:]
		s.i++
	}
	s.i += len(dst)
	x, d, keep := s.x, s.d, s.keep
	if s.noBits {
		r := s.off // zig-zag 0 is 0
		if keep == 0 || r == 0 {
			// The delta is the same every time: r, or the last one.
			d = d&keep + r
			for i := range dst {
				x += d
				dst[i] = x
			}
		} else {
			for i := range dst {
				d += r
				x += d
				dst[i] = x
			}
		}
		if conv {
			for i, m := range dst {
				dst[i] = int64(math.Float64bits(float64(m) / scale))
			}
		}
		s.x, s.d = x, d
		return true
	}
	sh, mask, off := s.zzShift, s.zzMask, s.off
	buf, n, b := s.r.buf, s.r.n, s.r.b
	if w := uint(s.tab[0].w); s.fixed && w <= 56 {
		// One bucket: every residual is w bits, no prefix to look up. The
		// shift counts are below 64 here (w is 1..56, n 0..63, sh 0 or
		// 1); masking them says so, and spares a check per shift.
		for i := range dst {
			if n < w {
				if len(b) >= 8 {
					buf |= binary.BigEndian.Uint64(b) >> (n & 63)
					b = b[(63-n)>>3:]
					n |= 56
				} else {
					s.r.buf, s.r.n, s.r.b = buf, n, b
					s.r.refill()
					buf, n, b = s.r.buf, s.r.n, s.r.b
					if n < w {
						return false
					}
				}
			}
			u := buf >> ((64 - w) & 63)
			buf <<= w & 63
			n -= w
			d = d&keep + (int64(u>>(sh&63)) ^ -int64(u&mask) + off)
			x += d
			if conv {
				dst[i] = int64(math.Float64bits(float64(x) / scale))
			} else {
				dst[i] = x
			}
		}
		s.r.buf, s.r.n, s.r.b = buf, n, b
		s.x, s.d = x, d
		return true
	}
	tab := &s.tab
	for i := range dst {
		if n < 56 {
			if len(b) >= 8 {
				buf |= binary.BigEndian.Uint64(b) >> n
				b = b[(63-n)>>3:]
				n |= 56
			} else {
				s.r.buf, s.r.n, s.r.b = buf, n, b
				s.r.refill()
				buf, n, b = s.r.buf, s.r.n, s.r.b
			}
		}
		e := tab[buf>>61]
		cl, w := uint(e.cl), uint(e.w)
		var u uint64
		if tot := cl + w; tot <= n {
			u = buf << cl >> (64 - w)
			buf <<= tot
			n -= tot
		} else {
			// A code longer than the bits at hand: the stream's end, or
			// a 64-bit bucket.
			s.r.buf, s.r.n, s.r.b = buf, n, b
			var ok bool
			if _, ok = s.r.read(cl); ok {
				u, ok = s.r.read(w)
			}
			if !ok {
				return false
			}
			buf, n, b = s.r.buf, s.r.n, s.r.b
		}
		d = d&keep + (int64(u>>sh) ^ -int64(u&mask) + off)
		x += d
		if conv {
			dst[i] = int64(math.Float64bits(float64(x) / scale))
		} else {
			dst[i] = x
		}
	}
	s.r.buf, s.r.n, s.r.b = buf, n, b
	s.x, s.d = x, d
	return true
}

// seqFuzzInts derives a residual sequence's integers from data: random
// walks whose steps take a given number of bits (so that the encoder picks
// one bucket of every width, or several), counters, raw int64s.
func seqFuzzInts(data []byte) []int64 {
	take := func(n int) uint64 {
		var b [8]byte
		k := copy(b[8-n:], data)
		data = data[k:]
		return binary.BigEndian.Uint64(b[:])
	}
	var xs []int64
	x := int64(take(8))
	for len(data) > 0 && len(xs) < 600 {
		op := take(1)
		run := 1 + int(take(1)%64)
		wd := uint(take(1) % 64) // step width in bits
		for range run {
			var step int64
			switch op % 5 {
			case 0: // a walk of steps of either sign, wd bits
				step = int64(take(1)<<56|take(1)) >> (63 - wd) >> 1
			case 1: // a counter: steps of wd bits, one sign
				step = int64(take(2) & (1<<wd - 1))
			case 2: // raw
				x = int64(take(8))
			case 3: // a constant run
			case 4: // a regular step
				step = int64(wd) * 1000
			}
			x += step
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		xs = append(xs, x)
	}
	return xs
}

// FuzzSeqDecode holds seqDec.decode to decodeRef, the decoder before
// fixedZigzag and fixedOffset: on sequences the encoder writes from derived
// integers (every bucket layout, both orders and mappings) and on those
// sequences cut short or with bits flipped, decoded by batches of
// varying sizes, with and without a decimal scale, both must give the same
// integers, succeed or fail at the same batch, and leave the reader at the
// same offset (s.d only where it is read: order 2, or no bits).
func FuzzSeqDecode(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint16(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 5, 0, 40, 9, 1, 3, 2, 3, 63, 5, 7, 7, 7, 7}, uint8(3), uint16(0x1234))
	f.Add([]byte("\x00\x00\x00\x00\x00\x01\x00\x00\x01\x3f\x20\x55\xaa\x55\xaa\x55\xaa\x55\xaa\x04\x10\x05"), uint8(0x82), uint16(7))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x13\x88\x00\x3f\x09\x11\x92\x33\x04\x55\x66\x77\x88\x99\x00\x30\x02\x12\x34\x56\x78"), uint8(0x41), uint16(0))
	for w := range 64 {
		f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 63, byte(w), 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 1, 63, byte(w), 0x5a}, uint8(w), uint16(w*37))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8, cut uint16) {
		xs := seqFuzzInts(data)
		pts := make([]Point, len(xs))
		for i, x := range xs {
			pts[i] = Point{T: int64(i), V: Int(x)}
		}
		src := seqSource{pts: pts, kind: srcInt}
		plan := src.plan()
		b := src.appendSeq(nil, &plan, false)
		// Corrupt it: cut it short or flip a bit.
		switch mode >> 6 {
		case 1:
			b = b[:int(cut)%(len(b)+1)]
		case 2:
			if len(b) > 0 {
				i := int(cut) % (len(b) * 8)
				b[i/8] ^= 0x80 >> (i % 8)
			}
		}
		scale := [8]float64{0, 0, 1, 100, 1e3, 1e7, 1e18, 1e22}[mode&7]
		var s seqDec
		off, err := s.header(b, 0, len(xs), false)
		if err != nil {
			return
		}
		s.r.reset(b[off:], len(b))
		ref := s
		var got, want [batch]int64
		rng := uint32(cut)*2654435761 + uint32(mode)
		for left := len(xs); left > 0; {
			rng = rng*1664525 + 1013904223
			k := min(left, []int{batch, batch, 1, 2, 7, 31, 33, 63}[rng>>29])
			left -= k
			gok, wok := s.decode(got[:k], scale), ref.decodeRef(want[:k], scale)
			if gok != wok {
				t.Fatalf("decode %v, reference %v (batch of %d, %d left)", gok, wok, k, left)
			}
			if go_, wo := s.r.offset(), ref.r.offset(); go_ != wo {
				t.Fatalf("reader at offset %d, reference at %d (ok %v)", go_, wo, gok)
			}
			if !gok {
				return
			}
			if got != want || s.x != ref.x || s.i != ref.i || s.d != ref.d && (s.order == 2 || s.noBits) {
				t.Fatalf("decoded %v (x %d d %d i %d), reference %v (x %d d %d i %d)", got[:k], s.x, s.d, s.i, want[:k], ref.x, ref.d, ref.i)
			}
		}
		if s.r.rest() != ref.r.rest() {
			t.Fatalf("rest %v, reference %v", s.r.rest(), ref.r.rest())
		}
		if mode>>6 == 0 && scale == 0 {
			// Uncorrupted and unscaled: the integers themselves.
			var s2 seqDec
			off, _ := s2.header(b, 0, len(xs), false)
			s2.r.reset(b[off:], len(b))
			all := make([]int64, len(xs))
			for i := 0; i < len(xs); i += batch {
				if !s2.decode(all[i:min(i+batch, len(xs))], 0) {
					t.Fatalf("decode failed at %d of %d", i, len(xs))
				}
			}
			for i := range xs {
				if all[i] != xs[i] {
					t.Fatalf("integer %d = %d, want %d", i, all[i], xs[i])
				}
			}
		}
	})
}
