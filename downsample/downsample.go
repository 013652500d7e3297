package downsample

import (
	"math"
	"sync"
	"time"

	"hourglass/chunk"
)

// floatBufs recycles the value buffers that median and the percentiles need.
// A buffer that grew past floatBufKeep values (a bucket of that many points)
// is not pooled, so the pooled ones do not creep to the largest bucket met.
var floatBufs = sync.Pool{New: func() any { return new([]float64) }}

const floatBufKeep = 1 << 16

// Downsample appends to dst the downsampled form of one series and returns
// the extended slice. src must be sorted by timestamp (the scan delivers
// strictly increasing timestamps; equal ones are harmless).
//
// Only points with start <= T <= end are used. A bucket is start-inclusive
// and end-exclusive and is stamped with its start; only buckets stamped
// within [start, end] are emitted, as OpenTSDB's serializer drops the others,
// so the partial bucket in which an unaligned start falls is left out.
// Without calendar alignment, buckets are aligned to the Unix epoch
// (T − T mod interval); with spec.Calendar they follow the calendar in loc
// (nil means UTC), DST included. With spec.All, every point falls into one
// bucket stamped with start.
//
// Values are aggregated as floats and emitted as floats, even when every
// input is an integer (OpenTSDB's Downsampler.isInteger() is false): avg of
// 1 and 2 is 1.5. NaN inputs are skipped. With FillNaN or FillNull an empty
// bucket becomes NaN, with FillZero 0, and with FillNone it is not emitted.
// Fill only happens for a series that has at least one point in
// [start, end], and never in All mode; a series with no point in range
// yields nothing. The caller bounds (end−start)/interval, which fill turns
// into that many points.
//
// Downsample panics if spec has no aggregator, has "none", or has no
// positive Interval without All: such a spec cannot come from ParseSpec.
func Downsample(dst []chunk.Point, src []chunk.Point, spec Spec, start, end int64, loc *time.Location) []chunk.Point {
	switch {
	case spec.Agg == nil:
		panic("downsample: Spec has no aggregator; use ParseSpec")
	case spec.Agg.kind == kNone:
		panic("downsample: cannot use the NONE aggregator for downsampling")
	case !spec.All && spec.Interval <= 0:
		panic("downsample: Spec has no interval; use ParseSpec")
	}
	if end < start {
		return dst
	}

	var acc floatAcc
	var bufp *[]float64
	if spec.Agg.kind == kMedian || spec.Agg.kind == kPercentile {
		bufp = floatBufs.Get().(*[]float64)
		defer func() {
			if cap(acc.buf) <= floatBufKeep {
				*bufp = acc.buf[:0]
				floatBufs.Put(bufp)
			}
		}()
		acc.buf = *bufp
	}

	if spec.All {
		acc.reset(spec.Agg, acc.buf)
		seen := false
		for _, p := range src {
			if p.T >= start && p.T <= end {
				seen = true
				acc.add(p.V.Float())
			}
		}
		if seen {
			dst = append(dst, chunk.Point{T: start, V: chunk.Float(acc.result())})
		}
		return dst
	}

	// Skip to the first point in range; without one there is nothing to do.
	i := 0
	for i < len(src) && src[i].T < start {
		i++
	}
	if i == len(src) || src[i].T > end {
		return dst
	}

	var fill chunk.Value
	switch spec.Fill {
	case FillNaN, FillNull:
		fill = chunk.Float(math.NaN())
	case FillZero:
		fill = chunk.Float(0)
	}

	bk := newBucketer(spec, loc)
	bs, be := bk.bounds(start)
	if bs < start { // the partial bucket holding start is not emitted
		if be == math.MaxInt64 {
			return dst
		}
		bs, be = nextBucket(&bk, be)
	}
	for i < len(src) && src[i].T < bs {
		i++
	}

	for bs <= end {
		acc.reset(spec.Agg, acc.buf)
		n := 0
		for i < len(src) && (src[i].T < be || be == math.MaxInt64) && src[i].T <= end {
			acc.add(src[i].V.Float())
			n++
			i++
		}
		switch {
		case n > 0:
			dst = append(dst, chunk.Point{T: bs, V: chunk.Float(acc.result())})
		case spec.Fill != FillNone:
			dst = append(dst, chunk.Point{T: bs, V: fill})
		default:
			// Jump straight to the bucket of the next point.
			if i == len(src) || src[i].T > end {
				return dst
			}
			nbs, nbe := bk.bounds(src[i].T)
			bs, be = max(nbs, be), nbe
			continue
		}
		if be == math.MaxInt64 {
			break
		}
		bs, be = nextBucket(&bk, be)
	}
	return dst
}

// nextBucket returns the bucket that starts where the previous one ended.
// Around DST changes of less than an hour, calendar buckets found from
// different offsets may overlap; clamping keeps them disjoint and
// increasing.
func nextBucket(bk *bucketer, prevEnd int64) (start, end int64) {
	start, end = bk.bounds(prevEnd)
	return max(start, prevEnd), end
}
