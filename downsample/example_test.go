package downsample_test

import (
	"errors"
	"fmt"

	"hourglass/chunk"
	"hourglass/downsample"
)

func ExampleParseSpec() {
	spec, err := downsample.ParseSpec("1dc-sum-null")
	fmt.Println(spec.N, spec.Unit, spec.Calendar, spec.Agg, spec.Fill, err)

	_, err = downsample.ParseSpec("1m-none")
	fmt.Println(err)
	_, err = downsample.ParseSpec("1m-foo")
	fmt.Println(errors.Is(err, downsample.ErrInvalidSpec), errors.Is(err, downsample.ErrUnknownAggregator))
	// Output:
	// 1 d true sum null <nil>
	// invalid downsample spec "1m-none": cannot use the NONE aggregator for downsampling
	// true true
}

func ExampleLookup() {
	_, err := downsample.Lookup("avrage")
	fmt.Println(err)
	avg, _ := downsample.Lookup("avg")
	fmt.Println(avg.Ints([]int64{1, 2}), avg.Floats([]float64{1, 2}), avg.Interpolation())
	// Output:
	// No such aggregation function: avrage
	// 1 1.5 LERP
}

// The pipeline of one sub-query: per series, downsample and then rate;
// then aggregate the series into one.
func Example() {
	const s = 1000 // ms
	web1 := []chunk.Point{
		{T: 0 * s, V: chunk.Int(100)}, {T: 30 * s, V: chunk.Int(400)},
		{T: 60 * s, V: chunk.Int(700)}, {T: 90 * s, V: chunk.Int(1000)},
		{T: 120 * s, V: chunk.Int(1300)},
	}
	web2 := []chunk.Point{
		{T: 10 * s, V: chunk.Int(50)}, {T: 70 * s, V: chunk.Int(110)},
		{T: 130 * s, V: chunk.Int(170)},
	}
	spec, _ := downsample.ParseSpec("1m-max")
	sum, _ := downsample.Lookup("sum")

	var rates [][]chunk.Point
	for _, series := range [][]chunk.Point{web1, web2} {
		ds := downsample.Downsample(nil, series, spec, 0, 150*s, nil)
		rates = append(rates, downsample.Rate(nil, ds, downsample.RateOptions{Counter: true}))
	}
	for _, p := range downsample.Aggregate(nil, rates, sum, true) {
		fmt.Println(p.T/s, p.V)
	}
	// web1's minute maxima are 400, 1000, 1300 and web2's 50, 110, 170, so
	// the rates are 10 and 5 per second, and 1 and 1.
	// Output:
	// 60 11
	// 120 6
}

// OpenTSDB's documented interpolation example: A and B never share a
// timestamp, so each is interpolated at the other's points.
func ExampleAggregate() {
	a := []chunk.Point{{T: 110, V: chunk.Int(5)}, {T: 130, V: chunk.Int(15)}, {T: 150, V: chunk.Int(5)}}
	b := []chunk.Point{{T: 100, V: chunk.Int(10)}, {T: 120, V: chunk.Int(20)}, {T: 140, V: chunk.Int(10)}, {T: 160, V: chunk.Int(20)}}
	sum, _ := downsample.Lookup("sum")
	for _, p := range downsample.Aggregate(nil, [][]chunk.Point{a, b}, sum, false) {
		fmt.Print(p.V, " ")
	}
	fmt.Println()
	// Output:
	// 10 20 30 30 20 20 20
}
