package rollup

import (
	"encoding/binary"
	"math"

	"hourglass/chunk"
)

// Iterator reads the buckets of one cell in place. It allocates nothing:
// At returns a pointer to a Bucket the iterator owns, valid until the next
// Next or Reset. Corrupt or truncated input ends the iteration with a
// *CorruptionError (errors.Is(err, ErrCorrupt)); it never panics. Not safe
// for concurrent use.
type Iterator struct {
	b        []byte
	off      int
	base     int64
	interval int64
	version  byte
	fields   Fields
	sumRef   sumRef // version 2: the previous sum, as written
	left     uint64 // buckets not yet read
	next     int64  // the start of the next bucket with gap 0
	prevLast chunk.Value
	cur      Bucket
	err      error
	// The decimal mantissas of prevLast and of the value value() read last
	// (read), so that a delta, the uniform values and the sum do not
	// recompute a reference's mantissa with decimal().
	prevDec, read decMantissa
	firstDec      decMantissa // the current bucket's First's
}

// decMantissa is a decimal value's scale and mantissa as it was read,
// when they are the ones decimal() returns for it (known); otherwise the
// reader calls decimal().
type decMantissa struct {
	k     int
	m     int64
	known bool
}

// canonical returns the scale and mantissa a decimal read as m / 10^k has
// when they are surely decimal()'s (the smallest scale that gives its
// bits): k is 0, or m has no trailing zero and fewer than 16 digits (two
// decimals of at most 15 digits and different scales are further apart
// than a float's ulp, so no smaller scale rounds to the same float).
// Other mantissas are left to decimal() (known false).
func canonical(k int, m int64) decMantissa {
	if k == 0 || (m%10 != 0 && m < 1e15 && m > -1e15) {
		return decMantissa{k: k, m: m, known: true}
	}
	return decMantissa{}
}

// refDecimal returns decimal(ref) for a float ref, from d when known.
func refDecimal(ref chunk.Value, d decMantissa) (int, int64, bool) {
	if d.known {
		return d.k, d.m, true
	}
	return decimal(ref.Float())
}

// Fields says which fields of a bucket an Iterator reads.
type Fields uint8

const (
	// FieldsAll reads every field.
	FieldsAll Fields = iota
	// FieldsSum reads Start, Count, NaN, StaleEnd, Sum, SumOverflow and
	// SumExact, and leaves the other fields zero where the cell lets it
	// skip them (version 2); a version 1 cell is read whole. It checks
	// less of what it skips.
	FieldsSum
	// FieldsSumTimes is FieldsSum and FirstT and LastT, the tail's first
	// two fields (PromQL's sum_over_time and count_over_time over rollups
	// place a bucket's sample at LastT).
	FieldsSumTimes
)

// Reset makes it read cell, whose base time is baseMs. It reads the header
// at once: Interval is valid after Reset when Err is nil.
func (it *Iterator) Reset(cell []byte, baseMs int64) { it.ResetFields(cell, baseMs, FieldsAll) }

// ResetFields is Reset reading only the fields f.
func (it *Iterator) ResetFields(cell []byte, baseMs int64, f Fields) {
	*it = Iterator{b: cell, base: baseMs, next: baseMs, fields: f}
	if baseMs > maxBase || baseMs < -maxBase {
		it.fail(0, "base time out of range")
		return
	}
	if len(cell) == 0 || (cell[0] != Version && cell[0] != version1) {
		it.fail(0, "unknown version")
		return
	}
	it.version = cell[0]
	it.off = 1
	iv, ok := it.uvarint()
	if !ok || iv == 0 || iv > math.MaxInt64/2 {
		it.fail(1, "bad interval")
		return
	}
	it.interval = int64(iv)
	n, ok := it.uvarint()
	if !ok || n > uint64(len(cell)) { // every bucket takes at least 3 bytes
		it.fail(it.off, "bad bucket count")
		return
	}
	it.left = n
}

// Interval returns the cell's interval in ms.
func (it *Iterator) Interval() int64 { return it.interval }

// Err returns the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.err }

// At returns the current bucket. It is valid after Next returned true.
func (it *Iterator) At() *Bucket { return &it.cur }

func (it *Iterator) fail(off int, reason string) bool {
	if it.err == nil {
		it.err = &CorruptionError{Offset: off, Reason: reason}
	}
	it.left = 0
	return false
}

func (it *Iterator) uvarint() (uint64, bool) {
	x, n := binary.Uvarint(it.b[it.off:])
	if n <= 0 {
		return 0, false
	}
	it.off += n
	return x, true
}

// count reads a uvarint that must fit an int64 count or offset below max.
func (it *Iterator) count(max uint64) (int64, bool) {
	x, ok := it.uvarint()
	return int64(x), ok && x <= max
}

// Next reads the next bucket and reports whether there was one.
func (it *Iterator) Next() bool {
	if it.left == 0 {
		if it.err == nil && it.off != len(it.b) {
			return it.fail(it.off, "bytes after the last bucket")
		}
		return false
	}
	it.left--
	start := it.off
	gap, ok := it.uvarint()
	if !ok || gap > uint64(math.MaxInt64/2-it.next)/uint64(it.interval) {
		return it.fail(start, "bad bucket gap")
	}
	c := &it.cur
	*c = Bucket{Start: it.next + int64(gap)*it.interval}
	it.next = c.Start + it.interval
	if it.off >= len(it.b) {
		return it.fail(it.off, "truncated bucket")
	}
	flags := it.b[it.off]
	it.off++
	if flags&flagUnknown != 0 || (it.version == version1 && flags&flagUnknownV1 != 0) {
		return it.fail(it.off-1, "unknown flags")
	}
	c.SumOverflow, c.StaleEnd = flags&flagSumOverflow != 0, flags&flagStaleEnd != 0
	if c.Count, ok = it.count(math.MaxInt64); !ok {
		return it.fail(it.off, "bad count")
	}
	if flags&flagNaN != 0 {
		if c.NaN, ok = it.count(uint64(c.Count)); !ok || c.NaN == 0 {
			return it.fail(it.off, "bad nan count")
		}
	}
	hasValues := flags&flagValues != 0
	if hasValues != (c.Count > c.NaN) || (c.Count == 0 && !c.StaleEnd) {
		return it.fail(start, "counts disagree with the flags")
	}
	if !hasValues {
		if flags&(flagResets|flagSumOverflow|flagSumExact) != 0 {
			return it.fail(start, "counter or sum flags without values")
		}
		return true
	}
	if it.version == version1 {
		return it.valuesV1(c, flags)
	}
	return it.valuesV2(c, flags)
}

// valuesV2 reads the value part of a version 2 bucket: the sum, then the
// tail after its length, skipped when only the sums are read.
func (it *Iterator) valuesV2(c *Bucket, flags byte) bool {
	var ok bool
	if c.Sum, ok = it.sum2(); !ok {
		return false
	}
	exact := flags&flagSumExact != 0
	if c.SumOverflow && c.Sum.IsInt() {
		return it.fail(it.off, "an overflowed sum that is an int")
	}
	if exact && !c.Sum.IsInt() {
		return it.fail(it.off, "an exact sum that is not an int")
	}
	n, ok := it.uvarint()
	if !ok || n > uint64(len(it.b)-it.off) {
		return it.fail(it.off, "bad tail length")
	}
	end := it.off + int(n)
	switch it.fields {
	case FieldsSum:
		it.off, c.SumExact = end, exact
		return true
	case FieldsSumTimes:
		all := it.b
		it.b = all[:end]
		ok := it.times(c)
		it.b = all
		if !ok {
			return false
		}
		it.off, c.SumExact = end, exact
		return true
	}
	all := it.b
	it.b = all[:end] // the tail's fields end with it
	lastDec, ok := it.timesValues(c, flags)
	ok = ok && it.counters(c, flags)
	it.b = all
	if !ok {
		return false
	}
	if it.off != end {
		return it.fail(it.off, "bytes after the bucket's tail")
	}
	if c.SetSumExact(); c.SumExact != exact {
		return it.fail(end, "the exact sum flag disagrees with the values")
	}
	it.prevLast, it.prevDec = c.Last, lastDec
	return true
}

// sum2 reads a version 2 sum (appendSum), against the previous one.
func (it *Iterator) sum2() (chunk.Value, bool) {
	if it.off >= len(it.b) {
		return chunk.Value{}, it.fail(it.off, "truncated sum")
	}
	h := it.b[it.off]
	it.off++
	k := int(h >> 3)
	delta := h&headerDelta != 0
	if h&3 == kindFloat {
		if h != kindFloat || len(it.b)-it.off < 8 {
			return chunk.Value{}, it.fail(it.off-1, "bad float sum")
		}
		it.off += 8
		it.sumRef = sumRef{}
		return chunk.FloatBits(binary.BigEndian.Uint64(it.b[it.off-8:])), true
	}
	x, n := binary.Varint(it.b[it.off:])
	if n <= 0 {
		return chunk.Value{}, it.fail(it.off, "bad sum")
	}
	it.off += n
	if h&3 == kindInt {
		if k != 0 || (delta && it.sumRef.kind != refInt) {
			return chunk.Value{}, it.fail(it.off-n-1, "bad int sum header")
		}
		if delta {
			x += it.sumRef.m
		}
		it.sumRef = sumRef{kind: refInt, m: x}
		return chunk.Int(x), true
	}
	if k > maxScale || (h&3 == kindNear && k > maxNearK) {
		return chunk.Value{}, it.fail(it.off-n-1, "bad sum scale")
	}
	if delta {
		if it.sumRef.kind != refScaled || it.sumRef.k != k {
			return chunk.Value{}, it.fail(it.off-n-1, "sum delta without a matching sum")
		}
		x += it.sumRef.m
	}
	if x >= 1<<53 || x <= -(1<<53) {
		return chunk.Value{}, it.fail(it.off-n, "decimal mantissa too large")
	}
	it.sumRef = sumRef{kind: refScaled, k: k, m: x}
	f := float64(x) / pow10[k]
	if h&3 == kindDecimal {
		return chunk.Float(f), true
	}
	d, n := binary.Varint(it.b[it.off:])
	if n <= 0 {
		return chunk.Value{}, it.fail(it.off, "bad near-decimal difference")
	}
	it.off += n
	return chunk.FloatBits(uint64(int64(math.Float64bits(f)) + d)), true
}

// valuesV1 reads the value part of a version 1 bucket.
func (it *Iterator) valuesV1(c *Bucket, flags byte) bool {
	lastDec, ok := it.timesValues(c, flags)
	c.Sum, ok = it.sum(c.First, it.firstDec, c.N(), ok)
	if !ok {
		return false
	}
	if c.SumOverflow && c.Sum.IsInt() {
		return it.fail(it.off, "an overflowed sum that is an int")
	}
	if !it.counters(c, flags) {
		return false
	}
	c.SetSumExact()
	it.prevLast, it.prevDec = c.Last, lastDec
	return true
}

// times reads FirstT and LastT.
func (it *Iterator) times(c *Bucket) bool {
	off := it.off
	first, ok1 := it.count(uint64(it.interval - 1))
	lastGap, ok2 := it.count(uint64(it.interval - 1 - first))
	if !ok1 || !ok2 {
		return it.fail(off, "first or last timestamp outside the bucket")
	}
	c.FirstT, c.LastT = c.Start+first, c.Start+it.interval-1-lastGap
	return true
}

// timesValues reads FirstT, LastT, First, Last, Min and Max, and returns
// Last's mantissa (it.firstDec is First's).
func (it *Iterator) timesValues(c *Bucket, flags byte) (decMantissa, bool) {
	if !it.times(c) {
		return decMantissa{}, false
	}
	ok := true
	c.First, ok = it.value(it.prevLast, it.prevDec, ok)
	firstDec := it.read
	it.firstDec = firstDec
	var lastDec decMantissa
	if flags&flagUniform != 0 {
		c.Last, c.Min, c.Max, lastDec, ok = it.uniform(c.First, firstDec, ok)
	} else {
		c.Last, ok = it.value(c.First, firstDec, ok)
		lastDec = it.read
		c.Min, ok = it.value(c.First, firstDec, ok)
		c.Max, ok = it.value(c.First, firstDec, ok)
	}
	return lastDec, ok
}

// counters reads Changes, and Resets and Correction with flag resets.
func (it *Iterator) counters(c *Bucket, flags byte) bool {
	var ok bool
	if c.Changes, ok = it.count(uint64(c.N() - 1)); !ok {
		return it.fail(it.off, "bad changes")
	}
	if flags&flagResets != 0 {
		if c.Resets, ok = it.count(uint64(c.Changes)); !ok {
			return it.fail(it.off, "bad resets")
		}
		var corr chunk.Value
		if corr, ok = it.value(chunk.Value{}, decMantissa{}, true); !ok {
			return false
		}
		if corr.IsInt() {
			return it.fail(it.off, "an int correction")
		}
		c.Correction = corr.Float()
	}
	return true
}

// value reads one value written by appendValue against ref (refDec its
// mantissa, when known) and sets it.read to the value's; ok false
// (already or now) means the iteration failed.
func (it *Iterator) value(ref chunk.Value, refDec decMantissa, ok bool) (chunk.Value, bool) {
	it.read = decMantissa{}
	if !ok {
		return chunk.Value{}, false
	}
	if it.off >= len(it.b) {
		return chunk.Value{}, it.fail(it.off, "truncated value")
	}
	h := it.b[it.off]
	it.off++
	delta := h&headerDelta != 0
	switch h & 3 {
	case kindInt:
		if h>>3 != 0 || (delta && !ref.IsInt()) {
			return chunk.Value{}, it.fail(it.off-1, "bad int header")
		}
		x, n := binary.Varint(it.b[it.off:])
		if n <= 0 {
			return chunk.Value{}, it.fail(it.off, "bad int")
		}
		it.off += n
		if delta {
			x += ref.Int()
		}
		return chunk.Int(x), true
	case kindDecimal:
		return it.decimalValue(h, ref, refDec)
	case kindNear:
		return it.nearValue(h)
	case kindFloat:
		if h != kindFloat || len(it.b)-it.off < 8 {
			return chunk.Value{}, it.fail(it.off-1, "bad float")
		}
		it.off += 8
		return chunk.FloatBits(binary.BigEndian.Uint64(it.b[it.off-8:])), true
	}
	panic("rollup: unreachable value kind")
}

// sum reads the sum written by appendSum.
func (it *Iterator) sum(first chunk.Value, firstDec decMantissa, n int64, ok bool) (chunk.Value, bool) {
	if !ok || it.off >= len(it.b) || it.b[it.off]&headerDelta == 0 {
		return it.value(chunk.Value{}, decMantissa{}, ok)
	}
	h := it.b[it.off]
	k := int(h >> 3)
	var fm int64
	switch {
	case h == kindInt|headerDelta && first.IsInt():
		fm = first.Int()
	case h&3 == kindDecimal || h&3 == kindNear:
		if first.IsInt() {
			return chunk.Value{}, it.fail(it.off, "sum delta without a matching first")
		}
		fk, m, dok := refDecimal(first, firstDec)
		if !dok || fk != k || k > maxNearK && h&3 == kindNear {
			return chunk.Value{}, it.fail(it.off, "sum delta without a matching first")
		}
		fm = m
	default:
		return chunk.Value{}, it.fail(it.off, "bad sum header")
	}
	it.off++
	d, w := binary.Varint(it.b[it.off:])
	if w <= 0 {
		return chunk.Value{}, it.fail(it.off, "bad sum")
	}
	it.off += w
	m := d + n*fm
	if h&3 == kindInt {
		return chunk.Int(m), true
	}
	if m >= 1<<53 || m <= -(1<<53) {
		return chunk.Value{}, it.fail(it.off-w, "decimal mantissa too large")
	}
	f := float64(m) / pow10[k]
	if h&3 == kindDecimal {
		return chunk.Float(f), true
	}
	bd, w := binary.Varint(it.b[it.off:])
	if w <= 0 {
		return chunk.Value{}, it.fail(it.off, "bad near-decimal difference")
	}
	it.off += w
	return chunk.FloatBits(uint64(int64(math.Float64bits(f)) + bd)), true
}

// uniform reads last, min and max written as deltas of first's mantissa
// (firstDec, when known), and returns last's mantissa too.
func (it *Iterator) uniform(first chunk.Value, firstDec decMantissa, ok bool) (last, lo, hi chunk.Value, lastDec decMantissa, _ bool) {
	if !ok {
		return last, lo, hi, lastDec, false
	}
	var vs [3]chunk.Value
	k, fm, isDec := 0, first.Int(), !first.IsInt()
	if isDec {
		var dok bool
		if k, fm, dok = refDecimal(first, firstDec); !dok {
			return last, lo, hi, lastDec, it.fail(it.off, "uniform values after a float")
		}
	}
	for i := range vs {
		d, n := binary.Varint(it.b[it.off:])
		if n <= 0 {
			return last, lo, hi, lastDec, it.fail(it.off, "bad uniform value")
		}
		it.off += n
		m := fm + d
		if !isDec {
			vs[i] = chunk.Int(m)
			continue
		}
		if m >= 1<<53 || m <= -(1<<53) {
			return last, lo, hi, lastDec, it.fail(it.off-n, "decimal mantissa too large")
		}
		if i == 0 {
			lastDec = canonical(k, m)
		}
		vs[i] = chunk.Float(float64(m) / pow10[k])
	}
	return vs[0], vs[1], vs[2], lastDec, true
}

// nearValue reads a kindNear value: m, then the difference of the bits.
func (it *Iterator) nearValue(h byte) (chunk.Value, bool) {
	k := int(h >> 3)
	if k > maxNearK || h&headerDelta != 0 {
		return chunk.Value{}, it.fail(it.off-1, "bad near-decimal header")
	}
	m, n := binary.Varint(it.b[it.off:])
	if n <= 0 || m >= 1<<53 || m <= -(1<<53) {
		return chunk.Value{}, it.fail(it.off, "bad near-decimal mantissa")
	}
	it.off += n
	d, n := binary.Varint(it.b[it.off:])
	if n <= 0 {
		return chunk.Value{}, it.fail(it.off, "bad near-decimal difference")
	}
	it.off += n
	return chunk.FloatBits(uint64(int64(math.Float64bits(float64(m)/pow10[k])) + d)), true
}

func (it *Iterator) decimalValue(h byte, ref chunk.Value, refDec decMantissa) (chunk.Value, bool) {
	k := int(h >> 3)
	if k > maxScale {
		return chunk.Value{}, it.fail(it.off-1, "decimal scale too large")
	}
	m, n := binary.Varint(it.b[it.off:])
	if n <= 0 {
		return chunk.Value{}, it.fail(it.off, "bad decimal")
	}
	it.off += n
	if h&headerDelta != 0 {
		if ref.IsInt() {
			return chunk.Value{}, it.fail(it.off-n-1, "decimal delta without a decimal reference")
		}
		rk, rm, ok := refDecimal(ref, refDec)
		if !ok || rk != k {
			return chunk.Value{}, it.fail(it.off-n-1, "decimal delta without a decimal reference")
		}
		m += rm
	}
	if m >= 1<<53 || m <= -(1<<53) {
		return chunk.Value{}, it.fail(it.off-n, "decimal mantissa too large")
	}
	it.read = canonical(k, m)
	return chunk.Float(float64(m) / pow10[k]), true
}
