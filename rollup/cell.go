package rollup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"hourglass/chunk"
)

// Version is the cell format version this package writes. Its readers
// read it and version1 (docs/format/rollup.md, "Versioning").
const Version = 2

// version1 cells put a bucket's sum after its values, as a difference
// from N × First: a reader of the sums decodes every field.
const version1 = 1

// Bucket flags (docs/format/rollup.md).
const (
	flagSumOverflow = 1 << iota
	flagStaleEnd
	flagNaN
	flagResets
	flagValues
	flagUniform   // last, min and max share first's kind (and scale): no headers
	flagSumExact  // version 2: Bucket.SumExact
	flagUnknown   = ^byte(flagSumOverflow | flagStaleEnd | flagNaN | flagResets | flagValues | flagUniform | flagSumExact)
	flagUnknownV1 = flagUnknown | flagSumExact
)

// Value header kinds (low two bits of a value's header byte).
const (
	kindInt     = 0
	kindDecimal = 1
	kindFloat   = 2
	kindNear    = 3 // a decimal plus a difference in the float's bits
	headerDelta = 1 << 2
	maxNearK    = 6 // the scales tried for kindNear
	maxScale    = 15
	// maxBase bounds a cell's base time (ms), far beyond any real date, so
	// bucket starts computed from it never overflow.
	maxBase = int64(1) << 62
)

var pow10 = [maxScale + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// ErrInvalidBuckets is wrapped by every error AppendCell returns.
var ErrInvalidBuckets = errors.New("rollup: invalid buckets")

// ErrCorrupt is wrapped by every *CorruptionError.
var ErrCorrupt = errors.New("rollup: corrupt")

// CorruptionError reports a cell that cannot be decoded.
type CorruptionError struct {
	Offset int    // byte offset in the cell where decoding stopped
	Reason string // what was wrong, in lower case
}

func (e *CorruptionError) Error() string {
	return "rollup: corrupt cell at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns ErrCorrupt.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// AppendCell appends to dst the cell holding bs, buckets of interval ms
// at or after baseMs (the cell's base time, which the row key and
// qualifier carry), in increasing Start order, and returns the extended
// slice. It is a pure function, safe for concurrent use.
func AppendCell(dst []byte, baseMs, intervalMs int64, bs []Bucket) ([]byte, error) {
	if intervalMs <= 0 || intervalMs > math.MaxInt64/2 || baseMs > maxBase || baseMs < -maxBase {
		return dst, fmt.Errorf("%w: interval %d ms, base %d ms", ErrInvalidBuckets, intervalMs, baseMs)
	}
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, uint64(intervalMs))
	dst = binary.AppendUvarint(dst, uint64(len(bs)))
	next := baseMs // the start the next bucket would have with gap 0
	var refs cellRefs
	for i := range bs {
		b := &bs[i]
		if err := checkBucket(b, next, intervalMs); err != nil {
			return dst, fmt.Errorf("%w: bucket %d: %v", ErrInvalidBuckets, i, err)
		}
		dst = binary.AppendUvarint(dst, uint64((b.Start-next)/intervalMs))
		next = b.Start + intervalMs
		dst = appendBucket(dst, b, intervalMs, &refs)
	}
	return dst, nil
}

// cellRefs are the references the next bucket of a cell is written
// against: the Last of the last bucket with values (of its First) and
// that bucket's Sum as written (of its Sum).
type cellRefs struct {
	prevLast chunk.Value
	sum      sumRef
}

// sumRef is a written sum as the next sum's delta sees it: an int, or a
// scale and mantissa (a decimal's, or a near-decimal's m), or neither
// (a float written as its bits, or no sum yet).
type sumRef struct {
	kind byte // 0 none, refInt, refScaled
	k    int
	m    int64
}

const (
	refInt    = 1
	refScaled = 2
)

// maxTail bounds a bucket's tail: two uvarints, four values of at most
// 21 bytes, two uvarints and the correction.
const maxTail = 2*binary.MaxVarintLen64 + 4*(1+2*binary.MaxVarintLen64) + 2*binary.MaxVarintLen64 + 1 + 2*binary.MaxVarintLen64

// appendBucket writes a version 2 bucket after its gap: flags, counts,
// the sum, then the tail (timestamps, values, counters) after its length,
// so that a reader of the sums skips the tail.
func appendBucket(dst []byte, b *Bucket, interval int64, refs *cellRefs) []byte {
	var flags byte
	if b.SumOverflow {
		flags |= flagSumOverflow
	}
	if b.StaleEnd {
		flags |= flagStaleEnd
	}
	if b.NaN > 0 {
		flags |= flagNaN
	}
	if b.Resets > 0 || b.Correction != 0 || math.Signbit(b.Correction) {
		flags |= flagResets
	}
	var firstH byte
	if b.N() > 0 {
		flags |= flagValues
		firstH = header(b.First)
		if firstH != kindFloat && header(b.Last) == firstH && header(b.Min) == firstH && header(b.Max) == firstH {
			flags |= flagUniform
		}
		if b.sumExact() {
			flags |= flagSumExact
		}
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(b.Count))
	if flags&flagNaN != 0 {
		dst = binary.AppendUvarint(dst, uint64(b.NaN))
	}
	if flags&flagValues == 0 {
		return dst
	}
	dst = appendSum(dst, b.Sum, &refs.sum)
	var buf [maxTail]byte
	tail := binary.AppendUvarint(buf[:0], uint64(b.FirstT-b.Start))
	tail = binary.AppendUvarint(tail, uint64(b.Start+interval-1-b.LastT))
	tail = appendValue(tail, b.First, refs.prevLast, true)
	if flags&flagUniform != 0 {
		_, fm := mantissa(b.First)
		for _, v := range [3]chunk.Value{b.Last, b.Min, b.Max} {
			_, m := mantissa(v)
			tail = binary.AppendVarint(tail, m-fm)
		}
	} else {
		tail = appendValue(tail, b.Last, b.First, true)
		tail = appendValue(tail, b.Min, b.First, true)
		tail = appendValue(tail, b.Max, b.First, true)
	}
	tail = binary.AppendUvarint(tail, uint64(b.Changes))
	if flags&flagResets != 0 {
		tail = binary.AppendUvarint(tail, uint64(b.Resets))
		tail = appendValue(tail, chunk.Float(b.Correction), chunk.Value{}, false)
	}
	dst = binary.AppendUvarint(dst, uint64(len(tail)))
	refs.prevLast = b.Last
	return append(dst, tail...)
}

// appendSum writes a version 2 sum: a value whose delta, where the kinds
// allow, is from the previous sum of the cell as written (ref): an int's
// from an int, a decimal's or near-decimal's mantissa from that of a
// decimal or near-decimal of the same scale. It updates ref.
func appendSum(dst []byte, sum chunk.Value, ref *sumRef) []byte {
	if sum.IsInt() {
		x := sum.Int()
		if ref.kind == refInt {
			dst = binary.AppendVarint(append(dst, kindInt|headerDelta), x-ref.m)
		} else {
			dst = binary.AppendVarint(append(dst, kindInt), x)
		}
		*ref = sumRef{kind: refInt, m: x}
		return dst
	}
	f := sum.Float()
	if k, m, ok := decimal(f); ok {
		h := byte(kindDecimal | k<<3)
		x := m
		if ref.kind == refScaled && ref.k == k {
			h, x = h|headerDelta, m-ref.m
		}
		*ref = sumRef{kind: refScaled, k: k, m: m}
		return binary.AppendVarint(append(dst, h), x)
	}
	best, bestK := 8, -1
	var bestM, bestD int64
	var bestDelta bool
	if !math.IsInf(f, 0) && f == f {
		var buf [2 * binary.MaxVarintLen64]byte
		for k := 0; k <= maxNearK; k++ {
			m, d, ok := nearScaled(f, k)
			if !ok {
				break
			}
			xm, delta := m, ref.kind == refScaled && ref.k == k
			if delta {
				xm = m - ref.m
			}
			n := binary.PutVarint(buf[:], xm)
			n += binary.PutVarint(buf[n:], d)
			if n < best {
				best, bestK, bestM, bestD, bestDelta = n, k, m, d, delta
			}
		}
	}
	if bestK < 0 {
		*ref = sumRef{}
		return binary.BigEndian.AppendUint64(append(dst, kindFloat), math.Float64bits(f))
	}
	h, xm := byte(kindNear|bestK<<3), bestM
	if bestDelta {
		h, xm = h|headerDelta, bestM-ref.m
	}
	*ref = sumRef{kind: refScaled, k: bestK, m: bestM}
	dst = binary.AppendVarint(append(dst, h), xm)
	return binary.AppendVarint(dst, bestD)
}

func checkBucket(b *Bucket, next, interval int64) error {
	n := b.N()
	switch {
	case b.Start < next || b.Start >= maxBase || (b.Start-next)%interval != 0:
		return fmt.Errorf("start %d ms is not an interval boundary after %d ms", b.Start, next)
	case b.Count < 0 || b.NaN < 0 || n < 0:
		return fmt.Errorf("count %d, nan %d", b.Count, b.NaN)
	case b.Count == 0 && !b.StaleEnd:
		return errors.New("empty bucket")
	case n == 0:
		return nil
	case b.FirstT < b.Start || b.LastT < b.FirstT || b.LastT-b.Start >= interval:
		return fmt.Errorf("first %d ms and last %d ms not inside the bucket at %d ms", b.FirstT, b.LastT, b.Start)
	case b.Changes < 0 || b.Changes >= n || b.Resets < 0 || b.Resets > b.Changes:
		return fmt.Errorf("changes %d, resets %d of %d points", b.Changes, b.Resets, n)
	case b.SumOverflow && b.Sum.IsInt():
		return errors.New("an overflowed sum must be a float")
	}
	return nil
}

// header returns the kind and scale bits a value's header would have:
// kindInt, kindDecimal|k<<3, or kindFloat for anything else.
func header(v chunk.Value) byte {
	if v.IsInt() {
		return kindInt
	}
	if k, _, ok := decimal(v.Float()); ok {
		return byte(kindDecimal | k<<3)
	}
	return kindFloat
}

// mantissa returns the header of an int or decimal value and its integer:
// the int itself or the decimal's m.
func mantissa(v chunk.Value) (byte, int64) {
	if v.IsInt() {
		return kindInt, v.Int()
	}
	k, m, ok := decimal(v.Float())
	if !ok {
		return kindFloat, 0
	}
	return byte(kindDecimal | k<<3), m
}

// decimal returns k and m with float64(m)/10^k == f, bit for bit, for the
// smallest k ≤ maxScale, or ok false.
func decimal(f float64) (k int, m int64, ok bool) {
	if f == 0 {
		return 0, 0, !math.Signbit(f)
	}
	if f != f || math.IsInf(f, 0) {
		return 0, 0, false
	}
	for k = 0; k <= maxScale; k++ {
		x := f * pow10[k]
		if math.Abs(x) >= 1<<53 {
			return 0, 0, false
		}
		m = int64(math.Round(x))
		if float64(m)/pow10[k] == f {
			return k, m, true
		}
	}
	return 0, 0, false
}

// appendValue writes v, as a delta from ref where both share a kind (and
// a scale) and delta is allowed.
func appendValue(dst []byte, v, ref chunk.Value, delta bool) []byte {
	if v.IsInt() {
		x := v.Int()
		if delta && ref.IsInt() {
			return binary.AppendVarint(append(dst, kindInt|headerDelta), x-ref.Int())
		}
		return binary.AppendVarint(append(dst, kindInt), x)
	}
	if k, m, ok := decimal(v.Float()); ok {
		h := byte(kindDecimal | k<<3)
		if delta && !ref.IsInt() {
			if rk, rm, rok := decimal(ref.Float()); rok && rk == k {
				return binary.AppendVarint(append(dst, h|headerDelta), m-rm)
			}
		}
		return binary.AppendVarint(append(dst, h), m)
	}
	return appendNear(dst, v.Float())
}

// appendNear writes a float that is no short decimal: as the decimal
// m/10^k nearest to it plus the difference of the bits (a float sum of
// decimals lies a few ulps from one), when that is shorter than the 8
// bytes of the bits; otherwise as the bits.
func appendNear(dst []byte, f float64) []byte {
	var buf [2 * binary.MaxVarintLen64]byte
	best, bestK := 8, -1
	var bestBuf [2 * binary.MaxVarintLen64]byte
	if !math.IsInf(f, 0) && f == f {
		for k := 0; k <= maxNearK; k++ {
			m, d, ok := nearScaled(f, k)
			if !ok {
				break
			}
			n := binary.PutVarint(buf[:], m)
			n += binary.PutVarint(buf[n:], d)
			if n < best {
				best, bestK, bestBuf = n, k, buf
			}
		}
	}
	if bestK < 0 {
		return binary.BigEndian.AppendUint64(append(dst, kindFloat), math.Float64bits(f))
	}
	return append(append(dst, byte(kindNear|bestK<<3)), bestBuf[:best]...)
}

// nearScaled is f as m/10^k with the bits it differs by, d (the near form
// of a float); ok is false once f×10^k is past 2^53, where no larger k fits.
func nearScaled(f float64, k int) (m, d int64, ok bool) {
	x := math.Round(f * pow10[k])
	if math.Abs(x) >= 1<<53 {
		return 0, 0, false
	}
	m = int64(x)
	return m, int64(math.Float64bits(f)) - int64(math.Float64bits(float64(m)/pow10[k])), true
}
