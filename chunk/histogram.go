package chunk

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// Histogram chunks hold native histogram samples (Prometheus' integer and
// float histograms) of one series within one row's hour. They share the
// chunk header (version, encoding, count) with the float chunks, under an
// encoding number of their own; docs/format/histogram.md has the layout.

// encHistogram is the value encoding of a histogram chunk. The float
// Iterator refuses it as an unknown encoding; HistIterator reads it.
const encHistogram encoding = 9

// The kinds of histogram chunk: the histogram section's first byte.
const (
	histInt      = 0 // integer histograms; counts in an integer stream
	histFloatInt = 1 // float histograms whose counts are all integers; an integer stream
	histFloat    = 2 // float histograms; counts XOR-encoded, slot by slot
)

// MaxHistogramBuckets bounds, for one histogram of a chunk, the buckets
// (positive and negative together), the spans of each side and the custom
// bounds: a hard bound of the format, checked by encoder and decoder.
const MaxHistogramBuckets = 4096

// HistPoint is one histogram sample: a timestamp in Unix milliseconds and
// exactly one of an integer histogram H or a float histogram FH.
type HistPoint struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// IsHistogramChunk reports whether b is a histogram chunk (by its encoding
// byte), to be read with a HistIterator rather than an Iterator.
func IsHistogramChunk(b []byte) bool {
	return len(b) >= 2 && b[0] == formatVersion && encoding(b[1]) == encHistogram
}

// hlayout is what a histogram sample's buckets mean: schema, zero
// threshold, spans and custom bounds. Samples of one layout run share it.
type hlayout struct {
	schema   int32
	zt       uint64 // bits of the zero threshold
	pos, neg []histogram.Span
	custom   []float64
}

func layoutOf(p *HistPoint) hlayout {
	if p.H != nil {
		h := p.H
		return hlayout{h.Schema, math.Float64bits(h.ZeroThreshold), h.PositiveSpans, h.NegativeSpans, h.CustomValues}
	}
	h := p.FH
	return hlayout{h.Schema, math.Float64bits(h.ZeroThreshold), h.PositiveSpans, h.NegativeSpans, h.CustomValues}
}

func (l *hlayout) equal(o *hlayout) bool {
	if l.schema != o.schema || l.zt != o.zt || len(l.pos) != len(o.pos) || len(l.neg) != len(o.neg) || len(l.custom) != len(o.custom) {
		return false
	}
	for i := range l.pos {
		if l.pos[i] != o.pos[i] {
			return false
		}
	}
	for i := range l.neg {
		if l.neg[i] != o.neg[i] {
			return false
		}
	}
	for i := range l.custom {
		if math.Float64bits(l.custom[i]) != math.Float64bits(o.custom[i]) {
			return false
		}
	}
	return true
}

// spanLen is the number of buckets spans describe, or -1 past the bound.
func spanLen(spans []histogram.Span) int {
	n := 0
	for _, s := range spans {
		n += int(s.Length)
		if n > MaxHistogramBuckets {
			return -1
		}
	}
	return n
}

// nbuckets returns the layout's positive and negative bucket counts.
func (l *hlayout) nbuckets() (int, int) { return spanLen(l.pos), spanLen(l.neg) }

// slots is the number of integers (or floats) of each sample: count, zero
// count, then the buckets.
func (l *hlayout) slots() int {
	np, nn := l.nbuckets()
	return 2 + np + nn
}

// remapXOR moves per-slot XOR states to a new layout as
// intPredictor.remap does.
func remapXOR(st []xorState, m []int) []xorState {
	out := make([]xorState, len(m))
	for j, o := range m {
		if o >= 0 {
			out[j] = st[o]
		} else {
			out[j] = xorStart()
		}
	}
	return out
}

func appendSpans(dst []byte, spans []histogram.Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendVarint(dst, int64(s.Offset))
		dst = binary.AppendUvarint(dst, uint64(s.Length))
	}
	return dst
}

func (l *hlayout) appendTo(dst []byte) []byte {
	dst = binary.AppendVarint(dst, int64(l.schema))
	dst = binary.BigEndian.AppendUint64(dst, l.zt)
	dst = appendSpans(dst, l.pos)
	dst = appendSpans(dst, l.neg)
	dst = binary.AppendUvarint(dst, uint64(len(l.custom)))
	for _, v := range l.custom {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

func checkHistPoints(base int64, pts []HistPoint) error {
	if base%HourMillis != 0 || base > math.MaxInt64-HourMillis {
		return fmt.Errorf("%w: base %d is not a whole hour in unix milliseconds", ErrInvalidPoints, base)
	}
	if len(pts) == 0 || len(pts) > MaxPoints {
		return fmt.Errorf("%w: %d histograms, a chunk holds 1 to %d", ErrInvalidPoints, len(pts), MaxPoints)
	}
	prev := int64(math.MinInt64)
	for i := range pts {
		p := &pts[i]
		if p.T < base || p.T >= base+HourMillis || p.T <= prev {
			return fmt.Errorf("%w: histogram %d: timestamp %d is outside the hour or not after the previous one", ErrInvalidPoints, i, p.T)
		}
		prev = p.T
		if (p.H == nil) == (p.FH == nil) {
			return fmt.Errorf("%w: histogram %d: exactly one of H and FH must be set", ErrInvalidPoints, i)
		}
		l := layoutOf(p)
		np, nn := l.nbuckets()
		var bp, bn int
		if p.H != nil {
			bp, bn = len(p.H.PositiveBuckets), len(p.H.NegativeBuckets)
		} else {
			bp, bn = len(p.FH.PositiveBuckets), len(p.FH.NegativeBuckets)
		}
		switch {
		case np < 0 || nn < 0 || np+nn > MaxHistogramBuckets || len(l.pos) > MaxHistogramBuckets ||
			len(l.neg) > MaxHistogramBuckets || len(l.custom) > MaxHistogramBuckets:
			return fmt.Errorf("%w: histogram %d: more than %d buckets, spans or custom bounds", ErrInvalidPoints, i, MaxHistogramBuckets)
		case np != bp || nn != bn:
			return fmt.Errorf("%w: histogram %d: spans describe %d+%d buckets, %d+%d given", ErrInvalidPoints, i, np, nn, bp, bn)
		}
	}
	return nil
}

// histEnc is one histogram chunk being written.
type histEnc struct {
	pts     []HistPoint
	fhs     []*histogram.FloatHistogram // float chunks: every sample as a float histogram
	kind    byte
	runs    []int // index of the first sample of each layout run
	layouts []hlayout
	scrach  []int64
	smap    []int
	// Scratch kept by a HistEncoder from one chunk to the next.
	pred, tpred intPredictor // intPass's and timePass's
	body        []byte       // appendLayouts' runs
}

// HistEncoder appends histogram chunks as AppendHistograms does, keeping
// its scratch (predictor state, layout runs, value buffers) from one chunk
// to the next: for a caller that encodes many small chunks, as the head
// does the one-sample chunks of its WAL entries. The zero value is ready
// to use; it is not safe for concurrent use.
type HistEncoder struct {
	e histEnc
}

// AppendHistograms appends one histogram chunk holding pts to dst and
// returns the extended slice. Timestamps must be strictly increasing and
// within [base, base+HourMillis). When every sample is an integer
// histogram the chunk holds integer histograms; otherwise every sample is
// stored as a float histogram (an integer histogram converted exactly, as
// Histogram.ToFloat does, while its counts stay below 2^53). Every field
// round-trips: schema, zero threshold and count, count, sum (bit for bit),
// spans as given, buckets, custom bounds and the counter-reset hint.
func AppendHistograms(dst []byte, base int64, pts []HistPoint) ([]byte, error) {
	var enc HistEncoder
	return enc.Append(dst, base, pts)
}

// Append appends one histogram chunk holding pts to dst, as
// AppendHistograms does.
func (enc *HistEncoder) Append(dst []byte, base int64, pts []HistPoint) ([]byte, error) {
	if err := checkHistPoints(base, pts); err != nil {
		return dst, err
	}
	e := &enc.e
	clear(e.layouts) // no span slices of the last chunk's histograms kept
	e.pts, e.fhs, e.kind, e.runs, e.layouts = pts, nil, histInt, e.runs[:0], e.layouts[:0]
	defer func() { e.pts, e.fhs = nil, nil }()
	for i := range pts {
		if pts[i].FH != nil {
			e.kind = histFloatInt
			break
		}
	}
	if e.kind != histInt {
		e.fhs = make([]*histogram.FloatHistogram, len(pts))
		for i := range pts {
			if e.fhs[i] = pts[i].FH; e.fhs[i] == nil {
				e.fhs[i] = pts[i].H.ToFloat(nil)
			}
			if e.kind == histFloatInt && !floatHistIntegral(e.fhs[i]) {
				e.kind = histFloat
			}
		}
	}
	dst = append(dst, formatVersion, byte(encHistogram))
	dst = binary.AppendUvarint(dst, uint64(len(pts)))
	dst = append(dst, e.kind)

	// Timestamps: one slot, one run.
	var tp streamPlanner
	e.timePass(base, func(r1, r2 int64) { tp.add(r1, r2) })
	tw := newStreamWriter(tp.plan())
	e.timePass(base, tw.put)
	dst = tw.appendTo(dst)

	dst = e.appendLayouts(dst)
	dst = e.appendHints(dst)
	if e.kind != histFloat {
		// Two streams: the counts and zero counts, then the buckets.
		var ip [2]streamPlanner
		e.intPass(func(j int, r1, r2 int64) { ip[min(j/2, 1)].add(r1, r2) })
		iw := [2]*streamWriter{newStreamWriter(ip[0].plan()), newStreamWriter(ip[1].plan())}
		e.intPass(func(j int, r1, r2 int64) { iw[min(j/2, 1)].put(r1, r2) })
		dst = iw[0].appendTo(dst)
		dst = iw[1].appendTo(dst)
	}
	dst = e.appendSums(dst)
	if e.kind == histFloat {
		dst = e.appendFloatCounts(dst)
	}
	return dst, nil
}

func floatHistIntegral(h *histogram.FloatHistogram) bool {
	for _, v := range [2]float64{h.Count, h.ZeroCount} {
		if _, ok := floatIsInt(v); !ok {
			return false
		}
	}
	for _, bs := range [2][]float64{h.PositiveBuckets, h.NegativeBuckets} {
		for _, v := range bs {
			if _, ok := floatIsInt(v); !ok {
				return false
			}
		}
	}
	return true
}

func (e *histEnc) timePass(base int64, f func(r1, r2 int64)) {
	p := &e.tpred
	p.reset(1)
	for i := range e.pts {
		f(p.residuals(0, e.pts[i].T-base))
	}
}

// appendLayouts writes the layout runs: their number, then for each the
// gap from the previous run's first sample (0 for the first run) and the
// layout. It records the runs for the value passes.
func (e *histEnc) appendLayouts(dst []byte) []byte {
	var prev hlayout
	body := e.body[:0]
	defer func() { e.body = body[:0] }()
	last := 0
	for i := range e.pts {
		l := layoutOf(&e.pts[i])
		if i > 0 && l.equal(&prev) {
			continue
		}
		body = binary.AppendUvarint(body, uint64(i-last))
		body = l.appendTo(body)
		e.runs = append(e.runs, i)
		e.layouts = append(e.layouts, l)
		prev, last = l, i
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.runs)))
	return append(dst, body...)
}

func (e *histEnc) hint(i int) histogram.CounterResetHint {
	if e.pts[i].H != nil {
		return e.pts[i].H.CounterResetHint
	}
	return e.pts[i].FH.CounterResetHint
}

// appendHints writes the counter-reset hint runs as the layouts are.
func (e *histEnc) appendHints(dst []byte) []byte {
	var body []byte
	n, last := 0, 0
	for i := range e.pts {
		h := e.hint(i)
		if i > 0 && h == e.hint(i-1) {
			continue
		}
		body = binary.AppendUvarint(body, uint64(i-last))
		body = append(body, byte(h))
		n, last = n+1, i
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	return append(dst, body...)
}

// ints returns sample i's slots as integers: count, zero count, the
// positive buckets, the negative buckets (absolute counts).
func (e *histEnc) ints(dst []int64, i int) []int64 {
	if h := e.pts[i].H; e.kind == histInt {
		dst = append(dst, int64(h.Count), int64(h.ZeroCount))
		for _, bs := range [2][]int64{h.PositiveBuckets, h.NegativeBuckets} {
			var abs int64
			for _, d := range bs {
				abs += d
				dst = append(dst, abs)
			}
		}
		return dst
	}
	return e.floats(dst[:0], i, func(v float64) int64 { x, _ := floatIsInt(v); return x })
}

func (e *histEnc) floats(dst []int64, i int, conv func(float64) int64) []int64 {
	h := e.fhs[i]
	dst = append(dst, conv(h.Count), conv(h.ZeroCount))
	for _, v := range h.PositiveBuckets {
		dst = append(dst, conv(v))
	}
	for _, v := range h.NegativeBuckets {
		dst = append(dst, conv(v))
	}
	return dst
}

func (e *histEnc) intPass(f func(j int, r1, r2 int64)) {
	p := &e.pred
	run := 0
	for i := range e.pts {
		if run < len(e.runs) && e.runs[run] == i {
			if run == 0 {
				p.reset(e.layouts[0].slots())
			} else {
				e.smap = slotMap(e.smap, &e.layouts[run-1], &e.layouts[run])
				p.remap(e.smap)
			}
			run++
		}
		e.scrach = e.ints(e.scrach[:0], i)
		for j, x := range e.scrach {
			r1, r2 := p.residuals(j, x)
			f(j, r1, r2)
		}
	}
}

// appendSums writes the sums as one XOR stream: its byte length, the bits.
func (e *histEnc) appendSums(dst []byte) []byte {
	w := bitWriter{}
	s := xorStart()
	for i := range e.pts {
		v := 0.0
		if e.fhs != nil {
			v = e.fhs[i].Sum
		} else {
			v = e.pts[i].H.Sum
		}
		s.write(&w, math.Float64bits(v))
	}
	body := w.flush()
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...)
}

// appendFloatCounts writes the counts of a float chunk: an XOR stream per
// slot, interleaved sample by sample, each slot starting again at every
// layout run.
func (e *histEnc) appendFloatCounts(dst []byte) []byte {
	w := bitWriter{}
	var st []xorState
	run := 0
	for i := range e.pts {
		if run < len(e.runs) && e.runs[run] == i {
			if run == 0 {
				st = make([]xorState, e.layouts[0].slots())
				for j := range st {
					st[j] = xorStart()
				}
			} else {
				e.smap = slotMap(e.smap, &e.layouts[run-1], &e.layouts[run])
				st = remapXOR(st, e.smap)
			}
			run++
		}
		e.scrach = e.floats(e.scrach[:0], i, func(v float64) int64 { return int64(math.Float64bits(v)) })
		for j, x := range e.scrach {
			st[j].write(&w, uint64(x))
		}
	}
	body := w.flush()
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...)
}
