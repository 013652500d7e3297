package downsample

import (
	"math"

	"hourglass/chunk"
)

// RateOptions are OpenTSDB's rateOptions.
type RateOptions struct {
	// Counter treats the series as a monotonic counter: a decrease is a
	// rollover or a reset, not a negative rate.
	Counter bool
	// CounterMax is the value a counter rolls over at; 0 means unset,
	// which is math.MaxInt64 (OpenTSDB's default Long.MAX_VALUE).
	CounterMax int64
	// ResetValue, when positive, turns a rollover rate above it into 0:
	// the decrease is taken to be a reset, not a rollover.
	ResetValue int64
	// DropResets, with Counter, drops the rate at a decrease instead of
	// computing a rollover; the point still becomes the base of the next
	// rate.
	DropResets bool
}

// Rate appends to dst the per-second rate of change of src, a series sorted
// by timestamp, and returns the extended slice. It follows OpenTSDB 2.4's
// RateSpan:
//
//   - The first point yields no rate; each later point at t2 yields
//     (v2−v1) / ((t2−t1)/1000) against the point before it at t1.
//   - When both values are integers v2−v1 is computed in int64 (wrapping,
//     as Java does) before the conversion to float64.
//   - With Counter and v2 < v1: with DropResets nothing is emitted;
//     otherwise the difference is CounterMax − v1 + v2 (again in int64 when
//     both are integers) and, if ResetValue > 0 and the rate exceeds it, the
//     rate is 0. ResetValue matters only there.
//   - Without Counter, negative rates are emitted as they are.
//
// Rates are always floats. A point whose timestamp is not after the
// previous one's yields nothing and does not become the base (OpenTSDB
// throws there instead).
//
// dst may be src[:0]: the rate of a point is written below its index,
// over a point already read.
func Rate(dst, src []chunk.Point, opts RateOptions) []chunk.Point {
	if len(src) == 0 {
		return dst
	}
	counterMax := opts.CounterMax
	if counterMax == 0 {
		counterMax = math.MaxInt64
	}
	prev := src[0]
	for _, p := range src[1:] {
		if p.T <= prev.T {
			continue
		}
		dt := float64(p.T-prev.T) / 1000.0
		bothInt := prev.V.IsInt() && p.V.IsInt()
		var diff float64
		if bothInt {
			diff = float64(p.V.Int() - prev.V.Int())
		} else {
			diff = p.V.Float() - prev.V.Float()
		}
		var rate float64
		if opts.Counter && diff < 0 {
			if opts.DropResets {
				prev = p
				continue
			}
			if bothInt {
				diff = float64(counterMax - prev.V.Int() + p.V.Int())
			} else {
				diff = float64(counterMax) - prev.V.Float() + p.V.Float()
			}
			rate = diff / dt
			if opts.ResetValue > 0 && rate > float64(opts.ResetValue) {
				rate = 0
			}
		} else {
			rate = diff / dt
		}
		dst = append(dst, chunk.Point{T: p.T, V: chunk.Float(rate)})
		prev = p
	}
	return dst
}
