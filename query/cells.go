package query

import (
	"math"
	"sort"
	"sync"

	"hourglass/chunk"
	"hourglass/series"
)

// A scan keeps each cell it reads as its encoded bytes (a point takes a
// byte or two there, 24 bytes decoded) and decodes a series' cells only
// when the series is consumed: into a downsampler as they decode, into the
// PromQL engine's iterator, or into an exactly sized slice. points below
// merges the cells of one series with its head points in time order.

// cellRef is one cell of a series: its chunk, the base hour of its row,
// and the timestamp of its first point.
type cellRef struct {
	data  []byte // in the scan's arena
	hour  int64
	first int64
}

// seriesCells is what a scan read of one series: its cells in scan order
// (rows by hour, cells of a row by qualifier) and the head's points, sorted
// and deduplicated, all within the read range.
type seriesCells struct {
	cells []cellRef
	head  []chunk.Point
	n     int // points in the range: the cells' and the head's, duplicates included

	// Native histograms (histogram.go): the histogram cells of the
	// series' rows in range, and the head's histogram samples.
	hist     []cellRef
	headHist []chunk.HistPoint

	ncells int // cells the scan found, before they are placed
}

// arena holds copies of cell values (the store's slices are valid only
// during its callback) and the cellRefs of one salt bucket's scan. It
// allocates values in slabs, so cells are not allocated one by one: the
// first small, each twice the last up to arenaSlab, so a short read does
// not clear a large slab per salt bucket. Slabs and the cellRef buffers
// come from pools and go back to them on release, once nothing points into
// them (a consuming read, after the bucket is decoded); a read whose cells
// outlive the scan (PromQL) never releases, and the GC takes them.
type arena struct {
	slab  []byte
	slabs []*[]byte // pooled slabs handed out
	class int       // the size class of the last slab

	refs    []cellRef // the bucket's cells in scan order
	owner   []int32   // refs[i] is a cell of series owner[i]
	scratch *refScratch
	out     *[]cellRef
}

// refScratch holds an arena's refs and owner while its bucket is scanned
// and placed: place gives it back to refScratches, so an arena kept for a
// PromQL querier does not hold it. One that grew for a large bucket is not
// kept when a much smaller one used it, so the pooled ones do not all
// creep to the largest bucket's size.
type refScratch struct {
	refs  []cellRef
	owner []int32
}

var refScratches = sync.Pool{New: func() any { return new(refScratch) }}

// refScratchKeep is the capacity up to which a scratch is always pooled.
const refScratchKeep = 1 << 12

const (
	arenaMin     = 4 << 10
	arenaSlab    = 256 << 10
	arenaClasses = 7 // 4 KiB << 0..6
)

var arenaSlabs [arenaClasses]sync.Pool

func init() {
	for c := range arenaSlabs {
		arenaSlabs[c].New = func() any {
			b := make([]byte, arenaMin<<c)
			return &b
		}
	}
}

// refBufs pools the cellRef buffers of place by size class, refMin << c
// cells for class c: a bucket takes one of the class of its cells. One
// pool of buffers that grew to the largest bucket they had held let the
// buffers creep toward the largest bucket's size.
const (
	refMin     = 1 << 8
	refClasses = 10 // up to 128 Ki cells (5 MiB); a larger bucket's buffer is not pooled
)

var refBufs [refClasses]sync.Pool

// refClass is the least size class of at least n cells, refClasses when
// none is.
func refClass(n int) int {
	c := 0
	for c < refClasses && refMin<<c < n {
		c++
	}
	return c
}

func (a *arena) copy(b []byte) []byte {
	if len(b) > arenaSlab/4 {
		return append([]byte(nil), b...)
	}
	if cap(a.slab)-len(a.slab) < len(b) {
		c := 0
		if a.slab != nil {
			c = min(a.class+1, arenaClasses-1)
		}
		for arenaMin<<c < len(b) {
			c++
		}
		p := arenaSlabs[c].Get().(*[]byte)
		a.slabs = append(a.slabs, p)
		a.slab, a.class = (*p)[:0], c
	}
	n := len(a.slab)
	a.slab = append(a.slab, b...)
	return a.slab[n:len(a.slab):len(a.slab)]
}

// add records cell c of series i of scs.
func (a *arena) add(scs []seriesCells, i int, c cellRef) {
	if a.scratch == nil {
		a.scratch = refScratches.Get().(*refScratch)
		a.refs, a.owner = a.scratch.refs, a.scratch.owner
	}
	a.refs = append(a.refs, c)
	a.owner = append(a.owner, int32(i))
	scs[i].ncells++
}

// place gives each series of scs its cells, in scan order, as one
// contiguous run of a buffer, pooled when pooled is true.
func (a *arena) place(scs []seriesCells, pooled bool) {
	if len(a.refs) == 0 {
		return
	}
	var buf []cellRef
	if c := refClass(len(a.refs)); pooled && c < refClasses {
		a.out, _ = refBufs[c].Get().(*[]cellRef)
		if a.out == nil {
			b := make([]cellRef, 0, refMin<<c)
			a.out = &b
		}
		buf = (*a.out)[:len(a.refs)]
		*a.out = buf // release clears what was used
	} else {
		buf = make([]cellRef, len(a.refs))
	}
	// Each series' run starts where the cells of the series before it
	// (by first appearance) end.
	off := 0
	for k, i := range a.owner {
		sc := &scs[i]
		if sc.cells == nil {
			sc.cells = buf[off : off : off+sc.ncells]
			off += sc.ncells
		}
		sc.cells = append(sc.cells, a.refs[k])
	}
	a.dropScratch()
}

// dropScratch gives the arena's refs and owner back to refScratches.
func (a *arena) dropScratch() {
	s := a.scratch
	if s == nil {
		return
	}
	n := len(a.refs)
	clear(a.refs)
	s.refs, s.owner = a.refs[:0], a.owner[:0]
	a.refs, a.owner, a.scratch = nil, nil, nil
	if cap(s.refs) > refScratchKeep && cap(s.refs) > 8*n {
		s.refs, s.owner = nil, nil
	}
	refScratches.Put(s)
}

// release gives the arena's buffers back to their pools: the caller
// guarantees that nothing points into them any more.
func (a *arena) release() {
	for _, p := range a.slabs {
		arenaSlabs[classOf(cap(*p))].Put(p)
	}
	if a.out != nil {
		clear(*a.out)
		*a.out = (*a.out)[:0]
		refBufs[refClass(cap(*a.out))].Put(a.out)
	}
	a.forget()
}

// forget drops the arena's slabs and cell buffer without pooling them:
// cells still point into them.
func (a *arena) forget() {
	a.dropScratch()
	*a = arena{}
}

var arenas = sync.Pool{New: func() any { return new(arena) }}

// keptArenas holds the arenas of scans whose cells outlive them (a PromQL
// querier's), to be released together once the cells are done with.
type keptArenas struct {
	mu    sync.Mutex
	as    []*arena
	heads []*headBuf // the scans' head points (headSnapshots)
}

// addHead keeps a scan's buffer of head points (may be nil) until release.
func (k *keptArenas) addHead(buf *headBuf) {
	if buf == nil {
		return
	}
	k.mu.Lock()
	k.heads = append(k.heads, buf)
	k.mu.Unlock()
}

func (k *keptArenas) add(a *arena) {
	k.mu.Lock()
	k.as = append(k.as, a)
	k.mu.Unlock()
}

// release releases every arena held: nothing may read their cells after.
func (k *keptArenas) release() {
	k.mu.Lock()
	as, heads := k.as, k.heads
	k.as, k.heads = nil, nil
	k.mu.Unlock()
	for _, a := range as {
		a.release()
		arenas.Put(a)
	}
	for _, h := range heads {
		putHeadBuf(h)
	}
}

// classOf returns the size class of a slab of n bytes.
func classOf(n int) int {
	c := 0
	for arenaMin<<c < n {
		c++
	}
	return c
}

// points iterates the points of one series in [start, end] in time order,
// one per timestamp, as the materialising merge did: the store's cells in
// scan order with the last point written winning on equal timestamps (what
// series.SortDedup keeps), then the head's points over them.
//
// Cells normally follow one another in time. A point is handed out only
// once no later cell can hold its timestamp: each cell's points must be
// before the first timestamp of every cell after it (minFirst). When a
// cell overlaps a later one (late points written as another cell of a row,
// or two writers), the rest of the series' store points are decoded into a
// slice and sorted, with the points handed out so far all before them.
//
// It allocates nothing on the fast path. Not safe for concurrent use.
type points struct {
	sc         *seriesCells
	start, end int64
	minFirst   []int64 // minFirst[i]: the least first timestamp of cells i.. (MaxInt64 past the end)
	ci         int     // the cell it is reading, or len(cells)
	it         chunk.Iterator
	inCell     bool
	lim        int64         // min(minFirst[ci+1], end+1): the current cell's points below it are taken as they decode
	rest       []chunk.Point // the slow path: the store's remaining points, sorted
	ri         int           // the next of rest
	slow       bool
	adv        bool // run took the cell's block: the store's next point is after it
	err        error

	// The store's next point, when sok.
	st  int64
	sv  chunk.Value
	sok bool
	hi  int // the head's next point

	t int64
	v chunk.Value
}

// reset points p at sc's points in [start, end]. minFirst is scratch space
// it may grow and returns.
func (p *points) reset(sc *seriesCells, start, end int64, minFirst []int64) []int64 {
	cells := sc.cells
	if cap(minFirst) < len(cells)+1 {
		minFirst = make([]int64, len(cells)+1, max(len(cells)+1, 2*cap(minFirst)))
	}
	minFirst = minFirst[:len(cells)+1]
	minFirst[len(cells)] = math.MaxInt64
	for i := len(cells) - 1; i >= 0; i-- {
		minFirst[i] = min(cells[i].first, minFirst[i+1])
	}
	*p = points{sc: sc, start: start, end: end, minFirst: minFirst, ci: -1, rest: p.rest[:0], it: p.it}
	p.nextStore()
	return minFirst
}

// next advances to the next point and reports whether there is one; at
// the end, err says whether a cell was corrupt.
func (p *points) next() bool {
	if p.adv {
		p.advance()
	}
	if !p.sok {
		if p.hi < len(p.sc.head) {
			p.takeHead()
			return true
		}
		return false
	}
	if p.hi < len(p.sc.head) && p.st >= p.sc.head[p.hi].T {
		return p.merge()
	}
	// The store's point comes first: the common case inline.
	p.t, p.v = p.st, p.sv
	if p.inCell && p.it.Next() {
		if t, v := p.it.At(); t < p.lim {
			p.st, p.sv = t, v
			return true
		}
		if p.at() {
			return true
		}
	}
	p.nextStore()
	return true
}

// run takes, when it can, a run of the store's next points at once: the
// current cell's points from the next one to the end of its decoded block,
// when every one of them comes before the next cell's and the head's
// points and within the range. The block is valid until the next call of
// next or run. When it cannot (false), next takes the next point.
func (p *points) run() (chunk.Block, bool) {
	if p.adv {
		p.advance()
	}
	if !p.sok || !p.inCell {
		return chunk.Block{}, false
	}
	last := p.it.BlockEnd()
	if last >= p.lim || p.hi < len(p.sc.head) && last >= p.sc.head[p.hi].T {
		return chunk.Block{}, false
	}
	b := p.it.Block() // from (st, sv), the iterator's current point
	p.t, p.v = last, b.Value(b.Len()-1)
	// The block's slices are the iterator's buffers: the store's next
	// point is found on the next call.
	p.adv = true
	return b, true
}

// headRun takes, when it can, a run of the head's next points at once:
// those before the store's next point, all of them when the store has no
// more (the common case: the head holds the newest points). The slice is
// the scan's copy of the head's points. When it cannot (false), next
// takes the next point.
func (p *points) headRun() ([]chunk.Point, bool) {
	if p.adv {
		p.advance()
	}
	head := p.sc.head
	if p.hi >= len(head) || p.sok && head[p.hi].T >= p.st {
		return nil, false
	}
	j := len(head)
	if p.sok {
		// Before the store's next point; one at its timestamp wins over
		// it, which next sees to.
		j = p.hi + sort.Search(len(head)-p.hi, func(k int) bool { return head[p.hi+k].T >= p.st })
	}
	run := head[p.hi:j]
	p.hi = j
	p.t, p.v = run[len(run)-1].T, run[len(run)-1].V
	return run, true
}

// advance finds the store's next point after a run.
func (p *points) advance() {
	p.adv = false
	if p.it.Next() && p.at() {
		return
	}
	p.nextStore()
}

// merge takes the next point of the store's and the head's: the store's
// is not before the head's.
func (p *points) merge() bool {
	if p.st == p.sc.head[p.hi].T {
		p.nextStore() // the head wins
	}
	p.takeHead()
	return true
}

// takeHead takes the head's next point.
func (p *points) takeHead() {
	h := &p.sc.head[p.hi]
	p.t, p.v = h.T, h.V
	p.hi++
}

// nextStore moves to the store's next point in range.
func (p *points) nextStore() {
	p.sok = false
	if p.slow {
		if p.ri < len(p.rest) {
			p.st, p.sv, p.sok = p.rest[p.ri].T, p.rest[p.ri].V, true
			p.ri++
		}
		return
	}
	cells := p.sc.cells
	for {
		if p.inCell {
			if p.it.Next() {
				if p.at() {
					return
				}
				continue
			}
			p.inCell = false
			if err := p.it.Err(); err != nil {
				p.err = err
				return
			}
		}
		p.ci++
		if p.ci >= len(cells) || p.err != nil {
			return
		}
		c := &cells[p.ci]
		if err := p.it.Reset(c.data, c.hour); err != nil {
			p.err = err
			return
		}
		// Points below lim can be taken as they decode.
		p.lim = p.minFirst[p.ci+1]
		if p.end < p.lim {
			p.lim = p.end + 1
		}
		var ok bool
		if c.hour < p.start {
			ok = p.it.SeekTo(p.start)
		} else {
			ok = p.it.Next()
		}
		if ok {
			p.inCell = true
			if p.at() {
				return
			}
			continue
		}
		if err := p.it.Err(); err != nil {
			p.err = err
			return
		}
	}
}

// at takes the cell iterator's current point as the store's next and
// reports true, unless it is past the range (the cell is done: false) or a
// later cell may hold its timestamp (the slow path takes over: true).
func (p *points) at() bool {
	t, v := p.it.At()
	if t < p.lim {
		p.st, p.sv, p.sok = t, v, true
		return true
	}
	if t > p.end {
		p.inCell = false
		return false
	}
	p.toSlow(t, v)
	return true
}

// toSlow decodes the store's remaining points, from (t, v) on, sorts them
// and continues from them.
func (p *points) toSlow(t int64, v chunk.Value) {
	rest := append(p.rest[:0], chunk.Point{T: t, V: v})
	for p.it.Next() {
		t, v := p.it.At()
		if t > p.end {
			break
		}
		rest = append(rest, chunk.Point{T: t, V: v})
	}
	if err := p.it.Err(); err != nil {
		p.err = err
		return
	}
	for _, c := range p.sc.cells[p.ci+1:] {
		var err error
		if rest, err = decodeRange(rest, &p.it, c, p.start, p.end); err != nil {
			p.err = err
			return
		}
	}
	p.rest = series.SortDedup(rest)
	p.slow, p.inCell = true, false
	p.ci = len(p.sc.cells)
	p.nextStore()
}

// decodeRange appends the points of c in [start, end] to dst.
func decodeRange(dst []chunk.Point, it *chunk.Iterator, c cellRef, start, end int64) ([]chunk.Point, error) {
	if err := it.Reset(c.data, c.hour); err != nil {
		return dst, err
	}
	var ok bool
	if c.hour < start {
		ok = it.SeekTo(start)
	} else {
		ok = it.Next()
	}
	for ok {
		t, v := it.At()
		if t > end {
			break
		}
		dst = append(dst, chunk.Point{T: t, V: v})
		ok = it.Next()
	}
	return dst, it.Err()
}
