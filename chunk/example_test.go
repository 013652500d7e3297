package chunk_test

import (
	"fmt"

	"hourglass/chunk"
)

func ExampleAppend() {
	base := int64(1704067200000) // 2024-01-01T00:00:00Z, a whole hour
	pts := []chunk.Point{
		{T: base, V: chunk.Float(12.34)},
		{T: base + 10000, V: chunk.Float(12.35)},
		{T: base + 20000, V: chunk.Int(13)},
	}
	b, err := chunk.Append(nil, base, pts)
	if err != nil {
		panic(err)
	}
	var it chunk.Iterator
	if err := it.Reset(b, base); err != nil {
		panic(err)
	}
	for it.Next() {
		t, v := it.At()
		fmt.Println(t-base, v, v.IsInt())
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	// Output:
	// 0 12.34 false
	// 10000 12.35 false
	// 20000 13 true
}

func ExampleIterator_SeekTo() {
	base := int64(1704067200000)
	var pts []chunk.Point
	for i := range 360 { // one point every 10 s
		pts = append(pts, chunk.Point{T: base + int64(i)*10000, V: chunk.Int(int64(i))})
	}
	b, err := chunk.Append(nil, base, pts)
	if err != nil {
		panic(err)
	}
	var it chunk.Iterator
	if err := it.Reset(b, base); err != nil {
		panic(err)
	}
	// The points from 30 minutes past the hour on.
	for ok := it.SeekTo(base + 30*60*1000); ok; ok = it.Next() {
		t, v := it.At()
		if v.Int() >= 182 {
			break
		}
		fmt.Println((t-base)/1000, v)
	}
	fmt.Println(it.Len(), it.Err())
	// Output:
	// 1800 180
	// 1810 181
	// 360 <nil>
}
