package series

import (
	"slices"
	"sync"

	"hourglass/chunk"
)

// Thin says which points of a snapshot a reader takes: a PromQL instant
// vector selector takes, at each evaluation time T0, T0+Step, ... up to
// End (T0 alone when Step is 0), the newest point at or before it, so of
// the points after one evaluation time and up to the next (all up to T0
// for the first) only the last can matter; every point after the last
// evaluation time is kept.
type Thin struct{ T0, Step, End int64 }

// step returns the evaluation time whose points t is among: the first at
// or after t, or t itself past the last one.
func (th *Thin) step(t int64) int64 {
	if t <= th.T0 {
		return th.T0
	}
	if th.Step <= 0 {
		return t
	}
	r := th.T0 + (t-th.T0+th.Step-1)/th.Step*th.Step
	if r > th.End {
		return t
	}
	return r
}

// appendThin appends to dst the last of pts before each evaluation time,
// and every point past the last one, if pts are strictly increasing
// (false, dst as it was, otherwise).
func (th *Thin) appendThin(dst, pts []chunk.Point) ([]chunk.Point, bool) {
	if len(pts) == 0 {
		return dst, true
	}
	if th.Step > 0 {
		// Room for a point per step the points span, in one growth.
		dst = slices.Grow(dst, int(min(int64(len(pts)), (pts[len(pts)-1].T-pts[0].T)/th.Step+2)))
	}
	n := len(dst)
	r := th.step(pts[0].T) // the evaluation time of pts[last]
	last := 0
	for i := 1; i < len(pts); i++ {
		t := pts[i].T
		if t <= pts[i-1].T {
			return dst[:n], false
		}
		if t <= r {
			last = i // a later point before the same evaluation time
			continue
		}
		dst = append(dst, pts[last])
		last = i
		// Most often the next evaluation time: no division. (r past the
		// last one is a point's own time, and r+Step then past End.)
		if nr := r + th.Step; th.Step > 0 && t <= nr && nr <= th.End {
			r = nr
		} else {
			r = th.step(t)
		}
	}
	return append(dst, pts[last]), true
}

// thinBufs pools the scratch slices SnapshotThin gathers a series' points
// in before it thins them.
var thinBufs = sync.Pool{New: func() any { return new([]chunk.Point) }}

// thinBufKeep is the capacity up to which a scratch slice is pooled.
const thinBufKeep = 1 << 16

// SnapshotThin is Snapshot thinned as th says: of the points Snapshot
// would append, only those th keeps, which a reader that thins the merge
// of the store's points and the head's the same way (query's
// thinIterator) takes the same from. It returns the points appended to
// dst and how many Snapshot would have appended (for a query's sample
// budget). The series' points are gathered, sorted and thinned in a
// scratch slice that stays in cache (sorted only when they are not), and
// only the kept ones are written to dst: an instant selector at 1 m steps over 10 s samples keeps a
// sixth of them.
func (h *Head) SnapshotThin(l Labels, start, end int64, th Thin, dst []chunk.Point) ([]chunk.Point, int) {
	s := h.shard(l).get(l)
	if s == nil {
		return dst, 0
	}
	bp := thinBufs.Get().(*[]chunk.Point)
	buf := (*bp)[:0]
	s.mu.Lock()
	buf = s.appendPoints(buf, start, end)
	s.mu.Unlock()
	dst, ok := th.appendThin(dst, buf)
	if !ok {
		// Out of order (late points, rewrites): sorted first.
		buf = SortDedup(buf)
		dst, _ = th.appendThin(dst, buf)
	}
	n := len(buf)
	if cap(buf) <= thinBufKeep {
		*bp = buf[:0]
		thinBufs.Put(bp)
	}
	return dst, n
}
