package rollup

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"hourglass/chunk"
)

var update = flag.Bool("update", false, "rewrite the fixtures in testdata/ from their generators")

// decodeAll reads every bucket of cell.
func decodeAll(cell []byte, base int64) ([]Bucket, int64, error) {
	return decodeFields(cell, base, FieldsAll)
}

func decodeFields(cell []byte, base int64, f Fields) ([]Bucket, int64, error) {
	var it Iterator
	it.ResetFields(cell, base, f)
	var out []Bucket
	for it.Next() {
		out = append(out, *it.At())
	}
	return out, it.Interval(), it.Err()
}

func roundTrip(t *testing.T, base, iv int64, bs []Bucket) []byte {
	t.Helper()
	cell, err := AppendCell(nil, base, iv, bs)
	if err != nil {
		t.Fatal(err)
	}
	got, giv, err := decodeAll(cell, base)
	if err != nil {
		t.Fatalf("decode: %v (cell %x)", err, cell)
	}
	if giv != iv || len(got) != len(bs) {
		t.Fatalf("decoded %d buckets at %d ms, want %d at %d ms", len(got), giv, len(bs), iv)
	}
	for i := range bs {
		if !identical(&got[i], &bs[i]) {
			t.Fatalf("bucket %d:\ngot  %+v\nwant %+v", i, got[i], bs[i])
		}
	}
	return cell
}

// identical compares bit for bit, NaN payloads and -0 included.
func identical(a, b *Bucket) bool {
	x, y := *a, *b
	if !x.Sum.Identical(y.Sum) || chunk.Float(x.Correction).Bits() != chunk.Float(y.Correction).Bits() {
		return false
	}
	x.Sum, y.Sum, x.Correction, y.Correction = chunk.Value{}, chunk.Value{}, 0, 0
	return x == y
}

func TestCellRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		base := int64(r.IntN(1000)) * 86_400_000
		iv := []int64{60_000, 600_000, 3_600_000}[r.IntN(3)]
		pts := randomPoints(r, base, 86_400_000, 1+r.IntN(3000), i%3)
		bs, err := Compute(nil, pts, iv)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, base, iv, bs)
	}
}

// edgeBuckets are hand-made buckets that Compute rarely makes.
func edgeBuckets() []Bucket {
	return []Bucket{
		{Start: 0, StaleEnd: true},
		{Start: 600_000, Count: 2, NaN: 2},
		{Start: 1_200_000, Count: 1, FirstT: 1_799_999, LastT: 1_799_999, First: negZer, Last: negZer, Min: negZer, Max: negZer, Sum: negZer},
		{Start: 3_000_000, Count: 3, FirstT: 3_000_000, LastT: 3_599_999, First: chunk.Int(-1 << 63), Last: chunk.Int(1<<63 - 1),
			Min: chunk.Int(-1 << 63), Max: chunk.Int(1<<63 - 1), Sum: chunk.FloatBits(0x7ff8000000000001), SumOverflow: true,
			Changes: 2, Resets: 1, Correction: -0.0 * -1},
		{Start: 6_000_000, Count: 2, FirstT: 6_000_001, LastT: 6_000_002, First: chunk.Float(0.1), Last: chunk.Float(12.345),
			Min: chunk.Float(0.1), Max: chunk.Float(12.345), Sum: chunk.Float(12.445), Changes: 1, Resets: 0, Correction: negZer.Float()},
	}
}

func TestCellEdges(t *testing.T) {
	roundTrip(t, 0, 600_000, edgeBuckets())
	roundTrip(t, 0, 600_000, nil)
}

func TestAppendCellRefuses(t *testing.T) {
	good := edgeBuckets()
	for _, c := range []struct {
		name string
		bs   []Bucket
		base int64
	}{
		{"out of order", []Bucket{good[1], good[0]}, 0},
		{"before the base", good[1:2], 1_200_000},
		{"off a boundary", []Bucket{{Start: 5, StaleEnd: true}}, 0},
		{"empty", []Bucket{{Start: 0}}, 0},
		{"last past the bucket", []Bucket{{Start: 0, Count: 1, LastT: 600_000}}, 0},
		{"int overflowed sum", []Bucket{{Start: 0, Count: 1, Sum: chunk.Int(1), SumOverflow: true}}, 0},
		{"too many changes", []Bucket{{Start: 0, Count: 1, Changes: 1}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := AppendCell(nil, c.base, 600_000, c.bs); !errors.Is(err, ErrInvalidBuckets) {
				t.Fatalf("err = %v, want ErrInvalidBuckets", err)
			}
		})
	}
}

// TestCellCorrupt: every truncation and many byte flips end in an error
// or in buckets, never in a panic; truncations always in an error.
func TestCellCorrupt(t *testing.T) {
	cell := roundTrip(t, 0, 600_000, edgeBuckets())
	for n := range len(cell) {
		if _, _, err := decodeAll(cell[:n], 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: err = %v, want ErrCorrupt", n, len(cell), err)
		}
	}
	if _, _, err := decodeAll(append(cell[:len(cell):len(cell)], 0), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a trailing byte: err = %v", err)
	}
	for i := range cell {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(cell)
			b[i] ^= x
			decodeAll(b, 0)
		}
	}
}

func TestIteratorAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	bs, _ := Compute(nil, randomPoints(r, 0, 86_400_000, 5000, 1), 600_000)
	cell, _ := AppendCell(nil, 0, 600_000, bs)
	var it Iterator
	if a := testing.AllocsPerRun(20, func() {
		for it.Reset(cell, 0); it.Next(); {
		}
	}); a != 0 {
		t.Fatalf("decoding a cell allocates %v times", a)
	}
}

// TestFixtures freezes the format: the cells in testdata/ were written
// by AppendCell from the generators below (see testdata/README.md); the
// encoder must write them byte for byte and the decoder read them back.
// The version 1 cells (*-v1.cell, written by version 1's AppendCell, now
// appendCellV1) must still read, whole and for the sums alone.
func TestFixtures(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			cell, err := AppendCell(nil, f.base, f.iv, f.bs)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", f.name+".cell")
			if *update {
				if err := os.WriteFile(path, cell, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			checkFixture(t, path, cell, f)
			v1, err := appendCellV1(nil, f.base, f.iv, f.bs)
			if err != nil {
				t.Fatal(err)
			}
			checkFixture(t, filepath.Join("testdata", f.name+"-v1.cell"), v1, f)
		})
	}
}

func checkFixture(t *testing.T, path string, cell []byte, f fixture) {
	t.Helper()
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cell, golden) {
		t.Errorf("%s: encoding changed: got %d bytes %x\nwant %d bytes %x\n(run with -update after a deliberate format change)", path, len(cell), cell, len(golden), golden)
	}
	got, _, err := decodeAll(golden, f.base)
	if err != nil || len(got) != len(f.bs) {
		t.Fatalf("%s: decoding the fixture: %d buckets, %v", path, len(got), err)
	}
	for i := range got {
		if !identical(&got[i], &f.bs[i]) {
			t.Fatalf("%s: bucket %d: got %+v, want %+v", path, i, got[i], f.bs[i])
		}
	}
	for _, fs := range []Fields{FieldsSum, FieldsSumTimes} {
		sums, _, err := decodeFields(golden, f.base, fs)
		if err != nil || len(sums) != len(f.bs) {
			t.Fatalf("%s: decoding the fixture's fields %d: %d buckets, %v", path, fs, len(sums), err)
		}
		for i := range sums {
			if !sameFields(fs, &sums[i], &f.bs[i]) {
				t.Fatalf("%s: bucket %d: fields %d %+v, want %+v", path, i, fs, sums[i], f.bs[i])
			}
		}
	}
}

// sameSums compares the fields FieldsSum reads.
func sameSums(a, b *Bucket) bool {
	return a.Start == b.Start && a.Count == b.Count && a.NaN == b.NaN && a.StaleEnd == b.StaleEnd &&
		a.Sum.Identical(b.Sum) && a.SumOverflow == b.SumOverflow && a.SumExact == b.SumExact
}

// sameFields compares the fields f reads (FieldsSum or FieldsSumTimes).
func sameFields(f Fields, a, b *Bucket) bool {
	return sameSums(a, b) && (f != FieldsSumTimes || a.FirstT == b.FirstT && a.LastT == b.LastT)
}

type fixture struct {
	name     string
	base, iv int64
	bs       []Bucket
}

// fixtures: a day of a two-decimal gauge and of a counter with resets,
// 10s apart, in 10m buckets, and the edge buckets.
func fixtures() []fixture {
	const day = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z
	var gauge, counter []chunk.Point
	g, c := int64(5000), int64(1000)
	for i := range int64(8640) {
		g += (i*7919)%301 - 150
		c += 500 + (i*104729)%500
		if i%2000 == 1999 {
			c = i % 97
		}
		gauge = append(gauge, chunk.Point{T: day + i*10_000, V: chunk.Float(float64(g) / 100)})
		counter = append(counter, chunk.Point{T: day + i*10_000, V: chunk.Int(c)})
	}
	gb, _ := Compute(nil, gauge, 600_000)
	cb, _ := Compute(nil, counter, 600_000)
	return []fixture{
		{"gauge-10m", day, 600_000, gb},
		{"counter-10m", day, 600_000, cb},
		{"edges", 0, 600_000, edgeBuckets()},
	}
}

// TestCanonicalIsDecimal holds the iterator's shortcut to decimal(): where
// canonical says a mantissa read is known, decimal() of the value gives
// that scale and mantissa, so a cell decodes as it did when every
// reference's mantissa was recomputed. Random mantissas of every length
// and scale, with and without trailing zeros, and the bounds.
func TestCanonicalIsDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	check := func(k int, m int64) {
		c := canonical(k, m)
		if !c.known {
			return
		}
		dk, dm, ok := decimal(float64(m) / pow10[k])
		if !ok || dk != k || dm != m || c.k != k || c.m != m {
			t.Fatalf("canonical(%d, %d) = %+v, decimal() = %d, %d, %v", k, m, c, dk, dm, ok)
		}
	}
	known := 0
	for range 200_000 {
		k := r.IntN(maxScale + 1)
		m := r.Int64N(int64(1)<<53) >> r.IntN(53)
		if r.IntN(2) == 0 {
			m = -m
		}
		if r.IntN(4) == 0 {
			m -= m % 10
		}
		check(k, m)
		if canonical(k, m).known {
			known++
		}
	}
	for k := 0; k <= maxScale; k++ {
		for _, m := range []int64{0, 1, -1, 9, 1e15 - 1, -(1e15 - 1), 1e15, 1<<53 - 1, -(1<<53 - 1), 999_999_999_999_999} {
			check(k, m)
		}
	}
	if known < 100_000 {
		t.Fatalf("only %d of 200,000 random mantissas known: the shortcut is not taken", known)
	}
}
