package chunk

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
)

// HistIterator decodes a histogram chunk, one sample at a time. The zero
// HistIterator holds no samples; Reset points it at a chunk. Corrupt or
// truncated input ends the iteration with a *CorruptionError, never a
// panic; what it allocates is bounded by the chunk's length. Not safe for
// concurrent use.
type HistIterator struct {
	base      int64
	count, i  int
	kind      byte
	err       error
	ts        streamReader
	tsPred    intPredictor
	layouts   []hlayout
	layoutAt  []int // first sample of each layout run
	hints     []histogram.CounterResetHint
	hintAt    []int
	run, hrun int
	nslots    int
	ints      [2]streamReader // counts and zero counts; buckets
	intPred   intPredictor
	sums      bitReader
	sumX      xorReader
	flts      bitReader
	fltX      []xorReader
	slotBuf   []int64
	t         int64
	h         *histogram.Histogram
	fh        *histogram.FloatHistogram
	cur       hlayout
	smap      []int
}

// Reset points the iterator at the histogram chunk b of the row whose base
// hour is base (Unix milliseconds). It returns a *CorruptionError when the
// header is bad; Next then returns false.
func (it *HistIterator) Reset(b []byte, base int64) error {
	*it = HistIterator{base: base, layouts: it.layouts[:0], layoutAt: it.layoutAt[:0],
		hints: it.hints[:0], hintAt: it.hintAt[:0], slotBuf: it.slotBuf[:0], fltX: it.fltX[:0]}
	it.err = it.reset(b)
	if it.err != nil {
		it.count = 0
	}
	return it.err
}

func (it *HistIterator) reset(b []byte) error {
	if len(b) < 2 || b[0] != formatVersion {
		return corrupt(0, "bad format version")
	}
	if encoding(b[1]) != encHistogram {
		return corrupt(1, "not a histogram chunk")
	}
	c, n := binary.Uvarint(b[2:])
	if n <= 0 || c == 0 || c > MaxPoints {
		return corrupt(2, "bad histogram count")
	}
	it.count = int(c)
	off := 2 + n
	if off >= len(b) || b[off] > histFloat {
		return corrupt(off, "bad histogram kind")
	}
	it.kind = b[off]
	off++
	var err error
	if off, err = it.ts.header(b, off); err != nil {
		return err
	}
	it.tsPred.reset(1)
	if off, err = it.readLayouts(b, off); err != nil {
		return err
	}
	if off, err = it.readHints(b, off); err != nil {
		return err
	}
	if it.kind != histFloat {
		if off, err = it.ints[0].header(b, off); err != nil {
			return err
		}
		if off, err = it.ints[1].header(b, off); err != nil {
			return err
		}
	}
	if off, err = section(&it.sums, b, off); err != nil {
		return err
	}
	if it.kind == histFloat {
		if off, err = section(&it.flts, b, off); err != nil {
			return err
		}
	}
	if off != len(b) {
		return corrupt(off, "trailing bytes after the histogram sections")
	}
	return nil
}

// section reads a byte length and points r at that many bytes.
func section(r *bitReader, b []byte, off int) (int, error) {
	l, n := binary.Uvarint(b[min(off, len(b)):])
	if n <= 0 || l > uint64(len(b)-off-n) {
		return off, corrupt(off, "bad section length")
	}
	off += n
	end := off + int(l)
	r.reset(b[off:end], end)
	return end, nil
}

// runHeader reads a run's gap and checks it: the first run starts at
// sample 0, the others after the previous run's start, before count.
func (it *HistIterator) runHeader(b []byte, off int, starts []int) (int, int, error) {
	g, n := binary.Uvarint(b[min(off, len(b)):])
	if n <= 0 || g > MaxPoints {
		return 0, off, corrupt(off, "bad run gap")
	}
	at := int(g)
	if len(starts) > 0 {
		at += starts[len(starts)-1]
		if g == 0 {
			return 0, off, corrupt(off, "empty run")
		}
	} else if g != 0 {
		return 0, off, corrupt(off, "first run does not start at sample 0")
	}
	if at >= it.count {
		return 0, off, corrupt(off, "run starts past the last sample")
	}
	return at, off + n, nil
}

func (it *HistIterator) readLayouts(b []byte, off int) (int, error) {
	nr, n := binary.Uvarint(b[min(off, len(b)):])
	if n <= 0 || nr == 0 || nr > uint64(it.count) {
		return off, corrupt(off, "bad layout run count")
	}
	off += n
	for range nr {
		at, o, err := it.runHeader(b, off, it.layoutAt)
		if err != nil {
			return o, err
		}
		var l hlayout
		if off, err = readLayout(b, o, &l); err != nil {
			return off, err
		}
		it.layoutAt = append(it.layoutAt, at)
		it.layouts = append(it.layouts, l)
	}
	return off, nil
}

func readSpans(b []byte, off int) ([]histogram.Span, int, error) {
	ns, n := binary.Uvarint(b[min(off, len(b)):])
	// Each span takes at least two bytes: the bound keeps a short chunk
	// from asking for a large allocation.
	if n <= 0 || ns > MaxHistogramBuckets || ns > uint64(len(b)-off)/2 {
		return nil, off, corrupt(off, "bad span count")
	}
	off += n
	var spans []histogram.Span
	if ns > 0 {
		spans = make([]histogram.Span, ns)
	}
	total := uint64(0)
	for i := range spans {
		o, n1 := binary.Varint(b[min(off, len(b)):])
		if n1 <= 0 || o < math.MinInt32 || o > math.MaxInt32 {
			return nil, off, corrupt(off, "bad span offset")
		}
		off += n1
		l, n2 := binary.Uvarint(b[min(off, len(b)):])
		total += l
		if n2 <= 0 || l > MaxHistogramBuckets || total > MaxHistogramBuckets {
			return nil, off, corrupt(off, "bad span length")
		}
		off += n2
		spans[i] = histogram.Span{Offset: int32(o), Length: uint32(l)}
	}
	return spans, off, nil
}

func readLayout(b []byte, off int, l *hlayout) (int, error) {
	s, n := binary.Varint(b[min(off, len(b)):])
	if n <= 0 || s < math.MinInt32 || s > math.MaxInt32 {
		return off, corrupt(off, "bad schema")
	}
	l.schema = int32(s)
	off += n
	if len(b)-off < 8 {
		return off, corrupt(off, "truncated zero threshold")
	}
	l.zt = binary.BigEndian.Uint64(b[off:])
	off += 8
	var err error
	if l.pos, off, err = readSpans(b, off); err != nil {
		return off, err
	}
	if l.neg, off, err = readSpans(b, off); err != nil {
		return off, err
	}
	if np, nn := l.nbuckets(); np+nn > MaxHistogramBuckets {
		return off, corrupt(off, "too many buckets")
	}
	nc, n := binary.Uvarint(b[min(off, len(b)):])
	if n <= 0 || nc > MaxHistogramBuckets || nc > uint64(len(b)-off-n)/8 {
		return off, corrupt(off, "bad custom bound count")
	}
	off += n
	if nc > 0 {
		l.custom = make([]float64, nc)
		for i := range l.custom {
			l.custom[i] = math.Float64frombits(binary.BigEndian.Uint64(b[off:]))
			off += 8
		}
	}
	return off, nil
}

func (it *HistIterator) readHints(b []byte, off int) (int, error) {
	nr, n := binary.Uvarint(b[min(off, len(b)):])
	if n <= 0 || nr == 0 || nr > uint64(it.count) {
		return off, corrupt(off, "bad hint run count")
	}
	off += n
	for range nr {
		at, o, err := it.runHeader(b, off, it.hintAt)
		if err != nil {
			return o, err
		}
		if o >= len(b) || b[o] > byte(histogram.GaugeType) {
			return o, corrupt(o, "bad counter-reset hint")
		}
		it.hintAt = append(it.hintAt, at)
		it.hints = append(it.hints, histogram.CounterResetHint(b[o]))
		off = o + 1
	}
	return off, nil
}

// Next advances to the next sample and reports whether there is one.
func (it *HistIterator) Next() bool {
	if it.err != nil || it.i >= it.count {
		return false
	}
	if !it.next() {
		return false
	}
	it.i++
	if it.i == it.count {
		for _, r := range []*bitReader{&it.ts.r, &it.ints[0].r, &it.ints[1].r, &it.sums, &it.flts} {
			if !r.rest() {
				it.err = corrupt(r.offset(), "trailing bits in a histogram stream")
				return false
			}
		}
	}
	return true
}

func (it *HistIterator) fail(off int, reason string) bool {
	it.err = corrupt(off, reason)
	return false
}

func (it *HistIterator) next() bool {
	r, ok := it.ts.next()
	if !ok {
		return it.fail(it.ts.r.offset(), "truncated timestamp stream")
	}
	x := it.tsPred.value(0, r, it.ts.order2)
	t := it.base + x
	if x < 0 || x >= HourMillis || (it.i > 0 && t <= it.t) {
		return it.fail(it.ts.r.offset(), "timestamp outside the hour or not increasing")
	}
	it.t = t
	if it.run < len(it.layoutAt) && it.layoutAt[it.run] == it.i {
		it.newRun()
	}
	if it.hrun < len(it.hintAt) && it.hintAt[it.hrun] == it.i {
		it.hrun++
	}
	hint := it.hints[it.hrun-1]
	it.slotBuf = slices.Grow(it.slotBuf[:0], it.nslots)[:it.nslots]
	for j := range it.slotBuf {
		var v int64
		if it.kind == histFloat {
			u, ok := it.fltX[j].next(&it.flts)
			if !ok {
				return it.fail(it.flts.offset(), "truncated count stream")
			}
			v = int64(u)
		} else {
			st := &it.ints[min(j/2, 1)]
			r, ok := st.next()
			if !ok {
				return it.fail(st.r.offset(), "truncated count stream")
			}
			v = it.intPred.value(j, r, st.order2)
		}
		it.slotBuf[j] = v
	}
	sum, ok := it.sumX.next(&it.sums)
	if !ok {
		return it.fail(it.sums.offset(), "truncated sum stream")
	}
	it.build(hint, math.Float64frombits(sum))
	return true
}

// newRun moves the slots' state to the next layout run.
func (it *HistIterator) newRun() {
	it.cur = it.layouts[it.run]
	it.nslots = it.cur.slots()
	if it.run == 0 {
		it.intPred.reset(it.nslots)
		it.fltX = it.fltX[:0]
		for range it.nslots {
			it.fltX = append(it.fltX, xorReader{lead: 0xff})
		}
	} else {
		it.smap = slotMap(it.smap, &it.layouts[it.run-1], &it.cur)
		it.intPred.remap(it.smap)
		fx := make([]xorReader, len(it.smap))
		for j, o := range it.smap {
			if o >= 0 {
				fx[j] = it.fltX[o]
			} else {
				fx[j] = xorReader{lead: 0xff}
			}
		}
		it.fltX = fx
	}
	it.run++
}

// build makes the current sample's histogram from the slots.
func (it *HistIterator) build(hint histogram.CounterResetHint, sum float64) {
	l := &it.cur
	np, _ := l.nbuckets()
	s := it.slotBuf
	if it.kind == histInt {
		h := &histogram.Histogram{CounterResetHint: hint, Schema: l.schema, ZeroThreshold: math.Float64frombits(l.zt),
			ZeroCount: uint64(s[1]), Count: uint64(s[0]), Sum: sum,
			PositiveSpans: slices.Clone(l.pos), NegativeSpans: slices.Clone(l.neg), CustomValues: l.custom}
		h.PositiveBuckets = deltas(s[2 : 2+np])
		h.NegativeBuckets = deltas(s[2+np:])
		it.h, it.fh = h, nil
		return
	}
	conv := func(v int64) float64 {
		if it.kind == histFloatInt {
			return float64(v)
		}
		return math.Float64frombits(uint64(v))
	}
	fh := &histogram.FloatHistogram{CounterResetHint: hint, Schema: l.schema, ZeroThreshold: math.Float64frombits(l.zt),
		ZeroCount: conv(s[1]), Count: conv(s[0]), Sum: sum,
		PositiveSpans: slices.Clone(l.pos), NegativeSpans: slices.Clone(l.neg), CustomValues: l.custom}
	fh.PositiveBuckets = floatsOf(s[2:2+np], conv)
	fh.NegativeBuckets = floatsOf(s[2+np:], conv)
	it.h, it.fh = nil, fh
}

func deltas(abs []int64) []int64 {
	if len(abs) == 0 {
		return nil
	}
	d := make([]int64, len(abs))
	var prev int64
	for i, v := range abs {
		d[i], prev = v-prev, v
	}
	return d
}

func floatsOf(vs []int64, conv func(int64) float64) []float64 {
	if len(vs) == 0 {
		return nil
	}
	f := make([]float64, len(vs))
	for i, v := range vs {
		f[i] = conv(v)
	}
	return f
}

// At returns the current sample: its timestamp and either an integer
// histogram (h) or a float histogram (fh). Each call after Next returns
// new histograms the caller may keep; CustomValues are shared between the
// samples of a layout run and must not be modified.
func (it *HistIterator) At() (t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) {
	return it.t, it.h, it.fh
}

// IsFloat reports whether the chunk holds float histograms.
func (it *HistIterator) IsFloat() bool { return it.kind != histInt }

// Len returns the number of samples in the chunk, as its header says.
func (it *HistIterator) Len() int { return it.count }

// Err returns the error that ended the iteration, or nil.
func (it *HistIterator) Err() error { return it.err }

// DecodeHistograms appends the samples of histogram chunk b, of the row
// whose base hour is base, to dst.
func DecodeHistograms(dst []HistPoint, b []byte, base int64) ([]HistPoint, error) {
	var it HistIterator
	if err := it.Reset(b, base); err != nil {
		return dst, err
	}
	for it.Next() {
		t, h, fh := it.At()
		dst = append(dst, HistPoint{T: t, H: h, FH: fh})
	}
	return dst, it.Err()
}
