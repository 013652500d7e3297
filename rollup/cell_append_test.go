package rollup

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestAppendBucket: a cell built bucket by bucket with AppendBucket is
// byte for byte the cell AppendCell writes for all the buckets, over random
// series (ints, decimals, special values) cut at random points.
func TestAppendBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 500; n++ {
		pts := randomPoints(r, day0, dayMs, 1+r.IntN(400), n%4)
		bs, err := Compute(nil, pts, hourMs)
		if err != nil {
			t.Fatal(err)
		}
		k := r.IntN(len(bs) + 1)
		cell, end, err := AppendCellEnd(nil, day0, hourMs, bs[:k])
		if err != nil {
			t.Fatal(err)
		}
		for i := k; i < len(bs); i++ {
			if cell, end, err = AppendBucket(nil, cell, hourMs, end, &bs[i]); err != nil {
				t.Fatalf("case %d bucket %d: %v", n, i, err)
			}
		}
		want, wantEnd, err := AppendCellEnd(nil, day0, hourMs, bs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cell, want) || end.N != wantEnd.N || end.Next != wantEnd.Next || !end.refs.prevLast.Identical(wantEnd.refs.prevLast) || end.refs.sum != wantEnd.refs.sum {
			t.Fatalf("case %d (%d buckets, %d appended): cells differ\n got %x %+v\nwant %x %+v", n, len(bs), len(bs)-k, cell, end, want, wantEnd)
		}
	}
	// A bucket before the cell's end, and an end that is not the cell's.
	bs, _ := Compute(nil, randomPoints(r, day0, dayMs, 100, 0), hourMs)
	cell, end, _ := AppendCellEnd(nil, day0, hourMs, bs[1:])
	if _, _, err := AppendBucket(nil, cell, hourMs, end, &bs[0]); !errors.Is(err, ErrInvalidBuckets) {
		t.Errorf("a bucket before the end: %v", err)
	}
	end.N++
	if _, _, err := AppendBucket(nil, cell, hourMs, end, &bs[len(bs)-1]); !errors.Is(err, ErrInvalidBuckets) {
		t.Errorf("a wrong end: %v", err)
	}
}
