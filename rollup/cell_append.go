package rollup

import (
	"encoding/binary"
	"fmt"
	"math"
)

// CellEnd is what appending a bucket after the last one of a cell needs to
// know of the cell: how many buckets it holds, the start a next bucket
// would have with gap 0, and the Last and Sum of its last bucket with
// values (the references of the next First and Sum). AppendCellEnd and
// AppendBucket return it.
type CellEnd struct {
	N    uint64
	Next int64
	refs cellRefs
}

// AppendCellEnd is AppendCell, and also returns the cell's CellEnd.
func AppendCellEnd(dst []byte, baseMs, intervalMs int64, bs []Bucket) ([]byte, CellEnd, error) {
	dst, err := AppendCell(dst, baseMs, intervalMs, bs)
	if err != nil {
		return dst, CellEnd{}, err
	}
	e := CellEnd{N: uint64(len(bs)), Next: baseMs}
	for i := range bs {
		e.Next = bs[i].Start + intervalMs
		if bs[i].N() > 0 {
			e.refs.prevLast = bs[i].Last
			var scratch [1 + 2*binary.MaxVarintLen64]byte
			appendSum(scratch[:0], bs[i].Sum, &e.refs.sum)
		}
	}
	return dst, e, nil
}

// AppendBucket appends to dst the cell made of cell (a cell of interval
// intervalMs whose end is e) followed by b, and returns it with its end:
// the bytes AppendCell writes for the buckets of cell and b, without
// decoding cell. b.Start must be at or after e.Next. cell is not changed.
func AppendBucket(dst, cell []byte, intervalMs int64, e CellEnd, b *Bucket) ([]byte, CellEnd, error) {
	if intervalMs <= 0 || intervalMs > math.MaxInt64/2 || len(cell) == 0 || cell[0] != Version {
		return dst, e, fmt.Errorf("%w: not a cell of interval %d ms", ErrInvalidBuckets, intervalMs)
	}
	iv, n1 := binary.Uvarint(cell[1:])
	if n1 <= 0 || iv != uint64(intervalMs) {
		return dst, e, fmt.Errorf("%w: the cell's interval is not %d ms", ErrInvalidBuckets, intervalMs)
	}
	count, n2 := binary.Uvarint(cell[1+n1:])
	if n2 <= 0 || count != e.N {
		return dst, e, fmt.Errorf("%w: the cell holds %d buckets, its end says %d", ErrInvalidBuckets, count, e.N)
	}
	if err := checkBucket(b, e.Next, intervalMs); err != nil {
		return dst, e, fmt.Errorf("%w: appended bucket: %v", ErrInvalidBuckets, err)
	}
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, uint64(intervalMs))
	dst = binary.AppendUvarint(dst, count+1)
	dst = append(dst, cell[1+n1+n2:]...)
	dst = binary.AppendUvarint(dst, uint64((b.Start-e.Next)/intervalMs))
	refs := e.refs
	dst = appendBucket(dst, b, intervalMs, &refs)
	return dst, CellEnd{N: count + 1, Next: b.Start + intervalMs, refs: refs}, nil
}
