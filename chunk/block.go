package chunk

import (
	"math"
	"unsafe"
)

// A Block is a run of decoded points: their timestamps, and their values
// as Value bits with a mask saying which are ints. Block returns one.
type Block struct {
	T    []int64 // timestamps, increasing
	bits []int64
	ints uint64 // bit i set: point i is an int
}

// Len returns the number of points in the block.
func (b *Block) Len() int { return len(b.T) }

// Value returns point i's value.
func (b *Block) Value(i int) Value {
	return Value{bits: uint64(b.bits[i]), isInt: b.ints>>(uint(i)&63)&1 != 0}
}

// Float returns point i's value as a float64, as Value.Float does.
func (b *Block) Float(i int) float64 {
	if b.ints>>(uint(i)&63)&1 != 0 {
		return float64(b.bits[i])
	}
	return math.Float64frombits(uint64(b.bits[i]))
}

// Floats returns the block's values as float64s, and true, when none of
// them is an int: the values' bits as they are, not copied, valid as long
// as the block is. With an int among them it returns nil, false.
func (b *Block) Floats() ([]float64, bool) {
	ints := b.ints
	if n := len(b.bits); n < 64 {
		ints &= 1<<uint(n) - 1
	}
	if ints != 0 {
		return nil, false
	}
	// A float64 and an int64 have the same size and alignment.
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b.bits))), len(b.bits)), true
}

// BlockEnd returns the timestamp of the last point Block would return,
// without moving: a caller can tell whether the whole block is what it
// wants before it takes it. Valid when Block is.
func (it *Iterator) BlockEnd() int64 {
	return it.tbuf[(min(it.n, batch)-1)&(batch-1)]
}

// Block returns the current point and the points after it that are
// already decoded: 1 to 64 points, in order. It moves the position to the
// last of them, so that the next Next decodes the next block. It is valid
// after Next or SeekTo returned true; the slices stay valid until the
// next Next, SeekTo or Reset. A loop over a chunk's points by blocks:
//
//	for ok := it.Next(); ok; ok = it.Next() {
//		b := it.Block()
//		for i, t := range b.T {
//			use(t, b.Value(i))
//		}
//	}
//	if err := it.Err(); err != nil { ... }
//
// It costs a loop over a slice per point instead of a Next and an At.
func (it *Iterator) Block() Block {
	p, n := it.pos&(batch-1), min(it.n, batch)
	if p >= n {
		return Block{}
	}
	it.pos = n - 1
	return Block{T: it.tbuf[p:n], bits: it.vbuf[p:n], ints: it.kinds >> p}
}
