package rollup

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"hourglass/chunk"
)

// addOneByOne is the reference AddPoints answers to: Add a point at a
// time, stopping at the first error.
func addOneByOne(b *Builder, dst []Bucket, pts []chunk.Point) ([]Bucket, error) {
	for _, p := range pts {
		var err error
		if dst, err = b.Add(dst, p.T, p.V); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// sameAsAdd fails t unless AddPoints over pts, cut in two at split (two
// calls, the bucket open across them), gives the buckets Add gives one
// point at a time, bit for bit, and fails where it fails.
func sameAsAdd(t *testing.T, pts []chunk.Point, iv int64, split int) {
	t.Helper()
	var ref, fast Builder
	ref.Reset(iv)
	fast.Reset(iv)
	want, werr := addOneByOne(&ref, nil, pts)
	got, gerr := fast.AddPoints(nil, pts[:split])
	if gerr == nil {
		got, gerr = fast.AddPoints(got, pts[split:])
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("error %v, want %v", gerr, werr)
	}
	want, got = ref.Flush(want), fast.Flush(got)
	if len(got) != len(want) {
		t.Fatalf("%d buckets, want %d", len(got), len(want))
	}
	for i := range want {
		if !identical(&got[i], &want[i]) || got[i].SumExact != want[i].SumExact {
			t.Fatalf("bucket %d of %d:\ngot  %+v\nwant %+v", i, len(want), got[i], want[i])
		}
	}
}

// FuzzAddPoints: AddPoints (Compute's loop) is Add point by point, bit for
// bit, for any points: out of order, repeated, NaNs, markers, ±Inf, -0,
// ints near the int64 edges, timestamps near them too.
func FuzzAddPoints(f *testing.F) {
	var seed []byte
	for i, b := range []uint64{math.Float64bits(math.NaN()), StaleNaNBits, math.Float64bits(math.Inf(1)),
		math.Float64bits(math.Inf(-1)), math.Float64bits(math.Copysign(0, -1)), math.Float64bits(12.34), 1 << 63, 1<<63 - 1, 7, 3} {
		seed = append(seed, pointBytes(byte(40*i), byte(i), b)...)
		seed = append(seed, pointBytes(3, byte(i+1), b)...)
	}
	f.Add(seed, int64(1_767_225_600_000), uint8(0), uint8(3))
	f.Add(seed, int64(math.MinInt64), uint8(2), uint8(9))
	f.Add(seed, int64(math.MaxInt64-100_000), uint8(1), uint8(1))
	f.Add(append(pointBytes(0, 0, 5), pointBytes(0, 0, 6)...), int64(0), uint8(3), uint8(1))
	f.Add(append(pointBytes(200, 0, 5), pointBytes(255, 0, 6)...), int64(-5), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, t0 int64, ivPick, split uint8) {
		iv := []int64{1000, 60_000, 600_000, 3_600_000}[ivPick%4]
		var pts []chunk.Point
		tt := t0
		for ; len(data) >= 10; data = data[10:] {
			// A signed step: repeated and earlier timestamps too.
			tt += int64(int8(data[0])) * 997
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
			pts = append(pts, chunk.Point{T: tt, V: v})
		}
		sameAsAdd(t, pts, iv, int(split)%(len(pts)+1))
	})
}

// TestAddPointsEqualsAdd: the same over random series of every mix
// randomPoints makes, at each interval, split anywhere.
func TestAddPointsEqualsAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 8))
	for i := range 600 {
		iv := []int64{1000, 60_000, 600_000, 3_600_000}[r.IntN(4)]
		pts := randomPoints(r, int64(r.IntN(1000))*3_600_000, 7_200_000, 1+r.IntN(2000), i%3)
		sameAsAdd(t, pts, iv, r.IntN(len(pts)+1))
	}
	// Out of order: AddPoints stops where Add does.
	pts := []chunk.Point{{T: 1, V: chunk.Int(1)}, {T: 2, V: chunk.Int(2)}, {T: 2, V: chunk.Int(3)}, {T: 4, V: chunk.Int(4)}}
	sameAsAdd(t, pts, 1000, 0)
	var b Builder
	b.Reset(1000)
	if _, err := b.AddPoints(nil, pts); err == nil {
		t.Fatal("a repeated timestamp was accepted")
	}
}
