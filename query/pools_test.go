package query

import (
	"testing"

	"hourglass/chunk"
)

// testSpan is the range of the pool tests' queries: an hour, in ms.
const testSpan = 3600 * 1000

// TestHeadBufSpans: queries over ranges of different spans keep estimates
// of their own, so that a mix alternating a range with one head point per
// series and one with many gives each a buffer that fits it, and puts
// back none made for the other.
func TestHeadBufSpans(t *testing.T) {
	const series = 400
	short, long := int64(10_000), int64(3600_000)
	if spanClass(short) == spanClass(long) {
		t.Fatalf("spans %d and %d ms in one class", short, long)
	}
	for _, sp := range []int64{short, long} {
		defer headPerSeries[0][spanClass(sp)].Store(headPerSeries[0][spanClass(sp)].Load())
	}
	perSeries := map[int64]int{short: 1, long: 300}
	for i := range 20 {
		sp := short
		if i%2 == 1 {
			sp = long
		}
		buf := getHeadBuf(series, sp, false)
		need := series * perSeries[sp]
		if i >= 2 && cap(buf.pts) < need {
			t.Fatalf("query %d over %d ms: a buffer of %d points for %d", i, sp, cap(buf.pts), need)
		}
		if i >= 2 && cap(buf.pts) != headBufMin<<headClass(need) {
			t.Fatalf("query %d over %d ms: a buffer of %d points, want the class of %d", i, sp, cap(buf.pts), need)
		}
		buf.need, buf.series = need, series
		putHeadBuf(buf)
	}
}

// TestHeadBufClasses: the head's buffers are pooled by size class and a
// query takes one sized by its series, so that after a mix of wide and
// narrow queries a one-series query still gets a buffer of the smallest
// class and a wide one a buffer that fits it; a buffer outgrown by its
// query goes back at the class of what the query needed.
func TestHeadBufClasses(t *testing.T) {
	defer headPerSeries[0][spanClass(testSpan)].Store(headPerSeries[0][spanClass(testSpan)].Load())
	const perSeries = 100 // head points per series
	for i := range 200 {
		series := 1
		if i%2 == 1 {
			series = 2000
		}
		buf := getHeadBuf(series, testSpan, false)
		want := headBufMin << headClass(series*perSeries)
		if i > 0 && cap(buf.pts) != want {
			t.Fatalf("query %d over %d series: a buffer of %d points, want %d", i, series, cap(buf.pts), want)
		}
		if len(buf.pts) != 0 {
			t.Fatalf("query %d: a buffer holding %d points", i, len(buf.pts))
		}
		buf.need, buf.series = series*perSeries, series
		putHeadBuf(buf)
		if c := cap(buf.pts); c < min(series*perSeries, headBufMax) || c != headBufMin<<headClass(c) {
			t.Fatalf("query %d needing %d points: put back with %d", i, series*perSeries, c)
		}
	}
	// A query estimated past the largest class gets no buffer, and none
	// is made for it.
	buf := getHeadBuf(1<<20, testSpan, false)
	if cap(buf.pts) != 0 {
		t.Fatalf("a query estimated at %d points got a buffer of %d", 1<<20*perSeries, cap(buf.pts))
	}
	buf.need, buf.series = headBufMax*4, 1<<20
	putHeadBuf(buf)
	if cap(buf.pts) != 0 {
		t.Fatalf("a query of %d points: a buffer of %d made for it", headBufMax*4, cap(buf.pts))
	}
	// One that needed more than the buffer it had, past the largest
	// class: the buffer goes back at its own class, not grown.
	buf = &headBuf{pts: make([]chunk.Point, 0, headBufMin<<2), need: headBufMax * 2, series: 1}
	putHeadBuf(buf)
	if cap(buf.pts) != headBufMin<<2 {
		t.Fatalf("a buffer of %d points, its query past the largest class: put back with %d", headBufMin<<2, cap(buf.pts))
	}
	putHeadBuf(nil)
}

// TestHeadPoolBound: the idle head buffers pooled stay within
// headPoolBytes whatever is put back, a buffer past the bound is dropped
// (not kept, not grown), and a pooled one is handed out again.
func TestHeadPoolBound(t *testing.T) {
	defer headPerSeries[0][spanClass(testSpan)].Store(headPerSeries[0][spanClass(testSpan)].Load())
	var bufs []*headBuf
	for range 5 {
		bufs = append(bufs, &headBuf{pts: make([]chunk.Point, 0, headBufMax), need: headBufMax, series: 1})
	}
	for _, b := range bufs {
		putHeadBuf(b)
	}
	// An outgrown buffer is not replaced by a new one when the pool is full.
	small := &headBuf{pts: make([]chunk.Point, 0, headBufMin), need: headBufMax, series: 1}
	putHeadBuf(small)
	headPool.mu.Lock()
	held, n := headPool.bytes, 0
	for c := range headPool.free {
		n += len(headPool.free[c])
		for _, b := range headPool.free[c] {
			if b == small {
				t.Errorf("a buffer past the pool's bound was pooled")
			}
		}
	}
	headPool.mu.Unlock()
	if held > headPoolBytes || n == 0 {
		t.Fatalf("pool holds %d bytes in %d buffers; bound %d", held, n, headPoolBytes)
	}
	if cap(small.pts) != headBufMin {
		t.Fatalf("a buffer put back to a full pool was grown to %d points", cap(small.pts))
	}
	headPerSeries[0][spanClass(testSpan)].Store(headBufMax * 16)
	got := getHeadBuf(1, testSpan, false)
	if cap(got.pts) != headBufMax {
		t.Fatalf("a query of %d points got a buffer of %d", headBufMax, cap(got.pts))
	}
	headPool.mu.Lock()
	after := headPool.bytes
	headPool.mu.Unlock()
	if after != held-headBufBytes(headBufMax) {
		t.Fatalf("pool bytes %d after handing out a buffer of %d bytes, was %d", after, headBufBytes(headBufMax), held)
	}
	putHeadBuf(got)
}

// TestRefBufClasses: a bucket's cell buffer is of the class of its cells,
// whatever the buckets before it; a bucket past the largest class gets an
// unpooled buffer.
func TestRefBufClasses(t *testing.T) {
	for _, n := range []int{5000, 3, 100000, 300, refMin << refClasses, 1} {
		scs := make([]seriesCells, 4)
		a := arenas.Get().(*arena)
		for k := range n {
			a.add(scs, k%4, cellRef{first: int64(k)})
		}
		a.place(scs, true)
		total := 0
		for i := range scs {
			total += len(scs[i].cells)
		}
		if total != n {
			t.Fatalf("%d cells placed as %d", n, total)
		}
		if c := refClass(n); c < refClasses {
			if a.out == nil || cap(*a.out) != refMin<<c || len(*a.out) != n {
				t.Fatalf("%d cells: buffer %v, want %d cells of class %d", n, a.out, n, c)
			}
		} else if a.out != nil {
			t.Fatalf("%d cells: a pooled buffer of %d", n, cap(*a.out))
		}
		if a.scratch != nil || a.refs != nil {
			t.Fatalf("%d cells: the arena keeps its scan-order scratch after place", n)
		}
		a.release()
		arenas.Put(a)
	}
}

// TestRefScratchDropped: a scan-order scratch grown for a large bucket is
// not pooled again after a much smaller bucket used it. place and forget
// give the scratch to the process-wide pool: each phase uses a scratch of
// its own, given back once, so no scratch is in the pool twice (one that
// was would be handed to two scans at once, a race in a later test).
func TestRefScratchDropped(t *testing.T) {
	s := &refScratch{}
	scs := make([]seriesCells, 1)
	a := &arena{scratch: s}
	for k := range 20000 {
		a.add(scs, 0, cellRef{first: int64(k)})
	}
	a.place(scs, false)
	if cap(s.refs) < 20000 {
		t.Fatalf("a scratch used for 20,000 cells kept %d", cap(s.refs))
	}
	// A scratch as large, used for 10 cells.
	s = &refScratch{refs: make([]cellRef, 0, 20000), owner: make([]int32, 0, 20000)}
	scs = make([]seriesCells, 1)
	a = &arena{scratch: s, refs: s.refs, owner: s.owner}
	for k := range 10 {
		a.add(scs, 0, cellRef{first: int64(k)})
	}
	a.place(scs, false)
	if s.refs != nil || s.owner != nil {
		t.Fatalf("a scratch of %d used for 10 cells was kept", cap(s.refs))
	}
	// A small one stays.
	s = &refScratch{}
	a = &arena{scratch: s}
	for k := range 100 {
		a.add(scs, 0, cellRef{first: int64(k)})
	}
	a.forget()
	if cap(s.refs) < 100 {
		t.Fatalf("a scratch of 100 cells dropped")
	}
}
