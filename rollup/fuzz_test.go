package rollup

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"hourglass/chunk"
)

// pointsFrom turns fuzz bytes into increasing points: per point a 1-byte
// time step, a kind byte and 8 value bytes (an int, or float bits: NaN
// payloads, the staleness marker, ±Inf and -0 all reachable).
func pointsFrom(data []byte, t0 int64) []chunk.Point {
	var pts []chunk.Point
	t := t0
	for len(data) >= 10 {
		t += 1 + int64(data[0])*997
		bits := binary.BigEndian.Uint64(data[2:10])
		v := chunk.FloatBits(bits)
		switch data[1] % 4 {
		case 0:
			v = chunk.Int(int64(bits))
		case 1:
			v = chunk.Int(int64(int16(bits)))
		case 2:
			v = chunk.Float(float64(int32(bits)) / 100)
		}
		pts = append(pts, chunk.Point{T: t, V: v})
		data = data[10:]
	}
	return pts
}

func pointBytes(step, kind byte, bits uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{step, kind}, bits)
}

// FuzzRoundTrip: buckets computed from any points encode and decode bit
// for bit, and the merge of the buckets of any split equals the bucket of
// all points (float sums within rounding).
func FuzzRoundTrip(f *testing.F) {
	var seed []byte
	for _, b := range []uint64{math.Float64bits(math.NaN()), StaleNaNBits, math.Float64bits(math.Inf(1)),
		math.Float64bits(math.Inf(-1)), math.Float64bits(math.Copysign(0, -1)), math.Float64bits(12.34), 1 << 63, 1<<63 - 1} {
		seed = append(seed, pointBytes(200, 3, b)...)
		seed = append(seed, pointBytes(3, 0, b)...)
	}
	f.Add(seed, uint8(0), uint8(3))
	f.Add(seed, uint8(2), uint8(9))
	f.Add(pointBytes(1, 2, 1234), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, ivPick, split uint8) {
		iv := []int64{1000, 60_000, 600_000, 3_600_000}[ivPick%4]
		const base = 1_767_225_600_000
		pts := pointsFrom(data, base)
		bs, err := Compute(nil, pts, iv)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, base, iv, bs)
		// Version 1 cells of the same buckets still read.
		v1, err := appendCellV1(nil, base, iv, bs)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := decodeAll(v1, base)
		if err != nil || len(got) != len(bs) {
			t.Fatalf("version 1: %d buckets, %v", len(got), err)
		}
		for i := range bs {
			if !identical(&got[i], &bs[i]) {
				t.Fatalf("version 1: bucket %d:\ngot  %+v\nwant %+v", i, got[i], bs[i])
			}
		}
		// The same cell built bucket by bucket from a split (AppendBucket).
		k0 := int(split) % (len(bs) + 1)
		cell, end, err := AppendCellEnd(nil, base, iv, bs[:k0])
		if err != nil {
			t.Fatal(err)
		}
		for i := k0; i < len(bs); i++ {
			if cell, end, err = AppendBucket(nil, cell, iv, end, &bs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if want, _ := AppendCell(nil, base, iv, bs); !bytes.Equal(cell, want) {
			t.Fatalf("appended bucket by bucket from %d: %x, want %x", k0, cell, want)
		}
		if len(pts) == 0 {
			return
		}
		all, _ := Compute(nil, pts, 1<<40)
		k := int(split) % (len(pts) + 1)
		a, _ := Compute(nil, pts[:k], 1<<40)
		b, _ := Compute(nil, pts[k:], 1<<40)
		m := Bucket{Start: all[0].Start}
		for _, x := range append(a, b...) {
			if m, err = Merge(m, x); err != nil {
				t.Fatal(err)
			}
		}
		if d := diff(&m, &all[0], sumTol(pts)); d != "" {
			t.Fatalf("split at %d of %d: %s", k, len(pts), d)
		}
	})
}

// FuzzIterator: any bytes decode to buckets or a *CorruptionError, never a
// panic, whole, for the sums alone or the sums and times
// (FieldsSumTimes); whatever decodes whole re-encodes to a cell that
// decodes the same, and its sums (and times) alone are the same.
func FuzzIterator(f *testing.F) {
	for _, fx := range fixtures() {
		cell, _ := AppendCell(nil, fx.base, fx.iv, fx.bs)
		f.Add(cell, fx.base)
		v1, _ := appendCellV1(nil, fx.base, fx.iv, fx.bs)
		f.Add(v1, fx.base)
	}
	if cells, _ := filepath.Glob("testdata/*.cell"); len(cells) > 0 {
		for _, p := range cells {
			b, _ := os.ReadFile(p)
			f.Add(b, int64(0))
		}
	}
	f.Fuzz(func(t *testing.T, cell []byte, base int64) {
		sums, _, serr := decodeFields(cell, base, FieldsSum)
		times, _, terr := decodeFields(cell, base, FieldsSumTimes)
		bs, iv, err := decodeAll(cell, base)
		if err != nil {
			return
		}
		if serr != nil || len(sums) != len(bs) || terr != nil || len(times) != len(bs) {
			t.Fatalf("the sums alone: %d buckets, %v; with times: %d, %v; whole: %d", len(sums), serr, len(times), terr, len(bs))
		}
		for i := range bs {
			if !sameFields(FieldsSum, &sums[i], &bs[i]) || !sameFields(FieldsSumTimes, &times[i], &bs[i]) {
				t.Fatalf("bucket %d: sums %+v, with times %+v, whole %+v", i, sums[i], times[i], bs[i])
			}
		}
		roundTrip(t, base, iv, bs)
	})
}
