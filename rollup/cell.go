package rollup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"hourglass/chunk"
)

// Version is the cell format version this package writes and reads.
const Version = 1

// Bucket flags (docs/format/rollup.md).
const (
	flagSumOverflow = 1 << iota
	flagStaleEnd
	flagNaN
	flagResets
	flagValues
	flagUniform // last, min and max share first's kind (and scale): no headers
	flagUnknown = ^byte(flagSumOverflow | flagStaleEnd | flagNaN | flagResets | flagValues | flagUniform)
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
	var prevLast chunk.Value
	for i := range bs {
		b := &bs[i]
		if err := checkBucket(b, next, intervalMs); err != nil {
			return dst, fmt.Errorf("%w: bucket %d: %v", ErrInvalidBuckets, i, err)
		}
		dst = binary.AppendUvarint(dst, uint64((b.Start-next)/intervalMs))
		next = b.Start + intervalMs
		dst = appendBucket(dst, b, intervalMs, &prevLast)
	}
	return dst, nil
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

func appendBucket(dst []byte, b *Bucket, interval int64, prevLast *chunk.Value) []byte {
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
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(b.Count))
	if flags&flagNaN != 0 {
		dst = binary.AppendUvarint(dst, uint64(b.NaN))
	}
	if flags&flagValues == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(b.FirstT-b.Start))
	dst = binary.AppendUvarint(dst, uint64(b.Start+interval-1-b.LastT))
	dst = appendValue(dst, b.First, *prevLast, true)
	if flags&flagUniform != 0 {
		_, fm := mantissa(b.First)
		for _, v := range [3]chunk.Value{b.Last, b.Min, b.Max} {
			_, m := mantissa(v)
			dst = binary.AppendVarint(dst, m-fm)
		}
	} else {
		dst = appendValue(dst, b.Last, b.First, true)
		dst = appendValue(dst, b.Min, b.First, true)
		dst = appendValue(dst, b.Max, b.First, true)
	}
	dst = appendSum(dst, b.Sum, b.First, b.N())
	dst = binary.AppendUvarint(dst, uint64(b.Changes))
	if flags&flagResets != 0 {
		dst = binary.AppendUvarint(dst, uint64(b.Resets))
		dst = appendValue(dst, chunk.Float(b.Correction), chunk.Value{}, false)
	}
	*prevLast = b.Last
	return dst
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

// appendSum writes the sum, as its difference from n·first (in the
// mantissas, with wrapping arithmetic) where first and the sum are ints, or
// decimals (exact or near) of first's scale; a constant's sum costs one
// byte beyond its header.
func appendSum(dst []byte, sum, first chunk.Value, n int64) []byte {
	fh, fm := mantissa(first)
	if first.IsInt() && sum.IsInt() {
		return binary.AppendVarint(append(dst, kindInt|headerDelta), sum.Int()-n*fm)
	}
	if first.IsInt() || sum.IsInt() || fh&3 != kindDecimal {
		return appendValue(dst, sum, chunk.Value{}, false)
	}
	if sh, sm := mantissa(sum); header(sum) == fh {
		return binary.AppendVarint(append(dst, sh|headerDelta), sm-n*fm)
	}
	k := int(fh >> 3)
	f := sum.Float()
	x := math.Round(f * pow10[k])
	if k > maxNearK || math.IsInf(f, 0) || f != f || math.Abs(x) >= 1<<53 {
		return appendValue(dst, sum, chunk.Value{}, false)
	}
	m := int64(x)
	d := int64(math.Float64bits(f)) - int64(math.Float64bits(float64(m)/pow10[k]))
	dst = binary.AppendVarint(append(dst, byte(kindNear|k<<3|headerDelta)), m-n*fm)
	return binary.AppendVarint(dst, d)
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
			x := math.Round(f * pow10[k])
			if math.Abs(x) >= 1<<53 {
				break
			}
			m := int64(x)
			d := int64(math.Float64bits(f)) - int64(math.Float64bits(float64(m)/pow10[k]))
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
