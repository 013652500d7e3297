package rollup

import (
	"encoding/binary"
	"fmt"
	"math"

	"hourglass/chunk"
)

// The version 1 encoder, kept for the tests: cells written before version
// 2 must still read (testdata/*-v1.cell, TestReadsVersion1, FuzzIterator).

// appendCellV1 is AppendCell as version 1 wrote it.
func appendCellV1(dst []byte, baseMs, intervalMs int64, bs []Bucket) ([]byte, error) {
	if intervalMs <= 0 || intervalMs > math.MaxInt64/2 || baseMs > maxBase || baseMs < -maxBase {
		return dst, fmt.Errorf("%w: interval %d ms, base %d ms", ErrInvalidBuckets, intervalMs, baseMs)
	}
	dst = append(dst, version1)
	dst = binary.AppendUvarint(dst, uint64(intervalMs))
	dst = binary.AppendUvarint(dst, uint64(len(bs)))
	next := baseMs
	var prevLast chunk.Value
	for i := range bs {
		b := &bs[i]
		if err := checkBucket(b, next, intervalMs); err != nil {
			return dst, fmt.Errorf("%w: bucket %d: %v", ErrInvalidBuckets, i, err)
		}
		dst = binary.AppendUvarint(dst, uint64((b.Start-next)/intervalMs))
		next = b.Start + intervalMs
		dst = appendBucketV1(dst, b, intervalMs, &prevLast)
	}
	return dst, nil
}

func appendBucketV1(dst []byte, b *Bucket, interval int64, prevLast *chunk.Value) []byte {
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
	dst = appendSumV1(dst, b.Sum, b.First, b.N())
	dst = binary.AppendUvarint(dst, uint64(b.Changes))
	if flags&flagResets != 0 {
		dst = binary.AppendUvarint(dst, uint64(b.Resets))
		dst = appendValue(dst, chunk.Float(b.Correction), chunk.Value{}, false)
	}
	*prevLast = b.Last
	return dst
}

// appendSum writes the sum, as its difference from n·first (in the
// mantissas, with wrapping arithmetic) where first and the sum are ints, or
// decimals (exact or near) of first's scale; a constant's sum costs one
// byte beyond its header.
func appendSumV1(dst []byte, sum, first chunk.Value, n int64) []byte {
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
