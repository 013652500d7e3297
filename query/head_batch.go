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
func (e *Engine) headSnapshots(ctx context.Context, entries []*series.Entry, scs []seriesCells, start, end int64, lim pointLimit) (*[]chunk.Point, error) {
	bh, ok := e.head.(BatchHead)
	if !ok {
		buf := headBufs.Get().(*[]chunk.Point)
		dst := (*buf)[:0]
		for i, en := range entries {
			n := len(dst)
			// Snapshot may move dst to a larger array: the series before
			// keep the old one, which the GC frees with the last of them.
			dst = e.head.Snapshot(en.Labels, start, end, dst)
			scs[i].head = dst[n:len(dst):len(dst)]
		}
		*buf = dst
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

// headBufs pools the buffers of headSnapshots.
var headBufs = sync.Pool{New: func() any { return new([]chunk.Point) }}

// headBufMax is the largest buffer, in points, that goes back to headBufs
// (6 MiB): a rare query over much of the head does not keep its buffer.
const headBufMax = 1 << 18

// putHeadBuf gives buf (may be nil) back to headBufs.
func putHeadBuf(buf *[]chunk.Point) {
	if buf == nil || cap(*buf) > headBufMax {
		return
	}
	*buf = (*buf)[:0] // points hold no pointers: nothing to clear
	headBufs.Put(buf)
}
