package series

import (
	"slices"
	"sort"

	"hourglass/chunk"
)

// freezeAt is how many raw points an open chunk gathers before it encodes
// them into a frozen block: the head then holds a point in the chunk
// format (Gorilla XOR, chunk.AppendFast: about 7 bytes for a gauge)
// instead of as a chunk.Point (24 bytes), and only the newest few raw.
// chunk.Append's smallest encoding would hold a gauge in 1.5 bytes but
// costs four times the CPU per point at this block size; the sealed
// chunk is encoded the smallest way anyway.
const freezeAt = 32

// frozen is the encoded part of an open chunk: blocks in the chunk format
// (chunk.AppendFast, base the chunk's hour), each sorted, together strictly
// increasing and, in arrival order, before every raw point of the chunk.
type frozen struct {
	blocks      [][]byte
	meta        []blockMeta // of each block, in the same order
	n           int         // points in blocks
	first, last int64       // their span, when n > 0
}

// blockMeta is what a read needs of a frozen block before it decodes it:
// which blocks a range meets, and how many points they hold (16 bytes a
// block of freezeAt points, beside the 7-12 bytes a point of the block).
type blockMeta struct {
	first int64 // the block's first timestamp
	n     int   // its points
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
	var b []byte
	var err error
	if oc.late {
		b, err = appendPacked(make([]byte, 0, packedSize*len(pts)), oc.hour, pts)
	} else {
		b, err = chunk.AppendFast(make([]byte, 0, 16+8*len(pts)), oc.hour, pts)
	}
	if err != nil {
		return // not encodable (cannot happen for points of the chunk's hour): keep them raw
	}
	if oc.fz.n == 0 {
		oc.fz.first = pts[0].T
	}
	oc.fz.blocks = append(oc.fz.blocks, slices.Clip(b))
	oc.fz.meta = append(oc.fz.meta, blockMeta{first: pts[0].T, n: len(pts)})
	oc.fz.n += len(pts)
	oc.fz.last = pts[len(pts)-1].T
	clear(pts)
	oc.pts = pts[:0]
}

// appendAll appends every point of the open chunk to dst in arrival order
// (the frozen ones decoded, then the raw ones).
func (oc *openChunk) appendAll(dst []chunk.Point) []chunk.Point {
	for _, b := range oc.fz.blocks {
		dst = oc.decodeBlock(dst, b)
	}
	return append(dst, oc.pts...)
}

// decodeBlock appends the points of the frozen block b to dst: packed in a
// late chunk, in the chunk format in an in-time one.
func (oc *openChunk) decodeBlock(dst []chunk.Point, b []byte) []chunk.Point {
	var err error
	if oc.late {
		dst, err = decodePacked(dst, b, oc.hour)
	} else {
		dst, err = chunk.Decode(dst, b, oc.hour)
	}
	if err != nil {
		panic("series: a frozen block of an open chunk does not decode: " + err.Error())
	}
	return dst
}

// thaw returns every point of the open chunk as raw points (in arrival
// order) and forgets the frozen blocks: for changes that rewrite them.
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
		n += m.n
	}
	return n
}

// appendRange appends the open chunk's points in [start, end] to dst, in
// arrival order: of the frozen blocks, only those frozenIn gives are
// decoded.
func (oc *openChunk) appendRange(dst []chunk.Point, start, end int64) []chunk.Point {
	lo, hi := oc.frozenIn(start, end)
	for _, b := range oc.fz.blocks[lo:hi] {
		n := len(dst)
		dst = oc.decodeBlock(dst, b)
		if dst[n].T >= start && dst[len(dst)-1].T <= end {
			continue // the block is wholly in range
		}
		keep := dst[:n]
		for _, p := range dst[n:] {
			if p.T >= start && p.T <= end {
				keep = append(keep, p)
			}
		}
		dst = keep
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
