package downsample

import (
	"math"

	"hourglass/chunk"
	"math/bits"
	"slices"
)

// The accumulators compute an aggregator over a stream of values without
// storing them, except for median and the percentiles, which need the whole
// set and keep it in a caller-provided buffer. Both follow OpenTSDB's
// Aggregators.java operation for operation so that float results are bit for
// bit the same; explicit float64() conversions keep the compiler from fusing
// a multiply and an add into one FMA, which would round differently.

// acc is the state both accumulators share and the operations they share
// (OpenTSDB's runDouble and runLong differ only in NaN skipping, in how
// they finish, and in the count's type).
type acc[T int64 | float64] struct {
	a     *Aggregator
	n     int // values seen (non-NaN for floats)
	v     T   // sum, min, max, product, first or last, by kind
	first T   // diff: the first value
	mean  float64
	m2    float64 // dev: running mean and sum of squared deviations (Welford)
	buf   []T     // median and percentiles: the values
}

func (s *acc[T]) reset(a *Aggregator, buf []T) {
	*s = acc[T]{a: a, buf: buf[:0]}
}

func (s *acc[T]) add(x T) {
	s.n++
	switch s.a.kind {
	case kSum, kAvg:
		s.v += x
	case kSquareSum:
		s.v += T(x * x)
	case kMin:
		if s.n == 1 || x < s.v {
			s.v = x
		}
	case kMax:
		if s.n == 1 || x > s.v {
			s.v = x
		}
	case kFirst, kNone:
		if s.n == 1 {
			s.v = x
		}
	case kLast:
		s.v = x
	case kDiff:
		if s.n == 1 {
			s.first = x
		}
		s.v = x
	case kMult:
		if s.n == 1 {
			s.v = x
		} else {
			s.v *= x
		}
	case kDev:
		f := float64(x)
		if s.n == 1 {
			s.mean = f
		} else {
			old := s.mean
			s.mean = old + (f-old)/float64(s.n)
			s.m2 += float64((f - old) * (f - s.mean))
		}
	case kMedian, kPercentile:
		s.buf = append(s.buf, x)
	}
}

// floatAcc is OpenTSDB's runDouble with NaN skipping.
type floatAcc struct{ acc[float64] }

func (s *floatAcc) add(x float64) {
	if x != x { // NaN
		return
	}
	s.acc.add(x)
}

// addBlock adds the values of points i..j-1 of b, as add would one by
// one; the common aggregators in loops of their own.
func (s *floatAcc) addBlock(b *chunk.Block, i, j int) {
	v, n := s.v, s.n
	switch s.a.kind {
	case kSum, kAvg:
		for k := i; k < j; k++ {
			if x := b.Float(k); x == x {
				v += x
				n++
			}
		}
	case kCount:
		for k := i; k < j; k++ {
			if x := b.Float(k); x == x {
				n++
			}
		}
	case kMin:
		for k := i; k < j; k++ {
			if x := b.Float(k); x == x {
				if n++; n == 1 || x < v {
					v = x
				}
			}
		}
	case kMax:
		for k := i; k < j; k++ {
			if x := b.Float(k); x == x {
				if n++; n == 1 || x > v {
					v = x
				}
			}
		}
	default:
		for k := i; k < j; k++ {
			s.add(b.Float(k))
		}
		return
	}
	s.v, s.n = v, n
}

// addPoints adds the values of pts, as add would one by one; the common
// aggregators in loops of their own.
func (s *floatAcc) addPoints(pts []chunk.Point) {
	v, n := s.v, s.n
	switch s.a.kind {
	case kSum, kAvg:
		for i := range pts {
			if x := pts[i].V.Float(); x == x {
				v += x
				n++
			}
		}
	case kCount:
		for i := range pts {
			if x := pts[i].V.Float(); x == x {
				n++
			}
		}
	case kMin:
		for i := range pts {
			if x := pts[i].V.Float(); x == x {
				if n++; n == 1 || x < v {
					v = x
				}
			}
		}
	case kMax:
		for i := range pts {
			if x := pts[i].V.Float(); x == x {
				if n++; n == 1 || x > v {
					v = x
				}
			}
		}
	default:
		for i := range pts {
			s.add(pts[i].V.Float())
		}
		return
	}
	s.v, s.n = v, n
}

func (s *floatAcc) result() float64 {
	if s.a.kind == kCount {
		return float64(s.n)
	}
	if s.n == 0 {
		return math.NaN()
	}
	switch s.a.kind {
	case kAvg:
		return s.v / float64(s.n)
	case kDiff:
		if s.n == 1 {
			return 0
		}
		return s.v - s.first
	case kDev:
		if s.n == 1 {
			return 0
		}
		return math.Sqrt(s.m2 / float64(s.n))
	case kMedian:
		return nth(s.buf, len(s.buf)/2)
	case kPercentile:
		return percentile(s.buf, s.a.pct, s.a.est)
	}
	return s.v
}

// intAcc is OpenTSDB's runLong.
type intAcc struct{ acc[int64] }

func (s *intAcc) result() int64 {
	if s.n == 0 {
		return 0
	}
	switch s.a.kind {
	case kCount:
		return int64(s.n)
	case kAvg:
		return s.v / int64(s.n)
	case kDiff:
		if s.n == 1 {
			return 0
		}
		return s.v - s.first
	case kDev:
		if s.n == 1 {
			return 0
		}
		return floatToInt(math.Sqrt(s.m2 / float64(s.n)))
	case kMedian:
		return nth(s.buf, len(s.buf)/2)
	case kPercentile:
		return floatToInt(percentile(s.buf, s.a.pct, s.a.est))
	}
	return s.v
}

// percentile is Apache Commons Math 3's Percentile.evaluate, with the given
// estimation type: index() picks a 1-based real position and estimate()
// interpolates between the two order statistics around it, which it finds
// by selection as Commons Math's KthSelector does. vals must hold no NaN;
// it is reordered.
func percentile[T int64 | float64](vals []T, pct float64, est estimation) float64 {
	n := len(vals)
	switch n {
	case 0:
		return math.NaN()
	case 1:
		return float64(vals[0])
	}
	p := pct / 100
	var pos float64
	switch est {
	case estR3:
		// index = N·p rounded half to even; below 0.5/N it is the minimum.
		if p <= 0.5/float64(n) {
			pos = 0
		} else {
			pos = math.RoundToEven(float64(n) * p)
		}
	case estR7:
		// index = (N−1)·p + 1, Excel's method.
		if p == 1 {
			pos = float64(n)
		} else {
			pos = 1 + float64(n-1)*p
		}
	default:
		// LEGACY: index = (N+1)·p.
		if p == 1 {
			pos = float64(n)
		} else {
			pos = p * float64(n+1)
		}
	}
	if pos < 1 {
		return float64(slices.Min(vals))
	}
	if pos >= float64(n) {
		return float64(slices.Max(vals))
	}
	fpos := math.Floor(pos)
	i := int(fpos)
	lower := float64(nth(vals, i-1))
	upper := float64(slices.Min(vals[i:])) // everything after the (i−1)th is ≥ it
	return lower + float64((pos-fpos)*(upper-lower))
}

// nth reorders vals so that vals[k] is its k-th smallest element (from 0),
// no element before it larger and none after it smaller, and returns it:
// quickselect with a median-of-three pivot, falling back to sorting when
// the partitions keep coming out lopsided. vals must hold no NaN.
func nth[T int64 | float64](vals []T, k int) T {
	lo, hi := 0, len(vals)-1
	for budget := 2 * bits.Len(uint(len(vals))); hi-lo > 16; budget-- {
		if budget == 0 {
			slices.Sort(vals[lo : hi+1])
			return vals[k]
		}
		// Median of three to vals[lo], with vals[lo+1] <= it <= vals[hi].
		mid := lo + (hi-lo)/2
		vals[mid], vals[lo+1] = vals[lo+1], vals[mid]
		if vals[lo+1] > vals[hi] {
			vals[lo+1], vals[hi] = vals[hi], vals[lo+1]
		}
		if vals[lo] > vals[hi] {
			vals[lo], vals[hi] = vals[hi], vals[lo]
		}
		if vals[lo+1] > vals[lo] {
			vals[lo+1], vals[lo] = vals[lo], vals[lo+1]
		}
		pivot := vals[lo]
		i, j := lo+1, hi
		for {
			for i++; vals[i] < pivot; i++ {
			}
			for j--; vals[j] > pivot; j-- {
			}
			if j < i {
				break
			}
			vals[i], vals[j] = vals[j], vals[i]
		}
		vals[lo], vals[j] = vals[j], pivot
		switch {
		case j < k:
			lo = j + 1
		case j > k:
			hi = j - 1
		default:
			return vals[k]
		}
	}
	// Insertion sort of the short rest.
	for i := lo + 1; i <= hi; i++ {
		for j := i; j > lo && vals[j] < vals[j-1]; j-- {
			vals[j], vals[j-1] = vals[j-1], vals[j]
		}
	}
	return vals[k]
}

// floatToInt converts like Java's (long) cast: truncation toward zero,
// saturating at the int64 range, NaN to 0. (Go leaves out-of-range
// conversions implementation-defined.)
func floatToInt(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 9223372036854775807:
		return math.MaxInt64
	case f <= -9223372036854775808:
		return math.MinInt64
	}
	return int64(f)
}
