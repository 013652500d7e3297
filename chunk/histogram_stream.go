package chunk

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
)

// A histogram chunk's integers (timestamps; counts and bucket counts) are
// written as integer streams: values in slots (one slot per field of a
// sample), each slot predicted from the same slot of the previous samples
// of the same layout run. The residual of a slot at the run's k-th sample
// is the value (k = 0), the delta (k = 1) and then, by the stream's order,
// the delta (order 1) or the delta of delta (order 2). Residuals are
// zig-zag mapped and written with the prefix codes and bucket widths of the
// residual sequences (planBuckets), chosen per stream.
//
// The stream's header is the descriptor byte (bits 0-1 buckets - 1, bit 2
// order 2; the other bits zero), the widths, then the byte length of the
// bit stream as a uvarint.

// intPredictor holds the per-slot state of one stream: the slot's last
// value, its last delta and how many values it has seen (0, 1, 2 or more).
type intPredictor struct {
	prev, prevD []int64
	age         []uint8
}

// reset starts afresh with n slots.
func (p *intPredictor) reset(n int) {
	p.prev, p.prevD, p.age = resize(p.prev, n), resize(p.prevD, n), resize(p.age, n)
}

func resize[T any](s []T, n int) []T {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
}

// remap moves the state to a new layout: slot j takes the state of the old
// slot m[j], or starts afresh where m[j] is -1.
func (p *intPredictor) remap(m []int) {
	prev, prevD, age := make([]int64, len(m)), make([]int64, len(m)), make([]uint8, len(m))
	for j, o := range m {
		if o >= 0 {
			prev[j], prevD[j], age[j] = p.prev[o], p.prevD[o], p.age[o]
		}
	}
	p.prev, p.prevD, p.age = prev, prevD, age
}

// residuals returns the order-1 and order-2 residuals of x in slot j and
// moves the slot on.
func (p *intPredictor) residuals(j int, x int64) (r1, r2 int64) {
	if p.age[j] == 0 {
		p.prev[j], p.age[j] = x, 1
		return x, x
	}
	d := x - p.prev[j]
	r1, r2 = d, d
	if p.age[j] >= 2 {
		r2 = d - p.prevD[j]
	} else {
		p.age[j] = 2
	}
	p.prev[j], p.prevD[j] = x, d
	return r1, r2
}

// value turns a residual of slot j back into its value (the inverse of
// residuals for the given order) and moves the slot on.
func (p *intPredictor) value(j int, r int64, order2 bool) int64 {
	if p.age[j] == 0 {
		p.prev[j], p.age[j] = r, 1
		return r
	}
	d := r
	if order2 && p.age[j] >= 2 {
		d += p.prevD[j]
	}
	p.age[j] = 2
	x := p.prev[j] + d
	p.prev[j], p.prevD[j] = x, d
	return x
}

// slotMap returns, for each slot of layout to, the slot of layout from
// that holds the same bucket, or -1. Count and zero count always map;
// buckets map only when the schema, the zero threshold and the custom
// bounds are the same.
func slotMap(dst []int, from, to *hlayout) []int {
	dst = append(dst[:0], 0, 1)
	same := from.schema == to.schema && from.zt == to.zt && equalFloatBits(from.custom, to.custom)
	fp, _ := from.nbuckets()
	for side, spans := range [2][]histogram.Span{to.pos, to.neg} {
		var idx map[int64]int
		if same {
			idx = map[int64]int{}
			first := 2
			fromSpans := from.pos
			if side == 1 {
				first, fromSpans = 2+fp, from.neg
			}
			eachBucket(fromSpans, func(k int, i int64) { idx[i] = first + k })
		}
		eachBucket(spans, func(_ int, i int64) {
			o, ok := idx[i]
			if !ok {
				o = -1
			}
			dst = append(dst, o)
		})
	}
	return dst
}

// eachBucket calls f with the position and the bucket index of every
// bucket the spans describe.
func eachBucket(spans []histogram.Span, f func(k int, idx int64)) {
	var i int64
	k := 0
	for n, s := range spans {
		if n == 0 {
			i = int64(s.Offset)
		} else {
			i += int64(s.Offset)
		}
		for range s.Length {
			f(k, i)
			k++
			i++
		}
	}
}

func equalFloatBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// streamPlanner counts the residual widths of a stream for both orders.
type streamPlanner struct {
	h1, h2 hist
}

func (s *streamPlanner) add(r1, r2 int64) {
	s.h1[width(zigzag(r1))]++
	s.h2[width(zigzag(r2))]++
}

// plan returns the cheaper of the two orders' plans.
func (s *streamPlanner) plan() seqPlan {
	p1, p2 := planBuckets(&s.h1), planBuckets(&s.h2)
	p1.order, p2.order = 1, 2
	if p2.cost(0) < p1.cost(0) {
		return p2
	}
	return p1
}

// streamWriter writes a stream's residuals as planned.
type streamWriter struct {
	w     bitWriter
	plan  seqPlan
	codes [65]wcode
}

func newStreamWriter(p seqPlan) *streamWriter {
	s := &streamWriter{plan: p}
	b := 0
	for w := range s.codes {
		for b < int(p.n)-1 && uint8(w) > p.widths[b] {
			b++
		}
		s.codes[w] = wcode{prefix: prefixBits[p.n][b], cl: prefixLen[p.n][b], wd: p.widths[b]}
	}
	return s
}

func (s *streamWriter) put(r1, r2 int64) {
	r := r1
	if s.plan.order == 2 {
		r = r2
	}
	u := zigzag(r)
	c := s.codes[width(u)]
	s.w.write(uint64(c.prefix), uint(c.cl))
	s.w.write(u, uint(c.wd))
}

// appendTo appends the stream's header and bits to dst.
func (s *streamWriter) appendTo(dst []byte) []byte {
	body := s.w.flush()
	desc := s.plan.n - 1
	if s.plan.order == 2 {
		desc |= descOrder2
	}
	dst = append(dst, desc)
	dst = append(dst, s.plan.widths[:s.plan.n]...)
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...)
}

// streamReader reads a stream's residuals.
type streamReader struct {
	r      bitReader
	n      int // buckets
	widths [4]uint8
	order2 bool
}

// header reads the stream header at b[off:] and returns the offset after
// the stream's bits.
func (s *streamReader) header(b []byte, off int) (int, error) {
	if off >= len(b) {
		return off, corrupt(off, "truncated stream descriptor")
	}
	desc := b[off]
	if desc&^(descBuckets|descOrder2) != 0 {
		return off, corrupt(off, "bad stream descriptor")
	}
	off++
	s.n = int(desc&descBuckets) + 1
	s.order2 = desc&descOrder2 != 0
	if len(b)-off < s.n {
		return off, corrupt(off, "truncated bucket widths")
	}
	for i := range s.n {
		s.widths[i] = b[off+i]
		if s.widths[i] > 64 || i > 0 && s.widths[i] <= s.widths[i-1] {
			return off, corrupt(off+i, "bad bucket width")
		}
	}
	off += s.n
	l, n := binary.Uvarint(b[off:])
	if n <= 0 || l > uint64(len(b)-off-n) {
		return off, corrupt(off, "bad stream length")
	}
	off += n
	end := off + int(l)
	s.r.reset(b[off:end], end)
	return end, nil
}

// next reads one residual.
func (s *streamReader) next() (int64, bool) {
	bk := 0
	for bk < s.n-1 {
		v, ok := s.r.read(1)
		if !ok {
			return 0, false
		}
		if v == 0 {
			break
		}
		bk++
	}
	u, ok := s.r.read(uint(s.widths[bk]))
	if !ok {
		return 0, false
	}
	return int64(u>>1) ^ -int64(u&1), true
}

// xorReader reads a Gorilla XOR stream as xorState writes it, the first
// value included as an XOR against 0 with an empty window.
type xorReader struct {
	prev        uint64
	lead, trail uint8
}

func (x *xorReader) next(r *bitReader) (uint64, bool) {
	b, ok := r.read(1)
	if !ok {
		return 0, false
	}
	if b == 0 {
		return x.prev, true
	}
	if b, ok = r.read(1); !ok {
		return 0, false
	}
	if b == 1 {
		h, ok := r.read(11)
		if !ok {
			return 0, false
		}
		lead, sig := uint8(h>>6), uint8(h&63)
		if sig == 0 {
			sig = 64
		}
		if lead+sig > 64 {
			return 0, false
		}
		x.lead, x.trail = lead, 64-lead-sig
	} else if x.lead == 0xff {
		return 0, false // no window yet
	}
	sig := uint(64 - x.lead - x.trail)
	v, ok := r.read(sig)
	if !ok {
		return 0, false
	}
	x.prev ^= v << x.trail
	return x.prev, true
}

// xorStart is the state of an XOR stream before its first value: the
// previous value 0 and no window, so the first value is written whole
// behind the 11 header (or as a single 0 bit when it is +0).
func xorStart() xorState { return xorState{leading: 0xff} }

// floatIsInt reports whether v is an integer float that int64(v) holds
// exactly and gives back bit for bit (so -0 is not).
func floatIsInt(v float64) (int64, bool) {
	if !(v >= -(1<<63) && v < 1<<63) {
		return 0, false
	}
	i := int64(v)
	return i, math.Float64bits(float64(i)) == math.Float64bits(v)
}
