package rollup_test

import (
	"fmt"

	"hourglass/chunk"
	"hourglass/rollup"
)

// Rollups of a counter in 10-minute buckets, written as one cell and read
// back; the increase over both buckets counts the reset.
func Example() {
	pts := []chunk.Point{
		{T: 0, V: chunk.Int(100)},
		{T: 300_000, V: chunk.Int(160)},
		{T: 600_000, V: chunk.Int(20)}, // a reset
		{T: 900_000, V: chunk.Int(50)},
	}
	bs, err := rollup.Compute(nil, pts, 600_000)
	if err != nil {
		panic(err)
	}
	cell, err := rollup.AppendCell(nil, 0, 600_000, bs)
	if err != nil {
		panic(err)
	}
	var it rollup.Iterator
	var all rollup.Bucket
	for it.Reset(cell, 0); it.Next(); {
		b := it.At()
		fmt.Printf("%d: count %d sum %v min %v max %v\n", b.Start, b.Count, b.Sum, b.Min, b.Max)
		if all, err = rollup.Merge(all, *b); err != nil {
			panic(err)
		}
	}
	if it.Err() != nil {
		panic(it.Err())
	}
	fmt.Printf("increase %v, resets %d, %d bytes\n", all.Increase(), all.Resets, len(cell))
	// Output:
	// 0: count 2 sum 260 min 100 max 160
	// 600000: count 2 sum 70 min 20 max 50
	// increase 110, resets 1, 41 bytes
}
