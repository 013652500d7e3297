package chunk

import (
	"math"
	"testing"
)

// blockPoints reads chunk b by blocks: from the first point, or from
// SeekTo(seek) when seek is not math.MinInt64; after skip calls of Next
// taken one point at a time, so that blocks start inside a batch.
func blockPoints(t *testing.T, b []byte, seek int64, skip int) ([]Point, error) {
	t.Helper()
	var it Iterator
	if err := it.Reset(b, testBase); err != nil {
		return nil, err
	}
	var pts []Point
	var ok bool
	if seek != math.MinInt64 {
		ok = it.SeekTo(seek)
	} else {
		ok = it.Next()
	}
	for ; ok && skip > 0; skip-- {
		pts = append(pts, at(&it))
		ok = it.Next()
	}
	for ; ok; ok = it.Next() {
		end := it.BlockEnd()
		blk := it.Block()
		if blk.Len() == 0 || blk.Len() > batch {
			t.Fatalf("block of %d points", blk.Len())
		}
		if blk.T[blk.Len()-1] != end {
			t.Fatalf("BlockEnd = %d before Block, whose last point is at %d", end, blk.T[blk.Len()-1])
		}
		fs, floats := blk.Floats()
		if floats && len(fs) != blk.Len() {
			t.Fatalf("Floats: %d values of a block of %d points", len(fs), blk.Len())
		}
		anyInt := false
		for i, tm := range blk.T {
			v := blk.Value(i)
			anyInt = anyInt || v.IsInt()
			if floats && math.Float64bits(fs[i]) != math.Float64bits(v.Float()) {
				t.Fatalf("Floats()[%d] = %x, Value.Float = %x", i, math.Float64bits(fs[i]), math.Float64bits(v.Float()))
			}
			if f := blk.Float(i); math.Float64bits(f) != math.Float64bits(v.Float()) && !math.IsNaN(f) {
				t.Fatalf("Block.Float(%d) = %v, Value.Float = %v", i, f, v.Float())
			}
			pts = append(pts, Point{T: tm, V: v})
		}
		if floats == anyInt {
			t.Fatalf("Floats reports %v for a block with ints %v", floats, anyInt)
		}
	}
	return pts, it.Err()
}

func at(it *Iterator) Point {
	t, v := it.At()
	return Point{T: t, V: v}
}

// blockChunks is sampleChunks plus chunks of several batches.
func blockChunks(t *testing.T) map[string][]byte {
	chunks := sampleChunks(t)
	walk := make([]Point, 360)
	m := int64(5000)
	r := rng(11)
	for i := range walk {
		m += int64(r.intn(41) - 20)
		walk[i] = Point{T: testBase + int64(i)*10000 + int64(r.intn(20)), V: Float(float64(m) / 100)}
	}
	mixed := append([]Point(nil), walk...)
	for i := 0; i < len(mixed); i += 3 {
		mixed[i].V = Int(int64(i))
	}
	for name, pts := range map[string][]Point{"walk": walk, "mixed walk": mixed} {
		c, err := Append(nil, testBase, pts)
		if err != nil {
			t.Fatal(err)
		}
		chunks[name] = c
		if c, err = appendChunk(nil, testBase, pts, encMixed); err != nil {
			t.Fatal(err)
		}
		chunks[name+", mixed"] = c
	}
	return chunks
}

// TestBlock: reading by blocks yields what Decode does, from the start,
// after a SeekTo and from inside a batch, with each point's kind; First is
// the first point's timestamp.
func TestBlock(t *testing.T) {
	for name, b := range blockChunks(t) {
		t.Run(name, func(t *testing.T) {
			want, err := Decode(nil, b, testBase)
			if err != nil {
				t.Fatal(err)
			}
			var it Iterator
			if err := it.Reset(b, testBase); err != nil {
				t.Fatal(err)
			}
			if got := it.Block(); got.Len() != 0 {
				t.Errorf("Block before Next: %d points, want 0", got.Len())
			}
			if it.First() != want[0].T {
				t.Errorf("First = %d, want %d", it.First(), want[0].T)
			}
			if c, first, err := Peek(b, testBase); err != nil || c != len(want) || first != want[0].T {
				t.Errorf("Peek = %d, %d, %v, want %d, %d", c, first, err, len(want), want[0].T)
			}
			got, err := blockPoints(t, b, math.MinInt64, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, got, want)
			for _, skip := range []int{1, 3, 63, 64, 65} {
				got, err := blockPoints(t, b, math.MinInt64, skip)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, got, want)
			}
			mid := want[len(want)/2]
			got, err = blockPoints(t, b, mid.T, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, got, want[len(want)/2:])
		})
	}
}

// TestFirstOutsideTheHour: Reset rejects a first timestamp past the hour,
// so First is always inside it.
func TestFirstOutsideTheHour(t *testing.T) {
	var it Iterator
	if err := it.Reset(constChunk(1, 0, 0, HourMillis, 0), testBase); err == nil {
		t.Fatalf("Reset accepted a first timestamp at the end of the hour (First %d)", it.First())
	}
	if err := it.Reset(constChunk(1, 0, 0, HourMillis-1, 0), testBase); err != nil || it.First() != testBase+HourMillis-1 {
		t.Fatalf("Reset = %v, First = %d, want nil, %d", err, it.First(), testBase+HourMillis-1)
	}
}

func TestBlockNoAllocs(t *testing.T) {
	b := blockChunks(t)["mixed walk"]
	var it Iterator
	var sum float64
	if a := testing.AllocsPerRun(100, func() {
		_ = it.Reset(b, testBase)
		for ok := it.Next(); ok; ok = it.Next() {
			blk := it.Block()
			for i := range blk.T {
				sum += blk.Float(i)
			}
		}
	}); a != 0 {
		t.Errorf("Reset+Next+Block: %v allocs per run, want 0", a)
	}
}
