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
	flagUnknown = ^byte(flagSumOverflow | flagStaleEnd | flagNaN | flagResets | flagValues)
)

// Value header kinds (low two bits of a value's header byte).
const (
	kindInt     = 0
	kindDecimal = 1
	kindFloat   = 2
	headerDelta = 1 << 2
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
		dst = appendBucket(dst, b, &prevLast)
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

func appendBucket(dst []byte, b *Bucket, prevLast *chunk.Value) []byte {
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
	if b.N() > 0 {
		flags |= flagValues
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
	dst = binary.AppendUvarint(dst, uint64(b.LastT-b.FirstT))
	dst = appendValue(dst, b.First, *prevLast, true)
	dst = appendValue(dst, b.Last, b.First, true)
	dst = appendValue(dst, b.Min, b.First, true)
	dst = appendValue(dst, b.Max, b.First, true)
	dst = appendValue(dst, b.Sum, b.First, false)
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
	return binary.BigEndian.AppendUint64(append(dst, kindFloat), v.Bits())
}
