package chunk

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// batch is how many points the Iterator decodes at a time, into buffers
// inside itself: tight per-stream loops over a batch run several times
// faster than decoding a point per call, and the buffers make Seek cheap.
const batch = 64

// Iterator decodes a chunk. The zero Iterator holds no points; Reset points
// it at a chunk. Reusing one Iterator through Reset allocates nothing, and
// neither do Next, Seek and At.
//
// An Iterator is not safe for concurrent use. It reads the chunk's bytes in
// place: they must not change while it is in use.
type Iterator struct {
	ts seqDec // timestamps, as offsets from base
	vs seqDec // values of int and decimal chunks; vs.r reads xor values too

	base    int64
	first   int64 // the first point's timestamp
	count   int   // points in the chunk
	decoded int   // points decoded into the buffers so far
	n       int   // points in the buffers
	pos     int   // the current point's index in the buffers
	enc     encoding
	scale   float64 // 10^k of a decimal or mixed-decimal chunk
	iscale  int64   // 10^k as an int64 of a mixed-decimal chunk, 0 beyond 10^18
	prevOff int64   // offset from base of the last point decoded, -1 before

	// Gorilla XOR state.
	xv          uint64
	lead, trail uint8

	// The kind map of a mixed-decimal chunk: km reads the bitmap or, in
	// list form, holds in km.b the uvarint gaps not yet read (km.n stays
	// 0, so offset and rest work for both); knext is the index of the
	// next listed point, noKind after the last.
	km    bitReader
	kform uint8
	knext int

	kinds uint64 // bit i set: buffered point i is an int
	done  bool   // the end was reached (and checked, unless Seek skipped it)
	err   error

	tbuf [batch]int64 // timestamps
	vbuf [batch]int64 // value bits
}

// code is one entry of a prefix table: the prefix length and the width of
// the bucket it names.
type code struct{ cl, w uint8 }

// seqDec decodes a residual sequence (see format.go).
type seqDec struct {
	r     bitReader
	tab   [8]code // by the next three bits
	keep  int64   // -1 for order 2 (the delta carries over), 0 for order 1
	order int
	// A residual is int64(u>>zzShift) ^ -int64(u&zzMask) + off: zig-zag
	// with shift and mask 1 and off 0, offset mode with shift and mask 0.
	zzShift uint
	zzMask  uint64
	off     int64
	noBits  bool  // one bucket of width 0: every residual is off
	fixed   bool  // one bucket: no prefixes
	i       int   // integers decoded so far
	x, d    int64 // current integer and delta
	d1      int64 // x1-x0, for order 2
}

// Reset points it at the chunk b of the row whose base hour is base (Unix
// milliseconds), and checks the chunk's header. Errors from a bad header
// are *CorruptionError; the rest of the chunk is checked as it is read, and
// a problem there ends the iteration with Err set. Reset clears any earlier
// error.
func (it *Iterator) Reset(b []byte, base int64) error {
	// Not *it = Iterator{}: the buffers need no clearing.
	it.ts, it.vs = seqDec{}, seqDec{}
	it.base, it.count, it.decoded, it.n, it.pos = base, 0, 0, 0, 0
	it.enc, it.scale, it.prevOff = 0, 0, -1
	it.xv, it.lead, it.trail, it.kinds = 0, 0, 0, 0
	it.iscale, it.km, it.kform, it.knext = 0, bitReader{}, 0, 0
	it.done, it.err = false, nil
	if err := it.reset(b, base); err != nil {
		it.count = 0
		it.err = err
		return err
	}
	return nil
}

func (it *Iterator) reset(b []byte, base int64) error {
	count, off, err := leadingHeader(b, base, &it.ts)
	if err != nil {
		return err
	}
	it.enc = encoding(b[1])
	it.first = base + it.ts.x
	it.ts.x = it.first // the sequence decodes to timestamps, not offsets
	tsLen, n := binary.Uvarint(b[off:])
	if n <= 0 || tsLen > uint64(len(b)-off-n) {
		return corrupt(off, "bad timestamp stream length")
	}
	off += n
	end := off + int(tsLen)
	it.ts.r.reset(b[off:end], end)
	off = end

	// Values.
	switch it.enc {
	case encConstInt, encConstFloat, encConstDecimal:
		var v int64
		switch it.enc {
		case encConstInt:
			if v, n = binary.Varint(b[off:]); n <= 0 {
				return corrupt(off, "bad constant")
			}
			it.kinds = ^uint64(0)
		case encConstFloat:
			if len(b)-off < 8 {
				return corrupt(off, "truncated constant")
			}
			v, n = int64(binary.BigEndian.Uint64(b[off:])), 8
		case encConstDecimal:
			if off >= len(b) || b[off] > maxScale {
				return corrupt(off, "bad decimal scale")
			}
			scale := pow10[b[off]]
			off++
			if v, n = binary.Varint(b[off:]); n <= 0 {
				return corrupt(off, "bad constant")
			}
			v = int64(math.Float64bits(float64(v) / scale))
		}
		if off += n; off != len(b) {
			return corrupt(off, "trailing bytes")
		}
		for i := range it.vbuf {
			it.vbuf[i] = v
		}
	case encInt, encDecimal:
		if it.enc == encDecimal {
			if off >= len(b) || b[off] > maxScale {
				return corrupt(off, "bad decimal scale")
			}
			it.scale = pow10[b[off]]
			off++
		} else {
			it.kinds = ^uint64(0)
		}
		if off, err = it.vs.header(b, off, int(count), false); err != nil {
			return err
		}
		it.vs.r.reset(b[off:], len(b))
	case encXOR, encMixed:
		it.vs.r.reset(b[off:], len(b))
	case encMixedDecimal:
		if off >= len(b) || b[off] > maxScale {
			return corrupt(off, "bad decimal scale")
		}
		k := int(b[off])
		it.scale = pow10[k]
		if k < len(ipow10) {
			it.iscale = ipow10[k]
		}
		off++
		if off >= len(b) || b[off] > kindFloatList {
			return corrupt(off, "bad kind map form")
		}
		it.kform = b[off]
		off++
		kl, n := binary.Uvarint(b[off:])
		if n <= 0 || kl > uint64(len(b)-off-n) {
			return corrupt(off, "bad kind map length")
		}
		if it.kform == kindBitmap && kl != (count+7)/8 {
			return corrupt(off, "kind bitmap length does not match the point count")
		}
		off += n
		end := off + int(kl)
		it.km.reset(b[off:end], end)
		if it.kform != kindBitmap && !it.nextListed(-1, int(count)) {
			return corrupt(off, "bad kind list")
		}
		off = end
		if off, err = it.vs.header(b, off, int(count), false); err != nil {
			return err
		}
		it.vs.r.reset(b[off:], len(b))
	}
	it.count = int(count)
	return nil
}

// noKind is knext after the last listed point: no point has this index.
const noKind = MaxPoints

// nextListed reads the next gap of a kind list, whose last listed point
// was prev, into knext: noKind at the end of the list. It reports false for
// a bad uvarint or a point past count.
func (it *Iterator) nextListed(prev, count int) bool {
	b := it.km.b
	if len(b) == 0 {
		it.knext = noKind
		return true
	}
	g, n := binary.Uvarint(b)
	if n <= 0 || g >= uint64(count-prev-1) {
		return false
	}
	it.km.b = b[n:]
	it.knext = prev + 1 + int(g)
	return true
}

// kindBatch returns the kinds of the k points from index lo on (bit i set:
// point lo+i is an int) from a mixed-decimal chunk's kind map.
func (it *Iterator) kindBatch(lo, k int) (uint64, bool) {
	if it.kform == kindBitmap {
		v, ok := it.km.read(uint(k))
		return bits.Reverse64(v) >> (64 - k), ok
	}
	var listed uint64
	for hi := lo + k; it.knext < hi; {
		listed |= 1 << (it.knext - lo)
		if !it.nextListed(it.knext, it.count) {
			return 0, false
		}
	}
	if it.kform == kindFloatList {
		return ^listed & (^uint64(0) >> (64 - k)), true
	}
	return listed, true
}

// mixedValues turns the mantissas m in vs into value bits: float64(m)/10^k
// for a float, m/10^k for an int (bit i of kinds set). It reports false
// for an int mantissa that is not a multiple of 10^k, which no encoder
// writes.
func (it *Iterator) mixedValues(vs []int64, kinds uint64) bool {
	scale, ip := it.scale, it.iscale
	for i, m := range vs {
		switch {
		case kinds>>i&1 == 0:
			vs[i] = int64(math.Float64bits(float64(m) / scale))
		case ip == 0:
			if m != 0 {
				return false
			}
		case m%ip != 0:
			return false
		default:
			vs[i] = m / ip
		}
	}
	return true
}

// header reads a residual sequence's descriptor, widths, offset, first
// integer and, for order 2, first delta, starting at off; it returns the
// offset after them.
func (s *seqDec) header(b []byte, off, count int, unsigned bool) (int, error) {
	if off >= len(b) {
		return off, corrupt(off, "truncated sequence descriptor")
	}
	desc := b[off]
	if desc&^descMask != 0 {
		return off, corrupt(off, "bad sequence descriptor")
	}
	off++
	nb := int(desc&descBuckets) + 1
	s.order, s.keep = 1, 0
	if desc&descOrder2 != 0 {
		s.order, s.keep = 2, -1
	}
	if len(b)-off < nb {
		return off, corrupt(off, "truncated bucket widths")
	}
	var ws [4]uint8
	for i := range nb {
		ws[i] = b[off+i]
		if ws[i] > 64 || i > 0 && ws[i] <= ws[i-1] {
			return off, corrupt(off+i, "bad bucket width")
		}
	}
	off += nb
	s.zzShift, s.zzMask, s.off = 1, 1, 0
	if desc&descOffset != 0 {
		v, n := binary.Varint(b[off:])
		if n <= 0 {
			return off, corrupt(off, "bad residual offset")
		}
		off += n
		s.zzShift, s.zzMask, s.off = 0, 0, v
	}
	s.noBits = nb == 1 && ws[0] == 0
	s.fixed = nb == 1
	for p, bk := range bucketOfPrefix[nb] {
		s.tab[p] = code{cl: prefixLen[nb][bk], w: ws[bk]}
	}
	var n int
	if s.x, n = varint(b[off:], unsigned); n <= 0 {
		return off, corrupt(off, "bad first integer")
	}
	off += n
	if s.order == 2 && count >= 2 {
		if s.d1, n = varint(b[off:], unsigned); n <= 0 {
			return off, corrupt(off, "bad first delta")
		}
		off += n
	}
	return off, nil
}

func varint(b []byte, unsigned bool) (int64, int) {
	if unsigned {
		u, n := binary.Uvarint(b)
		return int64(u), n
	}
	return binary.Varint(b)
}

// decode decodes the next len(dst) integers into dst, and reports false if
// the stream ends too soon. With a scale other than 0 it stores, instead of
// each integer m, the bits of float64(m)/scale: the division then overlaps
// the integer work.
func (s *seqDec) decode(dst []int64, scale float64) bool {
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
	if w := uint(s.tab[0].w); s.fixed && w <= 56 && s.order == 1 {
		// The common sequences (a gauge's steps, a counter's increments,
		// jittered timestamps): one bucket, order 1. s.d is not kept: in
		// order 1 only the no-bits path reads it, and that path is taken
		// for every batch of a sequence or for none.
		var ok bool
		cv := convOf(scale)
		if s.zzShift != 0 {
			s.x, ok = fixedZigzag(dst, &s.r, w, s.x, cv, scale)
		} else {
			s.x, ok = fixedOffset(dst, &s.r, w, s.x, s.off, cv, scale)
		}
		return ok
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

// How a decoded integer m becomes a value: as it is (ints, timestamps), as
// float64(m) (a decimal of scale 10^0: whole numbers held in floats, such
// as Prometheus' counters, where dividing by 1 changes nothing), or as
// float64(m)/10^k.
const (
	convNone = iota
	convFloat
	convDiv
)

func convOf(scale float64) int {
	switch scale {
	case 0:
		return convNone
	case 1:
		return convFloat
	}
	return convDiv
}

// fixedZigzag decodes len(dst) integers of an order-1 sequence of w-bit
// zig-zag residuals (one bucket, w in 1..56) from r, continuing from x,
// converted as cv says; it returns the last integer, and false if the
// stream ends too soon (r then stands where the short residual starts).
// It and fixedOffset are seqDec.decode's general loop specialized, in
// functions of their own, so that the loops' state stays in registers
// (the general one spills, and holds the mapping and the order in
// registers too): a refill leaves at least 56 bits, 56/w residuals, which
// the inner loop takes without checking for bits.
//
//go:noinline
func fixedZigzag(dst []int64, r *bitReader, w uint, x int64, cv int, scale float64) (int64, bool) {
	w &= 63
	rs := (64 - w) & 63
	per := int(56 / w)
	for len(dst) > 0 {
		k := min(per, len(dst))
		if r.n < 56 && len(r.b)-r.p >= 8 {
			r.buf |= binary.BigEndian.Uint64(r.b[r.p:]) >> (r.n & 63)
			r.p += int((63 - r.n) >> 3)
			r.n |= 56
		} else if uint(k)*w > r.n {
			var ok bool
			if k, ok = r.fields(per, len(dst), w); !ok {
				return x, false
			}
		}
		buf, blk := r.buf, dst[:k]
		switch cv {
		case convDiv:
			for j := range blk {
				u := buf >> rs
				buf <<= w
				x += int64(u>>1) ^ -int64(u&1)
				blk[j] = int64(math.Float64bits(float64(x) / scale))
			}
		case convNone:
			for j := range blk {
				u := buf >> rs
				buf <<= w
				x += int64(u>>1) ^ -int64(u&1)
				blk[j] = x
			}
		default:
			for j := range blk {
				u := buf >> rs
				buf <<= w
				x += int64(u>>1) ^ -int64(u&1)
				blk[j] = int64(math.Float64bits(float64(x)))
			}
		}
		r.buf = buf
		r.n -= uint(k) * w
		dst = dst[k:]
	}
	r.cut()
	return x, true
}

// fixedOffset is fixedZigzag for residuals in offset mode: u + off.
//
//go:noinline
func fixedOffset(dst []int64, r *bitReader, w uint, x, off int64, cv int, scale float64) (int64, bool) {
	w &= 63
	rs := (64 - w) & 63
	per := int(56 / w)
	for len(dst) > 0 {
		k := min(per, len(dst))
		if r.n < 56 && len(r.b)-r.p >= 8 {
			r.buf |= binary.BigEndian.Uint64(r.b[r.p:]) >> (r.n & 63)
			r.p += int((63 - r.n) >> 3)
			r.n |= 56
		} else if uint(k)*w > r.n {
			var ok bool
			if k, ok = r.fields(per, len(dst), w); !ok {
				return x, false
			}
		}
		buf, blk := r.buf, dst[:k]
		switch cv {
		case convDiv:
			for j := range blk {
				u := buf >> rs
				buf <<= w
				x += int64(u) + off
				blk[j] = int64(math.Float64bits(float64(x) / scale))
			}
		case convNone:
			for j := range blk {
				u := buf >> rs
				buf <<= w
				x += int64(u) + off
				blk[j] = x
			}
		default:
			for j := range blk {
				u := buf >> rs
				buf <<= w
				x += int64(u) + off
				blk[j] = int64(math.Float64bits(float64(x)))
			}
		}
		r.buf = buf
		r.n -= uint(k) * w
		dst = dst[k:]
	}
	r.cut()
	return x, true
}

// fields cuts r.b (see cut), refills r and returns how many w-bit fields, up to per (56/w)
// and to want, its buffer now holds: per, unless the stream ends sooner.
// It reports false when not even one is left.
func (r *bitReader) fields(per, want int, w uint) (int, bool) {
	r.cut()
	if r.n < 56 {
		r.refill()
	}
	k := min(per, want)
	if uint(k)*w > r.n { // the stream's end: fewer than 56 bits
		k = int(r.n / w)
	}
	return k, k > 0
}

// Next advances to the next point and reports whether there is one. It
// returns false at the end of the chunk and on corrupt data; Err tells
// which.
func (it *Iterator) Next() bool {
	if it.pos+1 < it.n {
		it.pos++
		return true
	}
	return it.fill()
}

// fill decodes the next batch of points into the buffers.
func (it *Iterator) fill() bool {
	if it.done || it.err != nil || it.count == 0 {
		return false
	}
	k := min(it.count-it.decoded, batch)
	if k == 0 {
		return it.finish()
	}
	first := it.decoded == 0
	it.decoded += k

	// Timestamps: decode the offsets, check they increase inside the
	// hour, add the base.
	ts := it.tbuf[:k]
	if !it.ts.decode(ts, 0) {
		return it.fail(it.ts.r.offset(), "truncated timestamp stream")
	}
	// The sequence's first integer is base+offset (see reset): ts holds
	// timestamps, and the checks subtract the base.
	base, prev := it.base, it.prevOff
	if s := &it.ts; s.noBits && (s.keep == 0 || s.off == 0) {
		// Every step is s.d (a regular scrape): check the ends and the step.
		first, last := ts[0]-base, ts[k-1]-base
		if uint64(first) >= HourMillis || first <= prev || uint64(last) >= HourMillis ||
			k > 1 && (s.d <= 0 || s.d >= HourMillis) {
			return it.fail(it.ts.r.offset(), "timestamps not increasing or outside the hour")
		}
		prev = last
	} else {
		var hi uint64
		minD := int64(1)
		for _, t := range ts {
			x := t - base
			hi = max(hi, uint64(x))
			minD = min(minD, x-prev)
			prev = x
		}
		if hi >= HourMillis || minD <= 0 {
			return it.fail(it.ts.r.offset(), "timestamps not increasing or outside the hour")
		}
	}
	it.prevOff = prev

	// Values.
	vs := it.vbuf[:k]
	switch it.enc {
	case encInt, encDecimal: // it.scale is 0 for int
		if !it.vs.decode(vs, it.scale) {
			return it.fail(it.vs.r.offset(), "truncated value stream")
		}
	case encXOR, encMixed:
		if !it.decodeXOR(vs, first) {
			return it.fail(it.vs.r.offset(), "truncated or bad xor value")
		}
	case encMixedDecimal:
		kinds, ok := it.kindBatch(it.decoded-k, k)
		if !ok {
			return it.fail(it.km.offset(), "truncated or bad kind map")
		}
		it.kinds = kinds
		if bits.OnesCount64(kinds) <= fewInts {
			// Mostly floats: decode them all as floats (the division
			// overlaps the integer work), then turn the few ints back;
			// if one will not come back exactly, decode the batch again
			// the long way.
			saved := it.vs
			if !it.vs.decode(vs, it.scale) {
				return it.fail(it.vs.r.offset(), "truncated value stream")
			}
			if floatsToInts(vs, kinds, it.scale, it.iscale) {
				break
			}
			it.vs = saved
		}
		if !it.vs.decode(vs, 0) {
			return it.fail(it.vs.r.offset(), "truncated value stream")
		}
		if !it.mixedValues(vs, kinds) {
			return it.fail(it.vs.r.offset(), "int mantissa not a multiple of 10^k")
		}
	}
	it.n, it.pos = k, 0
	return true
}

// decodeXOR decodes the next len(dst) Gorilla XOR values into dst; in a
// mixed chunk it sets it.kinds too. The bit reader's state and the XOR
// window are held in locals for the loop (as in seqDec.decode) and stored
// back on every return, a failed one included, so error offsets are those
// of the bit at which the stream went wrong.
func (it *Iterator) decodeXOR(dst []int64, first bool) bool {
	r := &it.vs.r
	mixed := it.enc == encMixed
	var kinds uint64
	i := 0
	if first && len(dst) > 0 && r.n == 0 && len(r.b) >= 9 {
		// The first value is 64 bits as they are: the stream's first
		// eight bytes, or in a mixed chunk the 64 bits after its kind
		// bit, whose byte's other 7 bits stay in buf.
		b := r.b
		v := binary.BigEndian.Uint64(b)
		r.b = b[8:]
		if mixed {
			kinds = uint64(b[0] >> 7)
			v = v<<1 | uint64(b[8]>>7)
			r.buf, r.n, r.b = uint64(b[8])<<57, 7, b[9:]
		}
		it.xv = v
		dst[0] = int64(v)
		i = 1
	} else if first && len(dst) > 0 {
		// The first value is 64 bits as they are.
		if r.n < 56 {
			r.refill()
		}
		if mixed {
			if r.n == 0 {
				return false
			}
			kinds = r.buf >> 63
			r.buf <<= 1
			r.n--
		}
		v, ok := r.read(64)
		if !ok {
			return false
		}
		it.xv = v
		dst[0] = int64(v)
		i = 1
	}
	buf, n, b := r.buf, r.n, r.b
	xv, lead, trail := it.xv, it.lead, it.trail
	ok := true
	for ; i < len(dst); i++ {
		if n < 56 {
			if len(b) >= 8 {
				buf |= binary.BigEndian.Uint64(b) >> (n & 63)
				b = b[(63-n)>>3:]
				n |= 56
			} else {
				r.buf, r.n, r.b = buf, n, b
				r.refill()
				buf, n, b = r.buf, r.n, r.b
			}
		}
		if mixed {
			if n == 0 {
				ok = false
				break
			}
			kinds |= buf >> 63 << (uint(i) & 63)
			buf <<= 1
			n--
		}
		if n == 0 {
			ok = false
			break
		}
		if buf>>63 == 0 { // 0: unchanged
			buf <<= 1
			n--
			dst[i] = int64(xv)
			continue
		}
		if n < 2 {
			ok = false
			break
		}
		if buf>>62 == 0b11 { // 11: a new window
			if n < 13 {
				ok = false
				break
			}
			l := uint8(buf >> 57 & 31)
			sig := uint8(buf >> 51 & 63)
			buf <<= 13
			n -= 13
			if sig == 0 {
				sig = 64
			}
			if l+sig > 64 {
				ok = false
				break
			}
			lead, trail = l, 64-l-sig
		} else { // 10: the current window
			buf <<= 2
			n -= 2
		}
		// sig is 1..64 and trail 0..63; below, sig <= n <= 63. The
		// masked shifts say so, and spare a check each.
		sig := uint(64 - lead - trail)
		var x uint64
		if sig > n && len(b) >= 8 {
			// The bits run past the buffer: refill (a two-decimal
			// gauge's values differ in 40-50 bits, so this is common).
			buf |= binary.BigEndian.Uint64(b) >> (n & 63)
			b = b[(63-n)>>3:]
			n |= 56
		}
		if sig <= n {
			x = buf >> ((64 - sig) & 63)
			buf <<= sig & 63
			n -= sig
		} else {
			r.buf, r.n, r.b = buf, n, b
			x, ok = r.read(sig)
			buf, n, b = r.buf, r.n, r.b
			if !ok {
				break
			}
		}
		xv ^= x << (trail & 63)
		dst[i] = int64(xv)
	}
	r.buf, r.n, r.b = buf, n, b
	it.xv, it.lead, it.trail = xv, lead, trail
	if ok && mixed {
		it.kinds = kinds
	}
	return ok
}

// finish ends the iteration; it checks that the chunk has nothing left over.
func (it *Iterator) finish() bool {
	it.done = true
	if !it.ts.r.rest() {
		return it.fail(it.ts.r.offset(), "trailing bits in timestamp stream")
	}
	if !it.vs.r.rest() { // empty for constants
		return it.fail(it.vs.r.offset(), "trailing bits in value stream")
	}
	if !it.km.rest() { // empty but for mixed-decimal
		return it.fail(it.km.offset(), "trailing bits in kind map")
	}
	return false
}

func (it *Iterator) fail(off int, reason string) bool {
	it.err = corrupt(off, reason)
	it.n, it.pos = 0, 0
	it.done = true
	return false
}

// At returns the current point's timestamp and value. It is valid after
// Next or Seek returned true.
func (it *Iterator) At() (int64, Value) {
	p := it.pos & (batch - 1)
	return it.tbuf[p], Value{bits: uint64(it.vbuf[p]), isInt: it.kinds>>p&1 != 0}
}

// Seek advances to the first point whose timestamp is t or later and
// reports whether there is one. It never moves backward: if the current
// point is already at t or later, Seek stays there.
func (it *Iterator) SeekTo(t int64) bool {
	if it.done || it.count == 0 {
		return false
	}
	if it.n > 0 && it.tbuf[it.pos&(batch-1)] >= t {
		return true
	}
	if t >= it.base+HourMillis {
		// Past the hour: no point can match.
		it.done, it.n, it.pos = true, 0, 0
		return false
	}
	for {
		if it.n > 0 && it.tbuf[it.n-1] < t {
			it.pos = it.n - 1 // skip the rest of this batch
		}
		if !it.Next() {
			return false
		}
		if it.tbuf[it.pos&(batch-1)] >= t {
			return true
		}
	}
}

// Peek returns the number of points of chunk b, of the row whose base
// hour is base, and its first point's timestamp, from its header: it
// decodes nothing else and checks only what it reads (Reset checks the
// rest of the header, the iteration the points). Errors are
// *CorruptionError.
func Peek(b []byte, base int64) (count int, first int64, err error) {
	var ts seqDec
	c, _, err := leadingHeader(b, base, &ts)
	if err != nil {
		return 0, 0, err
	}
	return int(c), base + ts.x, nil
}

// CountRange returns the number of points of chunk b, of the row whose
// base hour is base, with a timestamp in [start, end], and its first
// point's timestamp. It decodes the timestamps only, not the values, and
// none of them when they are evenly spaced (a regular scrape): the count
// is then worked out from the first timestamp and the step. It checks what
// it reads: the leading header and, when it decodes them, that the
// timestamps are inside the hour and increasing; the value stream is left
// to the Iterator. On a chunk that decodes cleanly it agrees with counting
// the Iterator's points. Errors are *CorruptionError.
func CountRange(b []byte, base, start, end int64) (k int, first int64, err error) {
	var ts seqDec
	count, off, err := leadingHeader(b, base, &ts)
	if err != nil {
		return 0, 0, err
	}
	first = base + ts.x
	tsLen, n := binary.Uvarint(b[off:])
	if n <= 0 || tsLen > uint64(len(b)-off-n) {
		return 0, 0, corrupt(off, "bad timestamp stream length")
	}
	off += n
	stop := off + int(tsLen)
	if start > end {
		return 0, first, nil
	}
	c := int64(count)
	if ts.noBits && (ts.keep == 0 || ts.off == 0) {
		// Every step is the same: off for order 1, the first delta for
		// order 2 (see seqDec.decode).
		d := ts.off
		if ts.order == 2 {
			d = ts.d1
		}
		if c == 1 {
			d = 1 // no step is taken
		}
		if d > 0 && d < HourMillis && ts.x+(c-1)*d < HourMillis {
			last := first + (c-1)*d
			if end < first || start > last {
				return 0, first, nil
			}
			lo, hi := int64(0), c-1
			if start > first {
				lo = (start - first + d - 1) / d
			}
			if end < last {
				hi = (end - first) / d
			}
			return int(max(hi-lo+1, 0)), first, nil
		}
		// A step the Iterator would refuse: counted below, where the
		// check fails as it does there.
	}
	ts.x = first // the sequence decodes to timestamps, as in Iterator.reset
	ts.r.reset(b[off:stop], stop)
	var buf [batch]int64
	prev := int64(-1) // offset from base of the last timestamp
	for left := int(c); left > 0; {
		dst := buf[:min(left, batch)]
		left -= len(dst)
		if !ts.decode(dst, 0) {
			return 0, 0, corrupt(ts.r.offset(), "truncated timestamp stream")
		}
		for _, t := range dst {
			if x := t - base; uint64(x) >= HourMillis || x <= prev {
				return 0, 0, corrupt(ts.r.offset(), "timestamps not increasing or outside the hour")
			} else {
				prev = x
			}
			if t >= start && t <= end {
				k++
			}
		}
	}
	return k, first, nil
}

// leadingHeader checks the base and the chunk's version and encoding, and
// reads its point count and the header of its timestamp sequence into ts
// (ts.x the first point's offset from base, checked to be inside the
// hour); it returns the count and the offset after that header.
func leadingHeader(b []byte, base int64, ts *seqDec) (uint64, int, error) {
	if base%HourMillis != 0 || base > math.MaxInt64-HourMillis {
		return 0, 0, corrupt(0, "base "+strconv.FormatInt(base, 10)+" is not a whole hour")
	}
	if len(b) < 2 {
		return 0, 0, corrupt(len(b), "truncated header")
	}
	if b[0] != formatVersion {
		return 0, 0, corrupt(0, "unknown format version "+strconv.Itoa(int(b[0])))
	}
	if enc := encoding(b[1]); enc == 0 || enc > encLast {
		return 0, 0, corrupt(1, "unknown value encoding "+strconv.Itoa(int(b[1])))
	}
	off := 2
	count, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, 0, corrupt(off, "bad point count")
	}
	if count == 0 || count > MaxPoints {
		return 0, 0, corrupt(off, "point count "+strconv.FormatUint(count, 10)+" out of range")
	}
	off += n
	seq := off
	off, err := ts.header(b, off, int(count), true)
	if err != nil {
		return 0, 0, err
	}
	if uint64(ts.x) >= HourMillis {
		return 0, 0, corrupt(seq, "first timestamp outside the hour")
	}
	return count, off, nil
}

// First returns the timestamp of the chunk's first point, which the header
// holds: it decodes nothing. It is valid after Reset returned nil, whatever
// the position; the later points are checked to follow it as they decode.
func (it *Iterator) First() int64 { return it.first }

// Err returns the error that ended the iteration, or nil.
func (it *Iterator) Err() error { return it.err }

// Len returns the number of points in the chunk, as its header says.
func (it *Iterator) Len() int { return it.count }

// Decode appends the points of chunk b, of the row whose base hour is base,
// to dst and returns the extended slice. On an error it returns dst
// unchanged and a *CorruptionError.
func Decode(dst []Point, b []byte, base int64) ([]Point, error) {
	var it Iterator
	return it.Decode(dst, b, base)
}

// Decode is the function Decode through it: many chunks decoded one after
// another through one Iterator zero no new one (over a kilobyte) per chunk,
// a cost that counts for small chunks (the head's frozen blocks of 32
// points). A chunk of the shapes AppendFast writes for ints or decimals
// decodes in one loop of its own (decodeRegular), without it. Afterwards
// it must be Reset before any other use.
func (it *Iterator) Decode(dst []Point, b []byte, base int64) ([]Point, error) {
	if out, ok := decodeRegular(dst, b, base); ok {
		return out, nil
	}
	if err := it.Reset(b, base); err != nil {
		return dst, err
	}
	n := len(dst)
	if cap(dst)-n < it.count {
		grown := make([]Point, n, n+it.count)
		copy(grown, dst)
		dst = grown
	}
	for it.fill() {
		k, kinds := it.n, it.kinds
		m := len(dst)
		dst = dst[:m+k] // the capacity is there: fill decodes no more than count
		out := dst[m:]
		for i, t := range it.tbuf[:len(out)] {
			out[i] = Point{T: t, V: Value{bits: uint64(it.vbuf[i]), isInt: kinds>>(uint(i)&63)&1 != 0}}
		}
		it.pos = k - 1
	}
	if it.err != nil {
		return dst[:n], it.err
	}
	return dst, nil
}
