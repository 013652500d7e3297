package series

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"hourglass/chunk"
	"hourglass/rowkey"
)

// TestOpenChunkFrozen holds an open chunk that freezes as points come to
// the list of the points appended: appendAll gives them back exactly, in
// arrival order; appendRange, countRange and span agree with the list;
// thaw keeps them all. Runs in order, with rewrites, points back in time,
// ints, floats, NaN and ±Inf.
func TestOpenChunkFrozen(t *testing.T) {
	const hour = int64(1_700_000_000_000) - int64(1_700_000_000_000)%rowkey.HourMs
	rng := rand.New(rand.NewPCG(5, 6))
	values := []chunk.Value{chunk.Float(math.NaN()), chunk.Float(math.Inf(1)), chunk.Float(math.Inf(-1)), chunk.Float(0.25), chunk.Int(-7)}
	for run := 0; run < 400; run++ {
		// Odd runs are late chunks (packed blocks), even ones in-time.
		oc := &openChunk{hour: hour, pts: make([]chunk.Point, 0, freezeAt), late: run%2 == 1}
		var all []chunk.Point
		tm := hour + rng.Int64N(1000)
		n := 1 + rng.IntN(400)
		disorder := rng.IntN(4) // 0: strictly in order
		for i := 0; i < n; i++ {
			tm += 1 + rng.Int64N(20_000)
			t := min(tm, hour+rowkey.HourMs-1)
			if disorder > 0 && rng.IntN(50) < disorder {
				t = hour + rng.Int64N(t-hour+1) // back in time, maybe a rewrite
			}
			var v chunk.Value
			switch rng.IntN(3) {
			case 0:
				v = chunk.Float(float64(rng.Int64N(100_000)) / 100)
			case 1:
				v = chunk.Int(rng.Int64N(1 << 40))
			default:
				v = values[rng.IntN(len(values))]
			}
			p := chunk.Point{T: t, V: v}
			all = append(all, p)
			oc.pts = append(oc.pts, p)
			oc.freeze()
		}
		if disorder == 0 && n >= 2*freezeAt && oc.fz.n == 0 {
			t.Fatalf("run %d: %d points in order and nothing frozen", run, n)
		}
		if got := oc.appendAll(nil); !slices.Equal(got, all) {
			t.Fatalf("run %d: appendAll differs from the points appended (%d frozen, %d raw)", run, oc.fz.n, len(oc.pts))
		}
		if oc.length() != len(all) {
			t.Fatalf("run %d: length %d, want %d", run, oc.length(), len(all))
		}
		lo, hi, ok := oc.span()
		if !ok || lo != slices.MinFunc(all, cmpT).T || hi != slices.MaxFunc(all, cmpT).T {
			t.Fatalf("run %d: span %d..%d %v", run, lo, hi, ok)
		}
		// countRange counts at most the two frozen blocks the range cuts
		// beyond the points in range.
		// Each block's meta is its first timestamp and point count.
		maxBlock := 0
		checkFrozenLayout(t, oc)
		var it chunk.Iterator
		for i, m := range oc.fz.meta {
			pts := oc.decodeBlocks(nil, &it, i, i+1)
			if int(m.n) != len(pts) || m.first != pts[0].T {
				t.Fatalf("run %d: block %d: meta %+v, %d points from %d", run, i, m, len(pts), pts[0].T)
			}
			maxBlock = max(maxBlock, len(pts))
		}
		for q := 0; q < 12; q++ {
			var start, end int64
			switch q % 3 {
			case 0:
				start = hour + rng.Int64N(rowkey.HourMs)
				end = start + rng.Int64N(rowkey.HourMs/2)
			case 1: // from or to a point's timestamp, or one point's alone
				start = all[rng.IntN(len(all))].T
				end = start + rng.Int64N(3)*rng.Int64N(rowkey.HourMs/4)
			default:
				end = all[rng.IntN(len(all))].T
				start = end - rng.Int64N(3)*rng.Int64N(rowkey.HourMs/4)
			}
			want := appendRange(nil, all, start, end)
			if got := oc.appendRange(nil, &it, start, end); !slices.Equal(got, want) {
				t.Fatalf("run %d: appendRange [%d, %d]: %d points, want %d", run, start, end, len(got), len(want))
			}
			if c := oc.countRange(start, end); c < len(want) || c > len(want)+2*maxBlock {
				t.Fatalf("run %d: countRange [%d, %d] = %d for %d points in range (blocks of up to %d)", run, start, end, c, len(want), maxBlock)
			}
		}
		if got := oc.thaw(); !slices.Equal(got, all) || oc.fz.n != 0 || oc.fz.buf != nil || oc.fz.meta != nil {
			t.Fatalf("run %d: thaw differs from the points appended, or kept the frozen buffer (%d bytes)", run, cap(oc.fz.buf))
		}
	}
}

func cmpT(a, b chunk.Point) int { return int(a.T - b.T) }

// TestLateChunkFreezesPacked: a late chunk whose points come in order
// freezes them, 12 bytes a point, and gives them back as they came.
func TestLateChunkFreezesPacked(t *testing.T) {
	const hour = int64(1_700_000_000_000) - int64(1_700_000_000_000)%rowkey.HourMs
	oc := &openChunk{hour: hour, late: true}
	var all []chunk.Point
	for i := int64(0); i < 3*freezeAt; i++ {
		p := chunk.Point{T: hour + i*1000, V: chunk.Int(i)}
		if i%2 == 1 {
			p.V = chunk.Float(float64(i) / 4)
		}
		all = append(all, p)
		oc.pts = append(oc.pts, p)
		oc.freeze()
	}
	if oc.fz.n != 3*freezeAt || len(oc.pts) != 0 || len(oc.fz.meta) != 3 {
		t.Fatalf("late chunk: %d frozen in %d blocks, %d raw; want %d frozen in 3", oc.fz.n, len(oc.fz.meta), len(oc.pts), 3*freezeAt)
	}
	for i := range oc.fz.meta {
		if b := oc.fz.blocks(i, i+1); len(b) != packedSize*freezeAt {
			t.Fatalf("a packed block of %d points holds %d bytes, want %d", freezeAt, len(b), packedSize*freezeAt)
		}
	}
	if got := oc.thaw(); !slices.Equal(got, all) {
		t.Fatalf("thaw differs from the points appended")
	}
}

// checkFrozenLayout checks that the frozen blocks of oc lie one after the
// other in its buffer and fill it to its length, each block's points as
// its meta says, and the blocks together as the frozen span says.
func checkFrozenLayout(t *testing.T, oc *openChunk) {
	t.Helper()
	fz := &oc.fz
	var it chunk.Iterator
	end, n := uint32(0), 0
	var all []chunk.Point
	for i, m := range fz.meta {
		if m.end <= end || m.n == 0 {
			t.Fatalf("block %d: ends at %d after the one before at %d, %d points", i, m.end, end, m.n)
		}
		b := fz.blocks(i, i+1)
		if len(b) != int(m.end-end) {
			t.Fatalf("block %d: %d bytes, its meta says %d", i, len(b), m.end-end)
		}
		pts := oc.decodeBlocks(nil, &it, i, i+1)
		if len(pts) != int(m.n) || pts[0].T != m.first {
			t.Fatalf("block %d: %d points from %d, its meta says %d from %d", i, len(pts), pts[0].T, m.n, m.first)
		}
		if got := oc.decodeBlocks(nil, &it, 0, i+1); len(got) != n+len(pts) || !slices.Equal(got[n:], pts) {
			t.Fatalf("blocks 0..%d decoded at once differ from block by block", i)
		}
		all = append(all, pts...)
		end, n = m.end, n+len(pts)
	}
	if int(end) != len(fz.buf) || n != fz.n {
		t.Fatalf("the blocks end at %d holding %d points; the buffer holds %d bytes, the chunk says %d frozen", end, n, len(fz.buf), fz.n)
	}
	for i := 1; i < len(all); i++ {
		if all[i].T <= all[i-1].T {
			t.Fatalf("frozen points not increasing at %d", i)
		}
	}
	if n > 0 && (all[0].T != fz.first || all[n-1].T != fz.last) {
		t.Fatalf("frozen points span %d..%d, the chunk says %d..%d", all[0].T, all[n-1].T, fz.first, fz.last)
	}
}

// TestFrozenBufferGrowth: a chunk's frozen buffer holds its blocks at the
// boundaries of a block (freezeAt-1, freezeAt, freezeAt+1 points) and
// across many; it grows in a few steps, not per block; and a chunk that
// expects as many points as it gets (its series' last one held them) ends
// with its buffer full but for less than a block and its size class.
func TestFrozenBufferGrowth(t *testing.T) {
	const hour = int64(1_700_000_000_000) - int64(1_700_000_000_000)%rowkey.HourMs
	for _, late := range []bool{false, true} {
		for _, n := range []int{1, freezeAt - 1, freezeAt, freezeAt + 1, 2 * freezeAt, 360, 480} {
			for _, expect := range []int{0, n} {
				oc := &openChunk{hour: hour, pts: make([]chunk.Point, 0, freezeAt), late: late, expect: expect}
				var all []chunk.Point
				grew := 0
				walk, step := int64(5000), rowkey.HourMs/int64(max(n, 360))
				for i := 0; i < n; i++ {
					walk += int64(i*7919%201) - 100
					p := chunk.Point{T: hour + int64(i)*step, V: chunk.Float(float64(walk) / 100)}
					all = append(all, p)
					oc.pts = append(oc.pts, p)
					before := cap(oc.fz.buf)
					oc.freeze()
					if cap(oc.fz.buf) != before {
						grew++
					}
					if k := i + 1; k%freezeAt == 0 && (oc.fz.n != k || len(oc.pts) != 0) {
						t.Fatalf("late %v: after %d points %d frozen, %d raw", late, k, oc.fz.n, len(oc.pts))
					}
				}
				checkFrozenLayout(t, oc)
				if got := oc.appendAll(nil); !slices.Equal(got, all) {
					t.Fatalf("late %v, %d points: appendAll differs", late, n)
				}
				blocks := len(oc.fz.meta)
				if blocks != n/freezeAt || len(oc.pts) != n%freezeAt {
					t.Fatalf("late %v, %d points: %d blocks and %d raw", late, n, blocks, len(oc.pts))
				}
				if blocks > 4 && grew >= blocks*3/4 {
					t.Fatalf("late %v, %d points: the buffer grew %d times for %d blocks", late, n, grew, blocks)
				}
				if slack := cap(oc.fz.buf) - len(oc.fz.buf); expect > 0 && blocks > 1 && slack > (16+8*freezeAt+len(oc.fz.buf)/8)*5/4 {
					t.Fatalf("late %v, %d points expected and come: %d bytes in a buffer of %d", late, n, len(oc.fz.buf), cap(oc.fz.buf))
				}
			}
		}
	}
}
