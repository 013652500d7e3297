package query

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

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
		buf := getHeadBuf(len(entries), end-start, th != nil)
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
	span   int // spanClass of the query's range
}

// The buffers of headSnapshots are pooled by size class, headBufMin << c
// points for class c, up to headBufMax (4 MiB), and a query takes one of
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

// headPoolBytes bounds the idle buffers headPool keeps, all classes
// together: four of the largest class (the query mix runs four
// queries at once). A sync.Pool per class kept what
// the busiest moment of a mix had put back, and for one more collection
// cycle after (its victims): 9–18 MB of idle head buffers at the issue's
// scale, which the collector counts as live, so that its goal (GOGC 75)
// rose by 1.75 times as much and with it the peak RSS with queries
// (docs/benchmarks.md, "Peak RSS with queries (issue 17, session 12)").
// A buffer put back past the bound is left to the collector.
const headPoolBytes = 4 * headBufMax * int(unsafe.Sizeof(chunk.Point{}))

// headPool is the idle buffers by class, and their bytes.
var headPool struct {
	mu    sync.Mutex
	free  [headBufClasses][]*headBuf
	bytes int
}

// headBufBytes is the bytes of a buffer of c points.
func headBufBytes(c int) int { return c * int(unsafe.Sizeof(chunk.Point{})) }

// takeHeadBuf is an idle buffer of class c, nil when none.
func takeHeadBuf(c int) *headBuf {
	p := &headPool
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free[c])
	if n == 0 {
		return nil
	}
	buf := p.free[c][n-1]
	p.free[c][n-1] = nil
	p.free[c] = p.free[c][:n-1]
	p.bytes -= headBufBytes(cap(buf.pts))
	return buf
}

// headPoolRoom reports whether headPool has room for a buffer of c points.
func headPoolRoom(c int) bool {
	headPool.mu.Lock()
	defer headPool.mu.Unlock()
	return headPool.bytes+headBufBytes(c) <= headPoolBytes
}

// keepHeadBuf pools buf unless the pool is full.
func keepHeadBuf(buf *headBuf) {
	p := &headPool
	b := headBufBytes(cap(buf.pts))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+b > headPoolBytes {
		return
	}
	c := headClass(cap(buf.pts))
	p.free[c] = append(p.free[c], buf)
	p.bytes += b
}

// headPerSeries is the head's points per series the last query over a
// range of the same span class read, in 1/16 of a point: of a query's
// plain snapshots, and of its thinned ones. One estimate for every range
// let the queries of a mix undo each other's: after a query whose range
// held one head point per series (417 series, 417 points) the next one
// over the last hour (417 series, 125,517 points) was given a buffer of
// 1,024 points, and its series arrays of their own, and the buffer it put
// back made for a need that the next query, estimated from this one, did
// not take: at the scale a third of what the query mixes
// allocated (docs/benchmarks.md, "Peak RSS with queries (issue 17,
// session 12)").
var headPerSeries [2][spanClasses]atomic.Int64

// spanClasses is the number of span classes: ranges of up to 2^(c-1) s
// for class c, the last one for every longer range.
const spanClasses = 24

// spanClass is the span class of a range of ms milliseconds.
func spanClass(ms int64) int {
	return min(bits.Len64(uint64(max(ms, 0))/1000), spanClasses-1)
}

// headClass is the least size class of at least n points (the largest
// class past headBufMax).
func headClass(n int) int {
	c := 0
	for c < headBufClasses-1 && headBufMin<<c < n {
		c++
	}
	return c
}

// getHeadBuf returns an empty buffer for a query over series series and a
// range of span ms: none (a nil pts) when the estimate is past headBufMax.
func getHeadBuf(series int, span int64, thin bool) *headBuf {
	sc := spanClass(span)
	est := int64(series) * headPerSeries[b2i(thin)][sc].Load() / 16
	if est > headBufMax {
		return &headBuf{thin: thin, span: sc}
	}
	c := headClass(int(est))
	if buf := takeHeadBuf(c); buf != nil {
		buf.thin, buf.kept, buf.span = thin, 0, sc
		return buf
	}
	return &headBuf{pts: make([]chunk.Point, 0, headBufMin<<c), thin: thin, span: sc}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// putHeadBuf gives buf (may be nil) back to its class, or, when its query
// needed more and at most headBufMax, to the class of that need (a new
// buffer of that class, the outgrown one dropped, made only when the pool
// has room for it), so that the next query of its size fits. A buffer
// without points, or past headPoolBytes, is dropped.
func putHeadBuf(buf *headBuf) {
	if buf == nil {
		return
	}
	if buf.series > 0 {
		headPerSeries[b2i(buf.thin)][buf.span].Store(int64(buf.need) * 16 / int64(buf.series))
	}
	if buf.need > cap(buf.pts) && buf.need <= headBufMax {
		c := headBufMin << headClass(buf.need)
		if !headPoolRoom(c) {
			return
		}
		buf.pts = make([]chunk.Point, 0, c)
	}
	if cap(buf.pts) == 0 {
		return
	}
	buf.pts = buf.pts[:0] // points hold no pointers: nothing to clear
	keepHeadBuf(buf)
}
