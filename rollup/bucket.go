package rollup

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"hourglass/chunk"
)

// StaleNaNBits are the IEEE-754 bits of Prometheus' staleness marker
// (prometheus/model/value.StaleNaN). hourglass stores the marker as a
// float with exactly these bits.
const StaleNaNBits uint64 = 0x7ff0000000000002

const (
	hourMs = int64(3_600_000)
	dayMs  = 24 * hourMs
)

// IsStale reports whether v is Prometheus' staleness marker.
func IsStale(v chunk.Value) bool { return !v.IsInt() && v.Bits() == StaleNaNBits }

// ErrInterval is wrapped by the error ValidateInterval returns.
var ErrInterval = errors.New("rollup: invalid interval")

// ValidateInterval reports an interval (ms) that cannot be a rollup
// interval. An interval either divides an hour (1m, 5m, 10m, 15m, 30m, 1h,
// or any divisor down to 1s) or is a whole number of hours dividing a day
// (2h, 3h, 4h, 6h, 8h, 12h, 1d), so that a bucket never straddles a raw
// row (an hour) or a day.
func ValidateInterval(intervalMs int64) error {
	switch {
	case intervalMs < 1000 || intervalMs%1000 != 0:
		return fmt.Errorf("%w: %d ms: must be whole seconds, at least 1s", ErrInterval, intervalMs)
	case intervalMs <= hourMs && hourMs%intervalMs == 0:
		return nil
	case intervalMs%hourMs == 0 && dayMs%intervalMs == 0:
		return nil
	}
	return fmt.Errorf("%w: %d ms: must divide an hour, or be whole hours dividing a day", ErrInterval, intervalMs)
}

// BucketStart returns the start of the bucket of interval ms holding t.
func BucketStart(t, intervalMs int64) int64 {
	s := t - t%intervalMs
	if t < 0 && t%intervalMs != 0 {
		s -= intervalMs
	}
	return s
}

// Bucket is the rollup of one series over one interval bucket.
//
// Values are those of the points themselves (kind and bits), except Sum
// and Correction. Only staleness markers are left out entirely; a NaN
// point is counted in Count and NaN and left out of every other field.
type Bucket struct {
	Start int64 // bucket start, Unix ms, a multiple of the interval
	Count int64 // points, staleness markers excluded, NaNs included
	NaN   int64 // of Count, the NaN points (bits other than the marker's)

	// The fields below are over the N = Count-NaN other points; they are
	// zero when N is 0.
	FirstT, LastT int64       // timestamps of the first and last of them
	First, Last   chunk.Value // their values
	Min, Max      chunk.Value // the smallest and largest (the first on a tie)
	// Sum is an int when every point is an int and the sum fits in an
	// int64; otherwise the float64 sum in point order (SumOverflow says the
	// points were all ints).
	Sum         chunk.Value
	SumOverflow bool
	Changes     int64   // consecutive points whose values differ (as float64)
	Resets      int64   // consecutive points where the value decreases (as float64)
	Correction  float64 // Σ of the value before each decrease, in point order

	// StaleEnd says a staleness marker came after the bucket's last point.
	StaleEnd bool

	// SumExact says Sum is an int whose float64 additions in point order
	// are exact: every value is an int and N × max(|Min|, |Max|) ≤ 2^53,
	// so every partial sum is an integer the float64 holds. It follows
	// from the fields above (SetSumExact); a reader of only the sums
	// (FieldsSum) gets it from the cell instead of from Min and Max.
	SumExact bool
}

// SetSumExact sets SumExact from the bucket's other fields.
func (b *Bucket) SetSumExact() { b.SumExact = b.sumExact() }

func (b *Bucket) sumExact() bool {
	if b.N() == 0 || !b.Sum.IsInt() || !b.Min.IsInt() || !b.Max.IsInt() {
		return false
	}
	lo, ok1 := absInt64(b.Min.Int())
	hi, ok2 := absInt64(b.Max.Int())
	mh, m := bits.Mul64(uint64(b.N()), uint64(max(lo, hi)))
	return ok1 && ok2 && mh == 0 && m <= 1<<53
}

// N returns the number of points other than NaNs: OpenTSDB's count.
func (b *Bucket) N() int64 { return b.Count - b.NaN }

// Increase returns Prometheus' increase over the bucket's points without
// extrapolation: Last - First + Correction.
func (b *Bucket) Increase() float64 {
	return b.Last.Float() - b.First.Float() + b.Correction
}

// less orders values as the aggregators do: integers as integers, any
// pair with a float as float64s.
func less(a, b chunk.Value) bool {
	if a.IsInt() && b.IsInt() {
		return a.Int() < b.Int()
	}
	return a.Float() < b.Float()
}

// Builder computes the buckets of one series point by point. The zero
// Builder is not usable: call Reset. It allocates nothing per point. Not
// safe for concurrent use.
type Builder struct {
	interval int64
	cur      Bucket
	open     bool // cur holds at least one point or marker
	prevT    int64
	allInt   bool
	hi, lo   uint64  // the 128-bit two's-complement integer sum
	fsum     float64 // the float sum, in point order
}

// Reset readies b for a new series at the interval (ms), which must pass
// ValidateInterval (or at least be positive).
func (b *Builder) Reset(intervalMs int64) {
	*b = Builder{interval: intervalMs}
}

// Flush appends the open bucket, if any, to dst and returns dst. A bucket
// with no point and no marker is never appended.
func (b *Builder) Flush(dst []Bucket) []Bucket {
	if !b.open {
		return dst
	}
	c := b.cur
	if c.Count > c.NaN {
		c.Sum = chunk.Float(b.fsum)
		if b.allInt {
			// The 128-bit sum fits in an int64 when hi is the sign extension of lo.
			if b.hi == uint64(int64(b.lo)>>63) {
				c.Sum = chunk.Int(int64(b.lo))
			} else {
				c.SumOverflow = true
			}
		}
	}
	c.SetSumExact()
	dst = append(dst, c)
	b.cur, b.open, b.hi, b.lo, b.fsum = Bucket{}, false, 0, 0, 0
	return dst
}

// Compute appends to dst the buckets of interval ms over pts, which must
// be in increasing time order, and returns dst.
func Compute(dst []Bucket, pts []chunk.Point, intervalMs int64) ([]Bucket, error) {
	var b Builder
	b.Reset(intervalMs)
	dst, err := b.AddPoints(dst, pts)
	if err != nil {
		return dst, err
	}
	return b.Flush(dst), nil
}

// AddPoints adds pts in order, as Add does one point at a time, and
// returns dst with the buckets finished. At a point not after the
// previous one it returns an error, the points before it added.
//
// The same fields as the point-by-point reference, Builder.Add in
// add_reference_test.go, bit for bit (FuzzAddPoints), in a loop that
// keeps a bucket's fields in local variables while its points last: the
// flusher computes every settled hour's buckets, and Add's per-point
// bookkeeping through the Builder was most of rollups' ingest CPU
// (docs/benchmarks.md, issue 13, write side).
func (b *Builder) AddPoints(dst []Bucket, pts []chunk.Point) ([]Bucket, error) {
	for len(pts) > 0 {
		t := pts[0].T
		if b.open && t <= b.prevT {
			return dst, fmt.Errorf("rollup: point at %d ms is not after the previous one at %d ms", t, b.prevT)
		}
		if !b.open || t-b.cur.Start >= b.interval {
			dst = b.Flush(dst)
			b.cur.Start = BucketStart(t, b.interval)
			b.open = true
		}
		n := b.addRun(pts)
		pts = pts[n:]
	}
	return dst, nil
}

// addRun adds the points of pts that lie in the open bucket, from the
// first (which does), up to the first point that is past the bucket or not
// after its predecessor, and returns how many it added.
func (b *Builder) addRun(pts []chunk.Point) int {
	c := &b.cur
	start, iv := c.Start, b.interval
	count, nan := c.Count, c.NaN
	n := count - nan
	firstT, lastT := c.FirstT, c.LastT
	first, last, mn, mx := c.First, c.Last, c.Min, c.Max
	lastF, mnF, mxF := last.Float(), mn.Float(), mx.Float()
	changes, resets, corr := c.Changes, c.Resets, c.Correction
	stale := c.StaleEnd
	allInt, hi, lo, fsum := b.allInt, b.hi, b.lo, b.fsum
	// The first point is in the bucket and after the previous one: the
	// caller saw to both, as Add does.
	var prevT int64
	k := 0
	for ; k < len(pts); k++ {
		t, v := pts[k].T, pts[k].V
		if k > 0 && (t <= prevT || t-start >= iv) {
			break
		}
		prevT = t
		var f float64
		if v.IsInt() {
			x := int64(v.Bits())
			f = float64(x)
			var carry uint64
			lo, carry = bits.Add64(lo, uint64(x), 0)
			hi, _ = bits.Add64(hi, uint64(x>>63), carry)
			stale = false
			count++
			n++
			if n == 1 {
				firstT, first, mn, mx, mnF, mxF, allInt = t, v, v, v, f, f, true
			} else {
				// Two ints compare as ints, else as float64s (less).
				if mn.IsInt() {
					if x < int64(mn.Bits()) {
						mn, mnF = v, f
					}
				} else if f < mnF {
					mn, mnF = v, f
				}
				if mx.IsInt() {
					if x > int64(mx.Bits()) {
						mx, mxF = v, f
					}
				} else if mxF < f {
					mx, mxF = v, f
				}
			}
		} else {
			u := v.Bits()
			if u == StaleNaNBits {
				stale = true
				continue
			}
			stale = false
			count++
			f = math.Float64frombits(u)
			if f != f {
				nan++
				continue
			}
			n++
			if n == 1 {
				firstT, first, mn, mx, mnF, mxF = t, v, v, v, f, f
			} else {
				if f < mnF {
					mn, mnF = v, f
				}
				if mxF < f {
					mx, mxF = v, f
				}
			}
			allInt = false
		}
		if n > 1 {
			if f != lastF {
				changes++
			}
			if f < lastF {
				resets++
				corr += lastF
			}
		}
		lastT, last, lastF = t, v, f
		fsum += f
	}
	c.Count, c.NaN = count, nan
	c.FirstT, c.LastT = firstT, lastT
	c.First, c.Last, c.Min, c.Max = first, last, mn, mx
	c.Changes, c.Resets, c.Correction = changes, resets, corr
	c.StaleEnd = stale
	b.allInt, b.hi, b.lo, b.fsum = allInt, hi, lo, fsum
	if k > 0 {
		b.prevT = pts[k-1].T
	}
	return k
}

// ErrOverlap is returned by Merge for runs that are not in time order.
var ErrOverlap = errors.New("rollup: merged buckets overlap in time")

// Merge returns the bucket of the points of a followed by those of b: a's
// last value must come before b's first (the runs do not interleave; a
// late point inside a written bucket needs the bucket recomputed from the
// raw points). The result's Start is a's. Every field is what Compute
// gives over the joined points, except two float sums: Sum when either
// sum is a float, and Correction, are added as two partial sums rather
// than point by point, so they may differ from Compute's in the last bits
// (never when the values are integers below 2^53).
func Merge(a, b Bucket) (Bucket, error) {
	an, bn := a.N() > 0, b.N() > 0
	if an && bn && a.LastT >= b.FirstT {
		return a, fmt.Errorf("%w: the first run ends at %d ms, the second starts at %d ms", ErrOverlap, a.LastT, b.FirstT)
	}
	m := a
	m.Count += b.Count
	m.NaN += b.NaN
	if b.Count > 0 || b.StaleEnd {
		m.StaleEnd = b.StaleEnd
	}
	switch {
	case !bn:
		m.SetSumExact()
		return m, nil
	case !an:
		m.FirstT, m.First, m.Min, m.Max, m.Sum, m.SumOverflow = b.FirstT, b.First, b.Min, b.Max, b.Sum, b.SumOverflow
		m.LastT, m.Last, m.Changes, m.Resets, m.Correction = b.LastT, b.Last, b.Changes, b.Resets, b.Correction
		m.SetSumExact()
		return m, nil
	}
	p, f := a.Last.Float(), b.First.Float()
	m.Changes += b.Changes
	m.Resets += b.Resets
	if f != p {
		m.Changes++
	}
	m.Correction = a.Correction
	if f < p {
		m.Resets++
		m.Correction += p
	}
	m.Correction += b.Correction
	if less(b.Min, a.Min) {
		m.Min = b.Min
	}
	if less(a.Max, b.Max) {
		m.Max = b.Max
	}
	m.LastT, m.Last = b.LastT, b.Last
	m.Sum, m.SumOverflow = mergeSum(a, b)
	m.SetSumExact()
	return m, nil
}

func mergeSum(a, b Bucket) (chunk.Value, bool) {
	if a.Sum.IsInt() && b.Sum.IsInt() {
		x, y := a.Sum.Int(), b.Sum.Int()
		s := x + y
		if (x >= 0) == (y >= 0) && (s >= 0) != (x >= 0) {
			return chunk.Float(float64(x) + float64(y)), true
		}
		return chunk.Int(s), false
	}
	allInt := (a.Sum.IsInt() || a.SumOverflow) && (b.Sum.IsInt() || b.SumOverflow)
	return chunk.Float(a.Sum.Float() + b.Sum.Float()), allInt
}

// sameFloat reports whether x and y have the same bits, or are both NaN.
func sameFloat(x, y float64) bool {
	return math.Float64bits(x) == math.Float64bits(y) || (x != x && y != y)
}
