package query

import (
	"context"
	"sync"

	"hourglass/chunk"
	"hourglass/series"
)

// BatchHead is a Head that reads many series in one call and may fail:
// cluster.Node, which adds the heads of the other nodes sharing the store
// (their points not yet in it). The engine prefers it when its head has
// it; maxPoints is the query's raw points bound (0: none).
type BatchHead interface {
	Head
	Snapshots(ctx context.Context, ls []series.Labels, start, end int64, maxPoints int) ([][]chunk.Point, error)
}

// headSnapshots fills each entry's head points, through BatchHead when the
// engine's head has it. Otherwise every series' points go into one buffer
// from headBufs, which it returns (nil through BatchHead): the caller gives
// it back with putHeadBuf once nothing reads the points (a consuming scan
// when it returns, a PromQL querier when it closes). A new slice per
// series per query was a tenth of a query's CPU right after the writes,
// when the head holds the newest hour of every series.
func (e *Engine) headSnapshots(ctx context.Context, entries []*series.Entry, scs []seriesCells, start, end int64, lim pointLimit) (*headBuf, error) {
	bh, ok := e.head.(BatchHead)
	if !ok {
		buf := headBufs.Get().(*headBuf)
		dst := buf.pts[:0]
		total := 0
		for i, en := range entries {
			n := len(dst)
			// Each series is snapshot into the buffer's free tail. One that
			// does not fit gets an array of its own from Snapshot, and the
			// buffer is not grown: growing one shared array as series come
			// kept every outgrown array alive through the series that point
			// into it, ~5 times the points at append's 1.25 growth (the
			// soak's heap: 131 MB of 282 MB in use were such arrays).
			out := e.head.Snapshot(en.Labels, start, end, dst[n:n])
			if len(out) > 0 && cap(dst) > n && &out[0] == &dst[:n+1][n] {
				dst = dst[:n+len(out)]
			}
			scs[i].head = out[:len(out):len(out)]
			total += len(out)
			// The limit and the deadline as the points come, not once the
			// whole head is copied: a query over more of the head than it
			// may read stops within one series of the bound.
			if lim.over(int64(total)) {
				buf.pts, buf.need = dst, total
				putHeadBuf(buf)
				return nil, e.exceeded(lim.err(int64(total)))
			}
			if i%256 == 255 {
				if err := ctx.Err(); err != nil {
					buf.pts, buf.need = dst, total
					putHeadBuf(buf)
					return nil, err
				}
			}
		}
		buf.pts, buf.need = dst, total
		return buf, nil
	}
	ls := make([]series.Labels, len(entries))
	for i, en := range entries {
		ls[i] = en.Labels
	}
	heads, err := bh.Snapshots(ctx, ls, start, end, lim.max)
	if err != nil {
		return nil, err
	}
	for i := range entries {
		scs[i].head = heads[i]
	}
	return nil, nil
}

// headBuf is a pooled buffer of head points: pts, and need, the points
// the query that used it last read, which size it for the next.
type headBuf struct {
	pts  []chunk.Point
	need int
}

// headBufs pools the buffers of headSnapshots.
var headBufs = sync.Pool{New: func() any { return new(headBuf) }}

// headBufMax is the largest buffer, in points, that goes back to headBufs
// (6 MiB): a rare query over much of the head does not keep its buffer.
const headBufMax = 1 << 18

// putHeadBuf gives buf (may be nil) back to headBufs, grown to what its
// query needed when that was more (and within headBufMax), so that the
// next query of its size fits in it.
func putHeadBuf(buf *headBuf) {
	if buf == nil || cap(buf.pts) > headBufMax {
		return
	}
	if buf.need > cap(buf.pts) && buf.need <= headBufMax {
		buf.pts = make([]chunk.Point, 0, buf.need)
	}
	buf.pts = buf.pts[:0] // points hold no pointers: nothing to clear
	headBufs.Put(buf)
}
