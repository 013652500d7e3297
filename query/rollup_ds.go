package query

import (
	"math"
	"math/bits"

	"hourglass/chunk"
	"hourglass/rollup"
)

// bucketAcc combines the rollup buckets of one downsample bucket into the
// value the downsampler gives over their raw points, bit for bit. The
// downsampler works in float64 (OpenTSDB's downsampled values are always
// doubles) and skips NaNs; a bucket's fields are the points' own values,
// so:
//
//   - count is Σ N; first and last the first and last bucket's with values;
//     min and max compare as float64 and keep the earliest of equals, as
//     the downsampler does; diff is last − first (0 for one value).
//   - sum and avg add in point order from 0. One bucket's float Sum is that
//     same sum (and so is an overflowed int sum, kept as the float sum).
//     An int Sum is the exact sum, equal to the float additions only while
//     every partial sum is an integer below 2^53: N × max(|Min|, |Max|)
//     ≤ 2^53 bounds them. Several buckets' float sums added together round
//     differently: inexact, and the series is read raw.
type bucketAcc struct {
	exists      bool // a bucket (a point, a NaN or a staleness marker) was added
	n           int64
	first, last float64
	min, max    float64
	withValues  int // buckets with N > 0
	fsum        float64
	isum        int64
	bound       int64 // Σ N × max|value| of int buckets, saturated
	allInt      bool  // every bucket with values has an int Sum within its bound
	oneFloatSum bool  // withValues == 1 and its Sum is a float
}

func (a *bucketAcc) reset() { *a = bucketAcc{allInt: true} }

// exact2p53 is the bound below which an int64 converts to float64 exactly
// and float additions of such integers do not round.
const exact2p53 = int64(1) << 53

func absInt(x int64) (int64, bool) {
	if x == math.MinInt64 {
		return 0, false
	}
	if x < 0 {
		return -x, true
	}
	return x, true
}

// add adds the next bucket, in time order.
func (a *bucketAcc) add(b *rollup.Bucket) {
	a.exists = true
	n := b.N()
	if n == 0 {
		return
	}
	mn, mx := b.Min.Float(), b.Max.Float()
	if a.withValues == 0 {
		a.first, a.min, a.max = b.First.Float(), mn, mx
	} else {
		if mn < a.min {
			a.min = mn
		}
		if mx > a.max {
			a.max = mx
		}
	}
	a.withValues++
	a.n += n
	a.last = b.Last.Float()
	a.oneFloatSum = a.withValues == 1 && !b.Sum.IsInt()
	if a.withValues == 1 {
		a.fsum = b.Sum.Float()
	}
	if !b.Sum.IsInt() || !a.allInt {
		a.allInt = false
		return
	}
	lo, ok1 := absInt(b.Min.Int())
	hi, ok2 := absInt(b.Max.Int())
	m := max(lo, hi)
	hiMul, prod := bits.Mul64(uint64(n), uint64(m))
	if !ok1 || !ok2 || hiMul != 0 || prod > uint64(exact2p53) {
		a.allInt = false
		return
	}
	a.bound += int64(prod)
	if a.bound > exact2p53 {
		a.allInt = false
		return
	}
	a.isum += b.Sum.Int() // |Σ| ≤ bound ≤ 2^53: no overflow
}

// sumAggs are the downsampling functions addSum serves: they read only
// N and Sum.
var sumAggs = map[string]bool{"sum": true, "zimsum": true, "pfsum": true, "avg": true, "count": true}

// addSum is add for a bucket of which only Count, NaN, Sum, SumOverflow
// and SumExact were read (rollup.FieldsSum), for sumAggs, when each
// downsampled point is one bucket: SumExact is then add's bound check.
// A second bucket with values makes the sum inexact (read raw).
func (a *bucketAcc) addSum(b *rollup.Bucket) {
	a.exists = true
	n := b.N()
	if n == 0 {
		return
	}
	a.withValues++
	a.n += n
	a.oneFloatSum = a.withValues == 1 && !b.Sum.IsInt()
	if a.withValues == 1 {
		a.fsum = b.Sum.Float()
	}
	if !b.SumExact || !a.allInt || a.withValues > 1 {
		a.allInt = false
		return
	}
	a.isum = b.Sum.Int()
}

// oneBucketAgg is a downsampling function of sumAggs when each
// downsampled point is one bucket read with rollup.FieldsSum.
type oneBucketAgg int8

const (
	oneSum oneBucketAgg = iota // sum, zimsum, pfsum
	oneAvg
	oneCount
)

func oneBucketAggOf(name string) oneBucketAgg {
	switch name {
	case "avg":
		return oneAvg
	case "count":
		return oneCount
	}
	return oneSum
}

// result is what addSum of b alone and result give, without a bucketAcc:
// the downsampled value of the one bucket b and whether it is exact.
func (o oneBucketAgg) result(b *rollup.Bucket) (chunk.Value, bool) {
	n := b.N()
	if o == oneCount {
		return chunk.Float(float64(n)), true
	}
	if n == 0 {
		return chunk.Float(math.NaN()), true
	}
	var s float64
	switch {
	case b.SumExact:
		s = float64(b.Sum.Int())
	case !b.Sum.IsInt():
		s = b.Sum.Float()
	default:
		return chunk.Value{}, false
	}
	if o == oneAvg {
		s /= float64(n)
	}
	return chunk.Float(s), true
}

// sum returns the float sum the downsampler computes, and whether the
// buckets give it exactly.
func (a *bucketAcc) sum() (float64, bool) {
	switch {
	case a.withValues == 0:
		return 0, true
	case a.allInt:
		return float64(a.isum), true
	case a.oneFloatSum:
		return a.fsum, true
	}
	return 0, false
}

// result returns the downsampled value of the buckets added for the
// downsampling function name (one rollupAggs accepts), and whether it is
// exact. It mirrors downsample's floatAcc.result.
func (a *bucketAcc) result(name string) (chunk.Value, bool) {
	if name == "count" {
		return chunk.Float(float64(a.n)), true
	}
	if a.n == 0 {
		return chunk.Float(math.NaN()), true
	}
	switch name {
	case "sum", "zimsum", "pfsum":
		s, ok := a.sum()
		return chunk.Float(s), ok
	case "avg":
		s, ok := a.sum()
		return chunk.Float(s / float64(a.n)), ok
	case "min", "mimmin":
		return chunk.Float(a.min), true
	case "max", "mimmax":
		return chunk.Float(a.max), true
	case "first":
		return chunk.Float(a.first), true
	case "last":
		return chunk.Float(a.last), true
	case "diff":
		if a.n == 1 {
			return chunk.Float(0), true
		}
		return chunk.Float(a.last - a.first), true
	}
	return chunk.Value{}, false
}
