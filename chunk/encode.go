package chunk

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Append appends one chunk holding pts to dst and returns the extended
// slice. base is the row's base hour in Unix milliseconds, a multiple of
// HourMillis. pts must hold 1 to MaxPoints points with strictly increasing
// timestamps, all in [base, base+HourMillis); otherwise Append returns an
// error wrapping ErrInvalidPoints and dst unchanged.
//
// Append picks, for this chunk, the value encoding and the stream
// parameters that make the chunk smallest. It allocates nothing when dst
// has room for the chunk.
func Append(dst []byte, base int64, pts []Point) ([]byte, error) {
	return appendChunk(dst, base, pts, 0)
}

// AppendFast is Append without the search for the smallest encoding, for
// chunks that live briefly, such as the head's frozen blocks: ints and
// decimals (a gauge's short decimals, whole numbers held in floats) are
// written as an int or decimal chunk whose value sequence takes no
// planning, order-1 zig-zag steps in one bucket as wide as the widest
// (about 1.3 bytes a point for a two-decimal gauge, and the shape that
// decodes fastest, decodeRegular); other floats, and ints and floats
// together, as Gorilla XOR (mixed XOR with ints among them), about 7 bytes
// a point. The timestamps are planned as Append plans them. The result
// decodes with Decode like any chunk.
func AppendFast(dst []byte, base int64, pts []Point) ([]byte, error) {
	if err := checkPoints(base, pts); err != nil {
		return dst, err
	}
	allInt, allFloat := true, true
	for _, p := range pts {
		if p.V.isInt {
			allFloat = false
		} else {
			allInt = false
		}
	}
	switch {
	case allInt:
		return appendSteps(dst, base, pts, seqSource{pts: pts, kind: srcInt}), nil
	case !allFloat:
		return appendChunk(dst, base, pts, encMixed)
	}
	if k, ok := decimalScale(pts); ok {
		return appendSteps(dst, base, pts, seqSource{pts: pts, kind: srcDecimal, scale: k}), nil
	}
	return appendChunk(dst, base, pts, encXOR)
}

// appendTimes writes the timestamp section of pts without planning:
// evenly spaced ones (a regular scrape) as an order-2 sequence of one
// bucket of width 0, the shape decodeRegular reads; others (a jittered
// scrape) as an order-1 sequence in offset mode, one bucket as wide as the
// steps' range. For a block of a few dozen points either is about as
// short as the plan Append makes, at a fraction of its cost.
func appendTimes(dst []byte, base int64, pts []Point) []byte {
	x0 := uint64(pts[0].T - base)
	if len(pts) == 1 {
		return append(binary.AppendUvarint(append(dst, 0, 0), x0), 0)
	}
	lo, hi := pts[1].T-pts[0].T, pts[1].T-pts[0].T
	for i := 2; i < len(pts); i++ {
		d := pts[i].T - pts[i-1].T
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo == hi {
		dst = append(dst, descOrder2, 0)
		dst = binary.AppendUvarint(dst, x0)
		dst = binary.AppendUvarint(dst, uint64(lo))
		return append(dst, 0) // no residual bits
	}
	w := width(uint64(hi - lo))
	dst = append(dst, descOffset, w)
	dst = binary.AppendVarint(dst, lo)
	dst = binary.AppendUvarint(dst, x0)
	dst = binary.AppendUvarint(dst, (uint64(w)*uint64(len(pts)-1)+7)/8)
	bw := bitWriter{dst: dst}
	for i := 1; i < len(pts); i++ {
		bw.write(uint64(pts[i].T-pts[i-1].T-lo), uint(w))
	}
	return bw.flush()
}

// appendSteps writes pts, valid, as an int chunk (src of kind srcInt) or a
// decimal one (srcDecimal), the values as one bucket of order-1 zig-zag
// residuals as wide as the widest.
func appendSteps(dst []byte, base int64, pts []Point, src seqSource) []byte {
	enc := encInt
	if src.kind == srcDecimal {
		enc = encDecimal
	}
	dst = append(dst, formatVersion, byte(enc))
	dst = binary.AppendUvarint(dst, uint64(len(pts)))
	dst = appendTimes(dst, base, pts)
	if enc == encDecimal {
		dst = append(dst, byte(src.scale))
	}
	// The integers, the widest step, then the steps.
	var buf [encBatch]int64
	xs := buf[:]
	if len(pts) > encBatch {
		xs = make([]int64, len(pts))
	}
	xs = xs[:len(pts)]
	src.fill(xs, 0)
	var or uint64
	for i := 1; i < len(xs); i++ {
		or |= zigzag(xs[i] - xs[i-1])
	}
	w := width(or)
	dst = append(dst, 0, w) // order 1, one bucket, zig-zag
	dst = binary.AppendVarint(dst, xs[0])
	bw := bitWriter{dst: dst}
	for i := 1; i < len(xs); i++ {
		bw.write(zigzag(xs[i]-xs[i-1]), uint(w))
	}
	return bw.flush()
}

// appendChunk is Append with the value encoding forced to force, which
// must suit pts; force 0 lets the encoder choose. Benchmarks and tests use
// it to compare encodings.
func appendChunk(dst []byte, base int64, pts []Point, force encoding) ([]byte, error) {
	if err := checkPoints(base, pts); err != nil {
		return dst, err
	}
	allInt, allFloat, same := true, true, true
	first := pts[0].V
	for _, p := range pts {
		if p.V.isInt {
			allFloat = false
		} else {
			allInt = false
		}
		same = same && p.V == first
	}

	enc := force
	var vals seqPlan
	var src seqSource
	var kinds kindMap
	if enc == 0 {
		switch {
		case same && first.isInt:
			enc = encConstInt
		case same:
			enc = encConstFloat
			if k, ok := decimalScale(pts[:1]); ok {
				m, _ := isDecimal(first.bits, k)
				if 1+varintLen(m) < 8 {
					enc = encConstDecimal
				}
			}
		case allInt:
			enc = encInt
			src = seqSource{pts: pts, kind: srcInt}
			vals = src.plan()
			if ib := src.sectionBits(&vals); xorBits(pts, true, ib) < ib {
				enc = encMixed // rare: ints whose bits differ little but whose deltas are wide
			}
		case allFloat:
			enc = encXOR
			if k, ok := decimalScale(pts); ok {
				src = seqSource{pts: pts, kind: srcDecimal, scale: k}
				vals = src.plan()
				if db := src.sectionBits(&vals); db <= xorBits(pts, false, db) {
					enc = encDecimal
				}
			}
		default:
			enc = encMixed
			if k, ok := mixedDecimalScale(pts); ok {
				src = seqSource{pts: pts, kind: srcMixedDecimal, scale: k}
				vals = src.plan()
				kinds = planKinds(pts)
				mb := src.sectionBits(&vals) + 8*uint64(kinds.size())
				if mb <= (xorBits(pts, true, mb)+7)/8*8 {
					enc = encMixedDecimal
				}
			}
		}
	}
	misfit := func() error { return fmt.Errorf("%w: encoding %s does not fit", ErrInvalidPoints, enc) }
	switch enc {
	case encConstInt, encConstFloat, encConstDecimal:
		if !same || first.isInt != (enc == encConstInt) {
			return dst, misfit()
		}
		if enc == encConstDecimal {
			if _, ok := decimalScale(pts[:1]); !ok {
				return dst, misfit()
			}
		}
	case encInt:
		if !allInt {
			return dst, misfit()
		}
		if src.kind != srcInt {
			src = seqSource{pts: pts, kind: srcInt}
			vals = src.plan()
		}
	case encDecimal:
		if src.kind != srcDecimal {
			k, ok := decimalScale(pts)
			if !ok || !allFloat {
				return dst, misfit()
			}
			src = seqSource{pts: pts, kind: srcDecimal, scale: k}
			vals = src.plan()
		}
	case encXOR:
		if !allFloat {
			return dst, misfit()
		}
	case encMixed:
	case encMixedDecimal:
		if src.kind != srcMixedDecimal {
			k, ok := mixedDecimalScale(pts)
			if !ok {
				return dst, misfit()
			}
			src = seqSource{pts: pts, kind: srcMixedDecimal, scale: k}
			vals = src.plan()
			kinds = planKinds(pts)
		}
	default:
		return dst, fmt.Errorf("%w: unknown encoding %d", ErrInvalidPoints, enc)
	}

	dst = append(dst, formatVersion, byte(enc))
	dst = binary.AppendUvarint(dst, uint64(len(pts)))
	ts := seqSource{pts: pts, kind: srcTime, base: base}
	tsPlan := ts.plan()
	dst = ts.appendSeq(dst, &tsPlan, true)

	switch enc {
	case encConstInt:
		dst = binary.AppendVarint(dst, int64(first.bits))
	case encConstFloat:
		dst = binary.BigEndian.AppendUint64(dst, first.bits)
	case encConstDecimal:
		k, _ := decimalScale(pts[:1])
		m, _ := isDecimal(first.bits, k)
		dst = append(dst, byte(k))
		dst = binary.AppendVarint(dst, m)
	case encInt:
		dst = src.appendSeq(dst, &vals, false)
	case encDecimal:
		dst = append(dst, byte(src.scale))
		dst = src.appendSeq(dst, &vals, false)
	case encMixedDecimal:
		dst = append(dst, byte(src.scale))
		dst = kinds.appendMap(dst, pts)
		dst = src.appendSeq(dst, &vals, false)
	case encXOR, encMixed:
		// Room for the whole stream first (its exact bits, and the word
		// the writer may append past them): grown by append from the
		// flusher's nil, a chunk of full-precision floats allocated three
		// times its size.
		dst = slices.Grow(dst, int((xorBits(pts, enc == encMixed, math.MaxUint64)+7)/8)+8)
		w := bitWriter{dst: dst}
		appendXOR(&w, pts, enc == encMixed)
		dst = w.flush()
	}
	return dst, nil
}

func checkPoints(base int64, pts []Point) error {
	if base%HourMillis != 0 || base > math.MaxInt64-HourMillis {
		return fmt.Errorf("%w: base %d is not a whole hour in unix milliseconds", ErrInvalidPoints, base)
	}
	if len(pts) == 0 {
		return fmt.Errorf("%w: no points", ErrInvalidPoints)
	}
	if len(pts) > MaxPoints {
		return fmt.Errorf("%w: %d points, more than the %d a chunk holds", ErrInvalidPoints, len(pts), MaxPoints)
	}
	end := base + HourMillis
	prev := int64(math.MinInt64)
	for i, p := range pts {
		if p.T < base || p.T >= end {
			return fmt.Errorf("%w: point %d: timestamp %d is outside the hour [%d, %d)", ErrInvalidPoints, i, p.T, base, end)
		}
		if p.T <= prev {
			return fmt.Errorf("%w: point %d: timestamp %d is not after the previous one, %d", ErrInvalidPoints, i, p.T, prev)
		}
		prev = p.T
	}
	return nil
}

// encBatch is how many integers the encoder gathers at a time.
const encBatch = 128

// seqSource yields the integers of a residual sequence, in batches.
type seqSource struct {
	pts   []Point
	kind  uint8
	base  int64 // srcTime: the integers are offsets from base
	scale int   // srcDecimal, srcMixedDecimal: the integers are mantissas over 10^scale
}

const (
	srcTime         = 1 // timestamps
	srcInt          = 2 // int values
	srcDecimal      = 3 // decimal float values (checked by decimalScale)
	srcMixedDecimal = 4 // ints and decimal floats (checked by mixedDecimalScale)
)

// fill sets dst to the integers from index from on.
func (s *seqSource) fill(dst []int64, from int) {
	pts := s.pts[from : from+len(dst)]
	switch s.kind {
	case srcTime:
		for i := range pts {
			dst[i] = pts[i].T - s.base
		}
	case srcInt:
		for i := range pts {
			dst[i] = int64(pts[i].V.bits)
		}
	case srcDecimal:
		p := pow10[s.scale]
		for i := range pts {
			dst[i] = int64(math.Round(math.Float64frombits(pts[i].V.bits) * p))
		}
	case srcMixedDecimal:
		p := pow10[s.scale]
		var ip int64 // 10^scale; 0 beyond int64, where every int is 0
		if s.scale < len(ipow10) {
			ip = ipow10[s.scale]
		}
		for i := range pts {
			if v := pts[i].V; v.isInt {
				dst[i] = int64(v.bits) * ip
			} else {
				dst[i] = int64(math.Round(math.Float64frombits(v.bits) * p))
			}
		}
	}
}

// at returns the integer at index i, or the last one past the end.
func (s *seqSource) at(i int) int64 {
	var x [1]int64
	s.fill(x[:], min(i, len(s.pts)-1))
	return x[0]
}

// plan returns the cheapest way to write the sequence.
func (s *seqSource) plan() seqPlan {
	var h seqHist
	var buf [encBatch]int64
	for i := 0; i < len(s.pts); i += encBatch {
		xs := buf[:min(encBatch, len(s.pts)-i)]
		s.fill(xs, i)
		h.addBatch(xs)
	}
	return h.plan(s.kind == srcTime)
}

// appendSeq writes the sequence as planned: the header, for timestamps
// (unsigned) the byte length of the bit stream, then the bits.
func (s *seqSource) appendSeq(dst []byte, p *seqPlan, unsigned bool) []byte {
	dst = p.appendHeader(dst, s.at(0), s.at(1), unsigned)
	if unsigned {
		dst = binary.AppendUvarint(dst, (p.bits+7)/8)
	}
	sw := seqWriter{w: bitWriter{dst: dst}}
	sw.init(p)
	var buf [encBatch]int64
	for i := 0; i < len(s.pts); i += encBatch {
		xs := buf[:min(encBatch, len(s.pts)-i)]
		s.fill(xs, i)
		sw.addBatch(xs)
	}
	return sw.w.flush()
}

// sectionBits returns the length in bits of a value section written as p:
// the decimal scale byte, the sequence header and the bits (a
// mixed-decimal chunk's kind map not included).
func (s *seqSource) sectionBits(p *seqPlan) uint64 {
	var buf [32]byte
	head := p.appendHeader(buf[:0], s.at(0), s.at(1), false)
	n := uint64(len(head))
	if s.kind == srcDecimal || s.kind == srcMixedDecimal {
		n++
	}
	return 8*n + (p.bits+7)/8*8
}

// hist counts residuals by the bits their zig-zag encoding needs.
type hist [65]uint32

// seqHist gathers, in one pass, what planning a sequence needs for both
// orders: the histogram of zig-zag residual widths, and the range of the
// residuals for offset mode.
type seqHist struct {
	h1, h2      hist
	lo1, hi1    int64
	lo2, hi2    int64
	prev, prevD int64
	d1          int64 // x1 - x0
	i           int
}

func (s *seqHist) addBatch(xs []int64) {
	for ; len(xs) > 0 && s.i < 3; xs = xs[1:] {
		x := xs[0]
		d := x - s.prev
		switch s.i {
		case 1:
			s.h1[width(zigzag(d))]++
			s.lo1, s.hi1 = d, d
			s.d1 = d
		case 2:
			s.h1[width(zigzag(d))]++
			s.lo1, s.hi1 = min(s.lo1, d), max(s.hi1, d)
			dd := d - s.prevD
			s.h2[width(zigzag(dd))]++
			s.lo2, s.hi2 = dd, dd
		}
		s.prev, s.prevD = x, d
		s.i++
	}
	prev, prevD := s.prev, s.prevD
	lo1, hi1, lo2, hi2 := s.lo1, s.hi1, s.lo2, s.hi2
	h1, h2 := &s.h1, &s.h2
	for _, x := range xs {
		d := x - prev
		dd := d - prevD
		h1[width(zigzag(d))]++
		h2[width(zigzag(dd))]++
		lo1, hi1 = min(lo1, d), max(hi1, d)
		lo2, hi2 = min(lo2, dd), max(hi2, dd)
		prev, prevD = x, d
	}
	s.prev, s.prevD = prev, prevD
	s.lo1, s.hi1, s.lo2, s.hi2 = lo1, hi1, lo2, hi2
	s.i += len(xs)
}

// plan returns the cheapest way to write the sequence addBatch saw,
// counting what each way adds to the header (unsigned: the header's
// integers are uvarints). Offset mode is planned with one bucket as wide
// as the residuals' range needs.
func (s *seqHist) plan(unsigned bool) seqPlan {
	best := planBuckets(&s.h1)
	best.order = 1
	if s.i < 2 {
		return best
	}
	bestCost := best.cost(0)
	try := func(p seqPlan) {
		extra := 0 // order 2 also stores x1 - x0
		if p.order == 2 {
			extra = intLen(s.d1, unsigned)
		}
		if c := p.cost(extra); c < bestCost {
			best, bestCost = p, c
		}
	}
	try(planOffset(1, s.lo1, s.hi1, s.i-1))
	if s.i < 3 {
		return best
	}
	p2 := planBuckets(&s.h2)
	p2.order = 2
	try(p2)
	try(planOffset(2, s.lo2, s.hi2, s.i-2))
	return best
}

func planOffset(order uint8, lo, hi int64, n int) seqPlan {
	w := width(uint64(hi) - uint64(lo))
	return seqPlan{order: order, offset: true, off: lo, n: 1, widths: [4]uint8{w}, bits: uint64(w) * uint64(n)}
}

// seqPlan is how one residual sequence is written.
type seqPlan struct {
	order  uint8 // 1: deltas; 2: deltas of deltas
	offset bool  // offset mode: u = r - off; else u = zigzag(r)
	off    int64
	n      uint8 // buckets, 1..4
	widths [4]uint8
	bits   uint64 // length of the bit stream, prefixes included
}

// cost is the plan's length in bits: the bit stream, the widths, the
// offset, and extra more header bytes.
func (p *seqPlan) cost(extra int) uint64 {
	c := p.bits + 8*uint64(p.n) + 8*uint64(extra)
	if p.offset {
		c += 8 * uint64(varintLen(p.off))
	}
	return c
}

func varintLen(v int64) int { return intLen(v, false) }

// intLen is the length of v as a varint, or as a uvarint if unsigned.
func intLen(v int64, unsigned bool) int {
	var b [binary.MaxVarintLen64]byte
	return len(appendInt(b[:0], v, unsigned))
}

// appendHeader writes the descriptor, the widths, x0 and, for order 2, x1-x0.
func (p *seqPlan) appendHeader(dst []byte, x0, x1 int64, unsigned bool) []byte {
	desc := p.n - 1
	if p.order == 2 {
		desc |= descOrder2
	}
	if p.offset {
		desc |= descOffset
	}
	dst = append(dst, desc)
	dst = append(dst, p.widths[:p.n]...)
	if p.offset {
		dst = binary.AppendVarint(dst, p.off)
	}
	dst = appendInt(dst, x0, unsigned)
	if p.order == 2 {
		dst = appendInt(dst, x1-x0, unsigned)
	}
	return dst
}

func appendInt(dst []byte, v int64, unsigned bool) []byte {
	if unsigned {
		return binary.AppendUvarint(dst, uint64(v))
	}
	return binary.AppendVarint(dst, v)
}

// planBuckets picks the bucket count and widths that write the residuals
// counted in h in the fewest bits, header bytes included. A bucket's best width is always one of
// the widths that occur, so a dynamic program over those (at most 65, in
// practice a handful) finds the optimum for each bucket count.
func planBuckets(h *hist) seqPlan {
	var ws [65]uint8
	var cum [66]uint64
	d := 0
	for w, c := range h {
		if c > 0 {
			ws[d] = uint8(w)
			cum[d+1] = cum[d] + uint64(c)
			d++
		}
	}
	best := seqPlan{n: 1}
	if d == 0 {
		return best
	}
	best.widths[0] = ws[d-1]
	best.bits = uint64(ws[d-1]) * cum[d]
	var f [4][65]uint64
	var from [4][65]uint8
	for n := 2; n <= 4 && n <= d; n++ {
		lens := &prefixLen[n]
		for j := 0; j < d; j++ {
			f[0][j] = uint64(lens[0]+ws[j]) * cum[j+1]
		}
		for i := 1; i < n; i++ {
			c := uint64(lens[i])
			// Bucket i ends at distinct width j; the previous one at k < j.
			for j := i; j < d; j++ {
				per := c + uint64(ws[j])
				bestC, bestK := uint64(math.MaxUint64), 0
				for k := i - 1; k < j; k++ {
					if v := f[i-1][k] + per*(cum[j+1]-cum[k+1]); v < bestC {
						bestC, bestK = v, k
					}
				}
				f[i][j], from[i][j] = bestC, uint8(bestK)
			}
		}
		// Each bucket also costs its width byte in the header.
		if cost := f[n-1][d-1]; cost+8*uint64(n) < best.bits+8*uint64(best.n) {
			best.n, best.bits = uint8(n), cost
			j := d - 1
			for i := n - 1; i >= 0; i-- {
				best.widths[i] = ws[j]
				j = int(from[i][j])
			}
		}
	}
	return best
}

// seqWriter writes the residual bits of a sequence fed in batches.
type seqWriter struct {
	w           bitWriter
	plan        seqPlan
	codes       [65]wcode // how to write a residual, by its width
	prev, prevD int64
	i           int
}

// wcode is the prefix code and the bucket width for residuals of one width.
type wcode struct{ prefix, cl, wd uint8 }

func (s *seqWriter) init(p *seqPlan) {
	s.plan = *p
	b := 0
	for w := range s.codes {
		for b < int(p.n)-1 && uint8(w) > p.widths[b] {
			b++
		}
		s.codes[w] = wcode{prefix: prefixBits[p.n][b], cl: prefixLen[p.n][b], wd: p.widths[b]}
	}
}

func (s *seqWriter) addBatch(xs []int64) {
	order := int(s.plan.order)
	for ; len(xs) > 0 && s.i < order; xs = xs[1:] {
		s.prevD = xs[0] - s.prev
		s.prev = xs[0]
		s.i++
	}
	s.i += len(xs)
	prev, prevD := s.prev, s.prevD
	var keep int64 // the residual is d - prevD&keep: delta of delta, or delta
	if order == 2 {
		keep = -1
	}
	zz, off := true, uint64(0) // u is zig-zag(r), or r - off
	if s.plan.offset {
		zz, off = false, uint64(s.plan.off)
	}
	codes := &s.codes
	acc, an, dst := s.w.acc, s.w.n, s.w.dst
	for _, x := range xs {
		d := x - prev
		r := d - prevD&keep
		prev, prevD = x, d
		u := uint64(r) - off
		if zz {
			u = zigzag(r)
		}
		c := codes[width(u)]
		cl, wd := uint(c.cl), uint(c.wd)
		nb := cl + wd
		if nb > 64 {
			s.w.acc, s.w.n, s.w.dst = acc, an, dst
			s.w.write(uint64(c.prefix), cl)
			s.w.write(u, wd)
			acc, an, dst = s.w.acc, s.w.n, s.w.dst
			continue
		}
		v := uint64(c.prefix)<<wd | u // wd is 64 only without a prefix
		if free := 64 - an; nb < free {
			acc = acc<<nb | v
			an += nb
		} else {
			rem := nb - free
			dst = binary.BigEndian.AppendUint64(dst, acc<<free|v>>rem)
			acc, an = v, rem
		}
	}
	s.w.acc, s.w.n, s.w.dst = acc, an, dst
	s.prev, s.prevD = prev, prevD
}

// isDecimal returns m such that float64(m)/10^k has the bits v, if there is one.
func isDecimal(v uint64, k int) (int64, bool) {
	x := math.Float64frombits(v) * pow10[k]
	if !(x >= -(1<<53) && x <= 1<<53) { // NaN fails too
		return 0, false
	}
	m := int64(math.Round(x))
	return m, math.Float64bits(float64(m)/pow10[k]) == v
}

// decimalScale returns the smallest k such that every float value of pts
// (ints are skipped) is some integer m divided by 10^k, bit for bit:
// float64(m)/10^k gives the value's bits. A value that is m/10^k is mostly
// also (10m)/10^(k+1) (IEEE division rounds the same exact quotient), so
// the chunk's k is the largest of the values' own; when k grows, the
// values already seen are checked again at the new k.
func decimalScale(pts []Point) (int, bool) {
	k := 0
	for i := 0; i < len(pts); i++ {
		if pts[i].V.isInt {
			continue
		}
		if _, ok := isDecimal(pts[i].V.bits, k); ok {
			continue
		}
		for k++; ; k++ {
			if k > maxScale {
				return 0, false
			}
			if _, ok := isDecimal(pts[i].V.bits, k); ok {
				break
			}
		}
		i = -1 // check all again at the new k
	}
	return k, true
}

// mixedDecimalScale returns the scale k of a mixed-decimal chunk of pts:
// the smallest k at which every float is a decimal (decimalScale), if at
// that k every int v has a mantissa v·10^k within an int64. A larger k
// would only make the ints' mantissas larger.
func mixedDecimalScale(pts []Point) (int, bool) {
	k, ok := decimalScale(pts)
	if !ok {
		return 0, false
	}
	for _, p := range pts {
		if p.V.isInt {
			if _, ok := mulPow10(int64(p.V.bits), k); !ok {
				return 0, false
			}
		}
	}
	return k, true
}

// mulPow10 returns v·10^k, and false if it does not fit in an int64.
func mulPow10(v int64, k int) (int64, bool) {
	if k >= len(ipow10) {
		return 0, v == 0
	}
	p := ipow10[k]
	if v > math.MaxInt64/p || v < math.MinInt64/p {
		return 0, false
	}
	return v * p, true
}

// kindMap is how the kind map of a mixed-decimal chunk is written: its
// form and the byte length of what follows its length field.
type kindMap struct {
	form uint8
	len  int
}

// planKinds picks the shortest form of pts' kind map: a bitmap, or the
// list of the ints or of the floats, each listed point as the uvarint
// count of unlisted points since the previous listed one. A list wins on
// the typical chunk, almost all floats with a rare whole value as an int.
// On a tie the int list wins, then the float list.
func planKinds(pts []Point) kindMap {
	var intList, floatList int
	lastInt, lastFloat := -1, -1
	for i, p := range pts {
		if p.V.isInt {
			intList += intLen(int64(i-lastInt-1), true)
			lastInt = i
		} else {
			floatList += intLen(int64(i-lastFloat-1), true)
			lastFloat = i
		}
	}
	km := kindMap{form: kindIntList, len: intList}
	if floatList < km.len {
		km = kindMap{form: kindFloatList, len: floatList}
	}
	if n := (len(pts) + 7) / 8; n < km.len {
		km = kindMap{form: kindBitmap, len: n}
	}
	return km
}

// size is the kind map's length in bytes: the form, the length and the map.
func (k *kindMap) size() int { return 1 + intLen(int64(k.len), true) + k.len }

// appendMap writes the kind map of pts in form k.
func (k *kindMap) appendMap(dst []byte, pts []Point) []byte {
	dst = append(dst, k.form)
	dst = binary.AppendUvarint(dst, uint64(k.len))
	if k.form == kindBitmap {
		w := bitWriter{dst: dst}
		for _, p := range pts {
			w.writeBit(p.V.isInt)
		}
		return w.flush()
	}
	listInts := k.form == kindIntList
	last := -1
	for i, p := range pts {
		if p.V.isInt == listInts {
			dst = binary.AppendUvarint(dst, uint64(i-last-1))
			last = i
		}
	}
	return dst
}

// Gorilla XOR, as Prometheus' chunkenc writes it: each value's bits XOR the
// previous value's; 0 for no change; 10 and the changed bits when they fit
// in the previous window of meaningful bits; 11, 5 bits of leading zeros,
// 6 bits of meaningful bit count (0 for 64) and the meaningful bits
// otherwise. The first value is written whole. In a mixed chunk each value
// is preceded by one bit: 1 for an integer.

type xorState struct {
	prev              uint64
	leading, trailing uint8 // current window; leading 0xff before the first
}

// cost returns the bits needed to write v after the state's value, and
// moves the state on.
func (s *xorState) cost(v uint64) uint64 {
	x := v ^ s.prev
	s.prev = v
	if x == 0 {
		return 1
	}
	lead := uint8(min(bits.LeadingZeros64(x), 31))
	trail := uint8(bits.TrailingZeros64(x))
	if s.leading != 0xff && lead >= s.leading && trail >= s.trailing {
		return 2 + uint64(64-s.leading-s.trailing)
	}
	s.leading, s.trailing = lead, trail
	return 2 + 5 + 6 + uint64(64-lead-trail)
}

func (s *xorState) write(w *bitWriter, v uint64) {
	x := v ^ s.prev
	s.prev = v
	if x == 0 {
		w.write(0, 1)
		return
	}
	lead := uint8(min(bits.LeadingZeros64(x), 31))
	trail := uint8(bits.TrailingZeros64(x))
	if s.leading != 0xff && lead >= s.leading && trail >= s.trailing {
		sig := uint(64 - s.leading - s.trailing)
		w.write(0b10, 2)
		w.write(x>>s.trailing, sig)
		return
	}
	s.leading, s.trailing = lead, trail
	sig := uint(64 - lead - trail)
	w.write(0b11<<11|uint64(lead)<<6|uint64(sig&63), 13)
	w.write(x>>trail, sig)
}

// xorBits returns the length in bits of pts' values written by
// appendXOR, or some length over limit once it is sure to exceed it.
func xorBits(pts []Point, mixed bool, limit uint64) uint64 {
	s := xorState{prev: pts[0].V.bits, leading: 0xff}
	n := uint64(64)
	if mixed {
		n += uint64(len(pts))
	}
	for _, p := range pts[1:] {
		if n += s.cost(p.V.bits); n > limit {
			break
		}
	}
	return n
}

func appendXOR(w *bitWriter, pts []Point, mixed bool) {
	s := xorState{prev: pts[0].V.bits, leading: 0xff}
	if mixed {
		w.writeBit(pts[0].V.isInt)
	}
	w.write(pts[0].V.bits, 64)
	for _, p := range pts[1:] {
		if mixed {
			w.writeBit(p.V.isInt)
		}
		s.write(w, p.V.bits)
	}
}
