package query

import (
	"context"
	"sync"
	"sync/atomic"

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
//
// With thin (not nil) and a head that has SnapshotThin, each series' head
// points are thinned as thin says (for a reader that thins them the same
// way: thinIterator); its n is still the points Snapshot gives, which the
// limits count.
func (e *Engine) headSnapshots(ctx context.Context, entries []*series.Entry, scs []seriesCells, start, end int64, lim pointLimit, thin *series.Thin) (*headBuf, error) {
	bh, ok := e.head.(BatchHead)
	if !ok {
		th, _ := e.head.(thinHead)
		if thin == nil {
			th = nil
		}
		buf := getHeadBuf(len(entries), th != nil)
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
			var out []chunk.Point
			var raw int
			if th != nil {
				out, raw = th.SnapshotThin(en.Labels, start, end, *thin, dst[n:n])
			} else {
				out = e.head.Snapshot(en.Labels, start, end, dst[n:n])
				raw = len(out)
			}
			if len(out) > 0 && cap(dst) > n && &out[0] == &dst[:n+1][n] {
				dst = dst[:n+len(out)]
			}
			scs[i].head = out[:len(out):len(out)]
			scs[i].n = raw
			total += raw
			buf.kept += len(out)
			// The limit and the deadline as the points come, not once the
			// whole head is copied: a query over more of the head than it
			// may read stops within one series of the bound.
			if lim.over(int64(total)) {
				buf.pts, buf.need, buf.series = dst, buf.kept, i+1
				putHeadBuf(buf)
				return nil, e.exceeded(lim.err(int64(total)))
			}
			if i%256 == 255 {
				if err := ctx.Err(); err != nil {
					buf.pts, buf.need, buf.series = dst, buf.kept, i+1
					putHeadBuf(buf)
					return nil, err
				}
			}
		}
		buf.pts, buf.need, buf.series = dst, buf.kept, len(entries)
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
		scs[i].n = len(heads[i])
	}
	return nil, nil
}

// thinHead is a Head that can thin a snapshot for an instant vector
// selector (series.Head).
type thinHead interface {
	SnapshotThin(l series.Labels, start, end int64, th series.Thin, dst []chunk.Point) ([]chunk.Point, int)
}

// headBuf is a pooled buffer of head points: pts, of its size class's
// capacity, and what the query that used it last read: need points of
// series series, which size the next buffers (of thinned snapshots, when
// thin, estimated apart: they keep a fraction of the points). kept is
// the points kept, need once the buffer is put back.
type headBuf struct {
	pts    []chunk.Point
	need   int
	series int
	kept   int
	thin   bool
}

// The buffers of headSnapshots are pooled by size class, headBufMin << c
// points for class c, up to headBufMax (6 MiB), and a query takes one of
// the class its estimate needs: the series it reads times the head's
// points per series that the last query read. A query estimated to need
// more than headBufMax gets no buffer (its series get arrays of their own)
// and a buffer is not grown for one, so that the pool does not hold
// buffers of the largest class for queries that overflow them anyway. A
// single pool let every buffer grow to the largest need it met, so that a
// one-series query held a buffer sized for the widest aggregation, and the
// pool's buffers all crept to that size (the soak's heap: 18 MB of head
// buffers at two queries in flight).
const (
	headBufMin     = 1 << 10
	headBufClasses = 9
	headBufMax     = headBufMin << (headBufClasses - 1) // 256 Ki points
)

var headBufs [headBufClasses]sync.Pool

// headPerSeries is the head's points per series the last query read, in
// 1/16 of a point: of a query's plain snapshots, and of its thinned ones.
var headPerSeries [2]atomic.Int64

// headClass is the least size class of at least n points (the largest
// class past headBufMax).
func headClass(n int) int {
	c := 0
	for c < headBufClasses-1 && headBufMin<<c < n {
		c++
	}
	return c
}

// getHeadBuf returns an empty buffer for a query over series series: none
// (a nil pts) when the estimate is past headBufMax.
func getHeadBuf(series int, thin bool) *headBuf {
	est := int64(series) * headPerSeries[b2i(thin)].Load() / 16
	if est > headBufMax {
		return &headBuf{thin: thin}
	}
	c := headClass(int(est))
	if buf, ok := headBufs[c].Get().(*headBuf); ok {
		buf.thin, buf.kept = thin, 0
		return buf
	}
	return &headBuf{pts: make([]chunk.Point, 0, headBufMin<<c), thin: thin}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// putHeadBuf gives buf (may be nil) back to its class, or, when its query
// needed more and at most headBufMax, to the class of that need (a new
// buffer of that class, the outgrown one dropped), so that the next query
// of its size fits. A buffer without points is dropped.
func putHeadBuf(buf *headBuf) {
	if buf == nil {
		return
	}
	if buf.series > 0 {
		headPerSeries[b2i(buf.thin)].Store(int64(buf.need) * 16 / int64(buf.series))
	}
	if buf.need > cap(buf.pts) && buf.need <= headBufMax {
		buf.pts = make([]chunk.Point, 0, headBufMin<<headClass(buf.need))
	}
	if cap(buf.pts) == 0 {
		return
	}
	buf.pts = buf.pts[:0] // points hold no pointers: nothing to clear
	headBufs[headClass(cap(buf.pts))].Put(buf)
}
