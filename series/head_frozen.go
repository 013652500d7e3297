package series

import (
	"cmp"
	"slices"
	"sort"

	"hourglass/chunk"
)

// freezeAt is how many raw points an open chunk gathers before it encodes
// them into a frozen block: the head then holds a point in the chunk
// format (chunk.AppendFast: a two-decimal gauge's or a counter's steps in
// one fixed width, about 1.3-1.6 bytes a point, other floats Gorilla XOR,
// about 7) instead of as a chunk.Point (24 bytes), and only the newest few
// raw. chunk.Append's smallest encoding costs several times the CPU per
// point at this block size for little less; the sealed chunk is encoded
// the smallest way anyway.
const freezeAt = 32

// frozen is the encoded part of an open chunk: blocks in the chunk format
// (chunk.AppendFast, base the chunk's hour), packed ones in a late chunk,
// each sorted, together strictly increasing and, in arrival order, before
// every raw point of the chunk. The blocks lie one after the other in one
// byte slice, grown as blocks come and let go when the chunk seals (thaw):
// a query reads them in the order they lie in memory, where an allocation
// of its own per block (288 bytes) cost a cache miss at each block's first
// byte, and they take their own size, not their allocation's size class.
type frozen struct {
	buf         []byte      // the blocks, one after the other
	meta        []blockMeta // of each block, in the same order
	n           int         // points in blocks
	first, last int64       // their span, when n > 0
}

// blockMeta is what a read needs of a frozen block before it decodes it:
// where it lies in the buffer, which blocks a range meets and how many
// points they hold (16 bytes a block of freezeAt points, beside the 1.3-12
// bytes a point of the block).
type blockMeta struct {
	first int64  // the block's first timestamp
	end   uint32 // its end in buf; it starts where the one before ends
	n     uint32 // its points
}

// blocks returns the bytes of the frozen blocks lo to hi-1, which lie one
// after the other.
func (fz *frozen) blocks(lo, hi int) []byte {
	if lo >= hi {
		return nil
	}
	start := uint32(0)
	if lo > 0 {
		start = fz.meta[lo-1].end
	}
	return fz.buf[start:fz.meta[hi-1].end]
}

// length is the points the open chunk holds, frozen and raw.
func (oc *openChunk) length() int { return oc.fz.n + len(oc.pts) }

// freeze encodes the raw points into a block when there are freezeAt of
// them, strictly increasing and after the frozen ones; otherwise (points
// out of order: late ones, rewrites) they stay raw until the chunk seals.
// Late chunks (late.go) freeze too, but into packed blocks of 12 bytes a
// point (appendPacked), which cost next to nothing to write and read: in a
// backfill every chunk is late, its raw points were most of the head's
// memory, and a late chunk seals within -late-grace, so its blocks are
// short-lived.
// The raw slice is kept for the next points.
func (oc *openChunk) freeze() {
	pts := oc.pts
	if len(pts) < freezeAt || (oc.fz.n > 0 && pts[0].T <= oc.fz.last) {
		return
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].T <= pts[i-1].T {
			return
		}
	}
	buf := oc.grow(len(pts))
	var err error
	if oc.late {
		buf, err = appendPacked(buf, oc.hour, pts)
	} else {
		buf, err = chunk.AppendFast(buf, oc.hour, pts)
	}
	if err != nil {
		return // not encodable (cannot happen for points of the chunk's hour): keep them raw
	}
	if oc.fz.n == 0 {
		oc.fz.first = pts[0].T
	}
	oc.fz.buf = buf
	oc.fz.meta = append(oc.fz.meta, blockMeta{first: pts[0].T, end: uint32(len(buf)), n: uint32(len(pts))})
	oc.fz.n += len(pts)
	oc.fz.last = pts[len(pts)-1].T
	clear(pts)
	oc.pts = pts[:0]
}

// grow returns the frozen buffer with room for a block of n points: an
// upper bound of an XOR block of a gauge's, or, after a block of the
// chunk format, that block's size and a quarter (an int or decimal
// block's steps vary little in width: about 45 bytes for 32 points of a
// two-decimal gauge, where the bound is 272); a block that outgrows it
// grows the buffer itself. It grows by a quarter of what the buffer holds (a
// few copies over the chunk's life, about a fifth of it empty at worst);
// in a chunk that expects a number of points (its series' last one held
// them), by half, but no further than the points still expected take at
// its bytes a point so far, plus a block: such a chunk ends with its
// buffer about full. The new buffer is allocated at the capacity asked
// (append rounds it up to its size class), not at append's own growth.
func (oc *openChunk) grow(n int) []byte {
	need := 16 + 8*n
	if oc.late {
		need = packedSize * n
	} else if k := len(oc.fz.meta); k > 0 {
		last := int(oc.fz.meta[k-1].end)
		if k > 1 {
			last -= int(oc.fz.meta[k-2].end)
		}
		need = min(need, last+last/4+8)
	}
	buf := oc.fz.buf
	if cap(buf)-len(buf) >= need {
		return buf
	}
	add := len(buf)/4 + need
	if rest := oc.expect - oc.fz.n - n; oc.fz.n > 0 && rest >= 0 {
		add = min(len(buf)/2+need, rest*len(buf)/oc.fz.n+need)
	}
	grown := append([]byte(nil), make([]byte, len(buf)+add)...)
	return grown[:copy(grown, buf)]
}

// appendAll appends every point of the open chunk to dst in arrival order
// (the frozen ones decoded, then the raw ones).
func (oc *openChunk) appendAll(dst []chunk.Point) []chunk.Point {
	if oc.fz.n > 0 {
		var it chunk.Iterator
		dst = oc.decodeBlocks(dst, &it, 0, len(oc.fz.meta))
	}
	return append(dst, oc.pts...)
}

// decodeBlocks appends the points of the frozen blocks lo to hi-1 to dst:
// in a late chunk, packed, all at once; in an in-time one, in the chunk
// format, each through it.
func (oc *openChunk) decodeBlocks(dst []chunk.Point, it *chunk.Iterator, lo, hi int) []chunk.Point {
	var err error
	if oc.late {
		dst, err = decodePacked(dst, oc.fz.blocks(lo, hi), oc.hour)
	} else {
		for i := lo; i < hi && err == nil; i++ {
			dst, err = it.Decode(dst, oc.fz.blocks(i, i+1), oc.hour)
		}
	}
	if err != nil {
		panic("series: a frozen block of an open chunk does not decode: " + err.Error())
	}
	return dst
}

// thaw returns every point of the open chunk as raw points (in arrival
// order) and forgets the frozen blocks, letting their buffer go: for
// changes that rewrite them, and the seal.
func (oc *openChunk) thaw() []chunk.Point {
	if oc.fz.n == 0 {
		return oc.pts
	}
	all := oc.appendAll(make([]chunk.Point, 0, oc.length()))
	oc.fz = frozen{}
	return all
}

// frozenIn returns the frozen blocks blocks[lo:hi] that may hold points in
// [start, end]: the blocks are strictly increasing, so block i holds points
// from its first timestamp to before block i+1's. A query ending at an
// hour's start (the long query's 1 h steps) meets the newest hour's open
// chunk in one point at most, and decoding its every block to keep that
// one cost as much as the rest of the query's head.
func (oc *openChunk) frozenIn(start, end int64) (lo, hi int) {
	n := len(oc.fz.meta)
	if oc.fz.n == 0 || oc.fz.last < start || oc.fz.first > end {
		return 0, 0
	}
	if oc.fz.first >= start && oc.fz.last <= end {
		return 0, n
	}
	// The first block whose successor starts after start, and the first
	// block that starts after end.
	lo = sort.Search(n-1, func(i int) bool { return oc.fz.meta[i+1].first > start })
	hi = sort.Search(n, func(i int) bool { return oc.fz.meta[i].first > end })
	return lo, max(lo, hi)
}

// countRange is an upper bound of the open chunk's points in [start, end]:
// exact for the raw ones, every point of the frozen blocks that may hold
// some (frozenIn).
func (oc *openChunk) countRange(start, end int64) int {
	n := countRange(oc.pts, start, end)
	lo, hi := oc.frozenIn(start, end)
	if lo == 0 && hi == len(oc.fz.meta) {
		return n + oc.fz.n
	}
	for _, m := range oc.fz.meta[lo:hi] {
		n += int(m.n)
	}
	return n
}

// appendRange appends the open chunk's points in [start, end] to dst, in
// arrival order: of the frozen blocks, only those frozenIn gives are
// decoded, through it (one Iterator for every chunk of a snapshot).
func (oc *openChunk) appendRange(dst []chunk.Point, it *chunk.Iterator, start, end int64) []chunk.Point {
	if lo, hi := oc.frozenIn(start, end); lo < hi {
		// The frozen points are increasing: only the first block may
		// hold points before start, and only the last ones after end.
		n := len(dst)
		if oc.fz.meta[lo].first < start {
			dst = oc.decodeBlocks(dst, it, lo, lo+1)
			i, _ := slices.BinarySearchFunc(dst[n:], start, func(p chunk.Point, t int64) int { return cmp.Compare(p.T, t) })
			dst = append(dst[:n], dst[n+i:]...)
			lo++
		}
		dst = oc.decodeBlocks(dst, it, lo, hi)
		j := len(dst)
		for j > n && dst[j-1].T > end {
			j--
		}
		dst = dst[:j]
	}
	return appendRange(dst, oc.pts, start, end)
}

// span returns the oldest and newest timestamps of the open chunk, ok
// false when it is empty.
func (oc *openChunk) span() (minT, maxT int64, ok bool) {
	if oc.fz.n > 0 {
		minT, maxT, ok = oc.fz.first, oc.fz.last, true
	}
	for _, p := range oc.pts { // raw points are in arrival order
		if !ok {
			minT, maxT, ok = p.T, p.T, true
			continue
		}
		minT, maxT = min(minT, p.T), max(maxT, p.T)
	}
	return minT, maxT, ok
}
