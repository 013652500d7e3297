package rollup

import (
	"fmt"
	"math/bits"

	"hourglass/chunk"
)

// Add, the point-by-point form of AddPoints that the flusher used until
// 3c3f30a, is kept here as the reference that FuzzAddPoints and the
// resume tests hold AddPoints to: the server calls AddPoints alone.
//
// Add adds the point (t, v). Points must come in increasing time order;
// Add returns an error for a point not after the previous one and
// ignores it. When t starts a new bucket, the finished bucket is appended
// to dst, and dst is returned.
func (b *Builder) Add(dst []Bucket, t int64, v chunk.Value) ([]Bucket, error) {
	if b.open && t <= b.prevT {
		return dst, fmt.Errorf("rollup: point at %d ms is not after the previous one at %d ms", t, b.prevT)
	}
	// t is after the previous point, so at or after the bucket's start:
	// it starts a new bucket exactly when it is past the bucket's end
	// (no division for the points of the current bucket).
	if !b.open || t-b.cur.Start >= b.interval {
		dst = b.Flush(dst)
		b.cur.Start = BucketStart(t, b.interval)
		b.open = true
	}
	b.prevT = t
	if IsStale(v) {
		b.cur.StaleEnd = true
		return dst, nil
	}
	b.cur.StaleEnd = false
	b.cur.Count++
	if f := v.Float(); f != f {
		b.cur.NaN++
		return dst, nil
	}
	b.addValue(t, v)
	return dst, nil
}

func (b *Builder) addValue(t int64, v chunk.Value) {
	c := &b.cur
	if c.Count-c.NaN == 1 {
		c.FirstT, c.First, c.Min, c.Max = t, v, v, v
		b.allInt = v.IsInt()
	} else {
		p, f := c.Last.Float(), v.Float()
		if f != p {
			c.Changes++
		}
		if f < p {
			c.Resets++
			c.Correction += p
		}
		if less(v, c.Min) {
			c.Min = v
		}
		if less(c.Max, v) {
			c.Max = v
		}
		b.allInt = b.allInt && v.IsInt()
	}
	c.LastT, c.Last = t, v
	b.fsum += v.Float()
	if v.IsInt() {
		x := v.Int()
		var carry uint64
		b.lo, carry = bits.Add64(b.lo, uint64(x), 0)
		b.hi, _ = bits.Add64(b.hi, uint64(x>>63), carry)
	}
}
