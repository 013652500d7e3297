package chunk

import (
	"math"
	"math/bits"
)

// fewInts is the most ints a batch of a mixed-decimal chunk may hold for
// floatsToInts to be tried on it.
const fewInts = 8

// floatsToInts turns back into ints the values of vs that kinds marks as
// ints, after a decode that made floats of every mantissa m: float64(m)/10^k
// for scale 10^k, and ip = 10^k as an int64 (0 beyond 10^18). It reports
// false, leaving vs partly changed, when it cannot prove one exact: m is
// recovered as round(f·10^k) only where |m| < 2^50, since there the
// rounding errors stay below 1/4 and no other mantissa gives the same float
// (then float64(m)/10^k must give f back), and m must be a multiple of ip.
func floatsToInts(vs []int64, kinds uint64, scale float64, ip int64) bool {
	for ; kinds != 0; kinds &= kinds - 1 {
		i := bits.TrailingZeros64(kinds)
		if i >= len(vs) {
			return false
		}
		f := math.Float64frombits(uint64(vs[i]))
		m := math.Round(f * scale)
		if !(math.Abs(m) < 1<<50) || m/scale != f {
			return false
		}
		switch mi := int64(m); {
		case ip == 0:
			if mi != 0 {
				return false
			}
			vs[i] = 0
		case mi%ip != 0:
			return false
		default:
			vs[i] = mi / ip
		}
	}
	return true
}
