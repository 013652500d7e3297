package query

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestSimplePercentile: OpenTSDB 2.4's SimpleHistogram.percentile, worked
// by hand: the first bucket whose running count reaches p% of the total
// answers with its midpoint; p outside [1, 100] is -1; no count is 0.
func TestSimplePercentile(t *testing.T) {
	// 5 in [0,10), 3 in [10,20), 2 in [20,40): running 50%, 80%, 100%.
	bs := []PctBucket{{20, 40, 2}, {0, 10, 5}, {10, 20, 3}}
	SortPctBuckets(bs)
	for _, c := range []struct{ p, want float64 }{
		{1, 5}, {50, 5}, {50.1, 15}, {80, 15}, {80.5, 30}, {99.9, 30}, {100, 30},
		{0.5, -1}, {100.5, -1}, {0, -1},
	} {
		if got := SimplePercentile(bs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	// An empty bucket before the answer changes nothing (a gap between
	// buckets is stored as one); the merged sum of two histograms is the
	// sum of their bucket counts.
	gap := []PctBucket{{0, 10, 1}, {10, 20, 0}, {20, 30, 3}}
	if got := SimplePercentile(gap, 25); got != 5 {
		t.Errorf("p25 with a gap = %v, want 5", got)
	}
	if got := SimplePercentile(gap, 26); got != 25 {
		t.Errorf("p26 with a gap = %v, want 25", got)
	}
	if got := SimplePercentile([]PctBucket{{0, 10, 0}}, 50); got != 0 {
		t.Errorf("empty = %v, want 0", got)
	}
	// The midpoint is worked in float, as Java adds two float bounds.
	if got := SimplePercentile([]PctBucket{{0.1, 0.2, 1}}, 50); got != 0.15000000596046448 {
		t.Errorf("p50 of (0.1, 0.2] = %v, want 0.15000000596046448", got)
	}
	if got := SimplePercentile(nil, 50); got != 0 {
		t.Errorf("no buckets = %v, want 0", got)
	}
}

// TestPercentileMetric: the output name as OpenTSDB prints a float.
func TestPercentileMetric(t *testing.T) {
	for p, want := range map[float64]string{50: "m_pct_50.0", 99.9: "m_pct_99.9", 99.99: "m_pct_99.99", 5.5: "m_pct_5.5", 100: "m_pct_100.0"} {
		if got := PercentileMetric("m", p); got != want {
			t.Errorf("%v: %q, want %q", p, got, want)
		}
	}
}

// FuzzJavaFloat: JavaFloat's text reads back as the same float32 (Go
// parses Java's "1.0E7" form), has a digit after its point, and uses the
// plain form exactly when 1e-3 <= |f| < 1e7 (or f is 0).
func FuzzJavaFloat(f *testing.F) {
	for _, seed := range []uint32{0, 0x80000000, 0x3f800000, 0x4b189680, 0x3a83126f, 0x7f7fffff, 0x00000001, 0x7fc00000, 0x7f800000} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, bits uint32) {
		v := math.Float32frombits(bits)
		s := JavaFloat(v)
		if v != v || math.IsInf(float64(v), 0) {
			if s != "NaN" && s != "Infinity" && s != "-Infinity" {
				t.Fatalf("JavaFloat(%v) = %q", v, s)
			}
			return
		}
		back, err := strconv.ParseFloat(s, 32)
		if err != nil || float32(back) != v || math.Signbit(back) != math.Signbit(float64(v)) {
			t.Fatalf("JavaFloat(%v) = %q reads back as %v (%v)", v, s, back, err)
		}
		mant, _, sci := strings.Cut(s, "E")
		if _, frac, ok := strings.Cut(mant, "."); !ok || frac == "" {
			t.Fatalf("JavaFloat(%v) = %q: no digit after the point", v, s)
		}
		a := math.Abs(float64(v))
		if plain := a == 0 || (a >= 1e-3 && a < 1e7); plain == sci {
			t.Fatalf("JavaFloat(%v) = %q: scientific form is %v", v, s, sci)
		}
	})
}
