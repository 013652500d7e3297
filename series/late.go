package series

import (
	"encoding/binary"
	"errors"
	"fmt"

	"hourglass/chunk"
	"hourglass/rowkey"
)

// Late points: a point for an hour already past its grace (by the series'
// newest point or by the wall clock) goes to a late chunk of its
// series-hour, which keeps taking the points of that hour until it is
// full, its LateGrace passes or the late chunks of the head hold
// LateMaxPoints; then it is sealed and the flusher merges it into the row
// (flusher.go), folding the row's cells when they pile up. Re-sending an
// hour thus costs about what sending it did: a chunk per ChunkMaxPoints
// points, not one per point.

// FoldSlack is how many cells past twice the fewest that could hold its
// points a row may have before the flusher folds it (rewrites all of this
// writer's cells of the row as full ones).
const FoldSlack = 4

// newOpenChunk returns an open chunk for hour, late if the hour is past its
// grace by the series' newest point maxT or the wall clock now (unix ms).
// A chunk opened behind maxT is pinned: the series' newer points do not
// seal it (they would seal it at once, a chunk per point). One late by the
// clock alone (a backfill, in order) still seals once maxT passes it.
// An in-time chunk starts with room for lastPts points (the series' last
// chunk's, at most -chunk-max-points) up to freezeAt, the raw points it
// gathers before they are frozen (head_frozen.go): a steady feed then
// fills it without regrowing it.
// A late chunk starts with room for lastLate points (the series' last late
// chunk's, at most -chunk-max-points), at least one and at most freezeAt:
// late points that come one per row keep late chunks small, and a backfill
// (a late chunk of every hour, each filled, in order) freezes its points
// into packed blocks (head_frozen.go) instead of holding them raw until
// the chunk seals.
func (h *Head) newOpenChunk(hour int64, seg int, maxT, now int64, lastPts, lastLate int) *openChunk {
	end := hour + rowkey.HourMs + h.opts.Grace.Milliseconds()
	if end <= max(maxT, now) {
		return &openChunk{hour: hour, minSeg: seg, pts: make([]chunk.Point, 0, min(freezeAt, max(1, min(lastLate, h.opts.ChunkMaxPoints)))), late: true,
			pinned: end <= maxT, deadline: now + h.opts.LateGrace.Milliseconds()}
	}
	return &openChunk{hour: hour, minSeg: seg, pts: make([]chunk.Point, 0, min(freezeAt, max(16, min(lastPts, h.opts.ChunkMaxPoints))))}
}

// addLate counts n points added to late chunks (each chunk's lateN counted
// under its series' lock) and reports whether the late chunks are past
// their bound.
func (h *Head) addLate(n int64) bool {
	h.m.latePoints.Add(float64(n))
	return h.latePoints.Add(n) > h.opts.LateMaxPoints
}

// due reports whether the sweep at now (unix ms) seals c: an on-time chunk
// once its hour and grace have passed, a late one at its deadline.
func (h *Head) due(c *openChunk, now, graceMs int64) bool {
	if c.late {
		return c.deadline <= now
	}
	return c.hour+rowkey.HourMs+graceMs <= now
}

// sealLateEarly seals every late chunk: their points passed the bound. One
// caller at a time does it; the others go on (the head may pass the bound
// by what they append meanwhile).
func (h *Head) sealLateEarly() {
	if !h.lateSealing.CompareAndSwap(false, true) {
		return
	}
	defer h.lateSealing.Store(false)
	h.m.lateEarlySeals.Inc()
	h.sealWhere(func(c *openChunk) bool { return c.late })
}

// packedSize is the bytes of one point in a late chunk's frozen block
// (head_frozen.go): its offset in the hour in milliseconds, 22 bits, with
// bit 31 set for an integer value, as a little-endian uint32, then the
// value's 64 bits (chunk.Value.Bits) as a little-endian uint64. Half a
// raw chunk.Point, and written and read without a branch on the data.
const (
	packedSize = 12
	packedInt  = 1 << 31
)

// errPackedRange: a point outside the packed block's hour.
var errPackedRange = errors.New("series: point outside the hour of a packed block")

// appendPacked appends pts, all in [hour, hour+1h), to dst as a packed
// block; a point outside the hour is an error and dst is returned as it was.
func appendPacked(dst []byte, hour int64, pts []chunk.Point) ([]byte, error) {
	n := len(dst)
	for _, p := range pts {
		if p.T < hour || p.T >= hour+rowkey.HourMs {
			return dst[:n], fmt.Errorf("%w: %d not in [%d, %d)", errPackedRange, p.T, hour, hour+rowkey.HourMs)
		}
		off := uint32(p.T - hour)
		if p.V.IsInt() {
			off |= packedInt
		}
		dst = binary.LittleEndian.AppendUint32(dst, off)
		dst = binary.LittleEndian.AppendUint64(dst, p.V.Bits())
	}
	return dst, nil
}

// decodePacked appends the points of the packed block b of hour to dst.
func decodePacked(dst []chunk.Point, b []byte, hour int64) ([]chunk.Point, error) {
	if len(b)%packedSize != 0 {
		return dst, fmt.Errorf("series: a packed block of %d bytes is not a whole number of %d-byte points", len(b), packedSize)
	}
	for ; len(b) >= packedSize; b = b[packedSize:] {
		off := binary.LittleEndian.Uint32(b)
		bits := binary.LittleEndian.Uint64(b[4:])
		v := chunk.FloatBits(bits)
		if off&packedInt != 0 {
			v = chunk.Int(int64(bits))
		}
		dst = append(dst, chunk.Point{T: hour + int64(off&^packedInt), V: v})
	}
	return dst, nil
}
