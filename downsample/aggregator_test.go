package downsample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func mustLookup(t testing.TB, name string) *Aggregator {
	t.Helper()
	a, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestNames(t *testing.T) {
	want := []string{
		"avg", "count", "dev", "diff",
		"ep50r3", "ep50r7", "ep75r3", "ep75r7", "ep90r3", "ep90r7",
		"ep95r3", "ep95r7", "ep999r3", "ep999r7", "ep99r3", "ep99r7",
		"first", "last", "max", "median", "mimmax", "mimmin", "min", "mult", "none",
		"p50", "p75", "p90", "p95", "p99", "p999",
		"pfsum", "squareSum", "sum", "zimsum",
	}
	got := Names()
	if !slices.Equal(got, want) {
		t.Fatalf("Names() =\n%q\nwant\n%q", got, want)
	}
	if len(got) != 35 {
		t.Fatalf("%d names, OpenTSDB 2.4.1 has 35", len(got))
	}
	got[0] = "changed"
	if Names()[0] != "avg" {
		t.Fatal("Names returned shared storage")
	}
	for _, n := range want {
		if a := mustLookup(t, n); a.Name() != n || a.String() != n {
			t.Errorf("Lookup(%q).Name() = %q", n, a.Name())
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, name := range []string{"foo", "SUM", "squaresum", "multiply", "raw", "p42", ""} {
		a, err := Lookup(name)
		if a != nil || err == nil {
			t.Fatalf("Lookup(%q) = %v, %v; want an error", name, a, err)
		}
		if got, want := err.Error(), "No such aggregation function: "+name; got != want {
			t.Errorf("Lookup(%q) error %q, want %q", name, got, want)
		}
		if !errors.Is(err, ErrUnknownAggregator) {
			t.Errorf("Lookup(%q) error does not wrap ErrUnknownAggregator", name)
		}
		var ue *UnknownAggregatorError
		if !errors.As(err, &ue) || ue.Name != name {
			t.Errorf("Lookup(%q) error is not an *UnknownAggregatorError naming it", name)
		}
	}
}

func TestInterpolationMethods(t *testing.T) {
	// From Aggregators.java v2.4.1.
	want := map[string]Interpolation{
		"sum": Lerp, "zimsum": ZeroIfMissing, "pfsum": PrevIfMissing,
		"min": Lerp, "max": Lerp, "mimmin": MaxIfMissing, "mimmax": MinIfMissing,
		"avg": Lerp, "median": Lerp, "dev": Lerp, "count": ZeroIfMissing,
		"first": ZeroIfMissing, "last": ZeroIfMissing, "diff": Lerp, "mult": Lerp,
		"squareSum": ZeroIfMissing, "none": ZeroIfMissing,
	}
	for _, n := range Names() {
		w, ok := want[n]
		if !ok {
			w = Lerp // every percentile
		}
		if got := mustLookup(t, n).Interpolation(); got != w {
			t.Errorf("%s interpolates with %v, want %v", n, got, w)
		}
	}
	names := map[Interpolation]string{Lerp: "LERP", ZeroIfMissing: "ZIM", MaxIfMissing: "MAX", MinIfMissing: "MIN", PrevIfMissing: "PREV"}
	for i, s := range names {
		if i.String() != s {
			t.Errorf("%d.String() = %q, want %q", i, i.String(), s)
		}
	}
	if !mustLookup(t, "none").IsNone() || mustLookup(t, "sum").IsNone() {
		t.Error("IsNone is wrong")
	}
}

func TestInts(t *testing.T) {
	// vals = 3 1 4 1 5; sorted 1 1 3 4 5; n = 5; Σ = 14.
	vals := []int64{3, 1, 4, 1, 5}
	// Percentiles on sorted x1..x5 = 1 1 3 4 5 (1-based positions):
	//   legacy pos = 6p:      p50 → 3 → x3 = 3; p75 → 4.5 → 4+0.5·1 = 4.5 → 4;
	//                         p90 → 5.4 ≥ 5 → x5 = 5 (and so on up).
	//   R-3    pos = rint(5p): p50 → rint(2.5) = 2 (half to even) → x2 = 1;
	//                         p75 → rint(3.75) = 4 → 4; p90 → rint(4.5) = 4 → 4;
	//                         p95 → rint(4.75) = 5 → 5.
	//   R-7    pos = 1+4p:    p50 → 3 → 3; p75 → 4 → 4; p90 → 4.6 → 4.6 → 4;
	//                         p95 → 4.8 → 4; p99 → 4.96 → 4; p999 → 4.996 → 4.
	tests := map[string]int64{
		"sum": 14, "zimsum": 14, "pfsum": 14,
		"min": 1, "mimmin": 1, "max": 5, "mimmax": 5,
		"avg":    2, // 14/5 in integer division
		"median": 3, // sorted[5/2]
		// mean 2.8, squared deviations .04+3.24+1.44+3.24+4.84 = 12.8,
		// population variance 2.56, σ = 1.6, truncated to 1.
		"dev":   1,
		"count": 5, "first": 3, "last": 5, "none": 3,
		"diff":      2,  // 5 − 3
		"mult":      60, // 3·1·4·1·5
		"squareSum": 52, // 9+1+16+1+25
		"p50":       3, "p75": 4, "p90": 5, "p95": 5, "p99": 5, "p999": 5,
		"ep50r3": 1, "ep75r3": 4, "ep90r3": 4, "ep95r3": 5, "ep99r3": 5, "ep999r3": 5,
		"ep50r7": 3, "ep75r7": 4, "ep90r7": 4, "ep95r7": 4, "ep99r7": 4, "ep999r7": 4,
	}
	for _, name := range Names() {
		want, ok := tests[name]
		if !ok {
			t.Fatalf("no test for %s", name)
		}
		t.Run(name, func(t *testing.T) {
			if got := mustLookup(t, name).Ints(slices.Clone(vals)); got != want {
				t.Errorf("Ints(%v) = %d, want %d", vals, got, want)
			}
		})
	}
}

func TestIntsEdges(t *testing.T) {
	tests := []struct {
		agg  string
		vals []int64
		want int64
	}{
		{"sum", nil, 0},
		{"count", nil, 0},
		{"sum", []int64{math.MaxInt64, 1}, math.MinInt64}, // wraps like a Java long
		{"avg", []int64{-7, 0}, -3},                       // truncates toward zero
		{"avg", []int64{1, 2}, 1},
		{"dev", []int64{42}, 0},
		{"dev", []int64{1, 2}, 0}, // σ = 0.5, truncated
		{"dev", []int64{0, 10}, 5},
		{"diff", []int64{7}, 0},
		{"median", []int64{4, 1, 3, 2}, 3}, // sorted 1 2 3 4, element 2: no averaging
		// A percentile of huge values goes through float64 and back; the
		// conversion saturates as Java's (long) cast does.
		{"p99", []int64{math.MaxInt64, math.MaxInt64}, math.MaxInt64},
		{"p50", []int64{math.MinInt64, math.MinInt64}, math.MinInt64},
		{"ep50r7", []int64{-1, -2}, -1}, // −1.5 truncated toward zero
	}
	for _, tt := range tests {
		if got := mustLookup(t, tt.agg).Ints(slices.Clone(tt.vals)); got != tt.want {
			t.Errorf("%s.Ints(%v) = %d, want %d", tt.agg, tt.vals, got, tt.want)
		}
	}
}

func TestFloats(t *testing.T) {
	nan := math.NaN()
	// Non-NaN values, in order: 2.5 −1 4 0.5; sorted −1 0.5 2.5 4; n = 4.
	vals := []float64{nan, 2.5, -1, 4, nan, 0.5}
	// Percentiles on x1..x4 = −1 0.5 2.5 4:
	//   legacy pos = 5p:        p50 → 2.5 → 0.5+0.5·2 = 1.5; p75 → 3.75 → 2.5+0.75·1.5 = 3.625;
	//                           p90 → 4.5 ≥ 4 → 4 (and so on up).
	//   R-3    pos = rint(4p):  p50 → 2 → 0.5; p75 → 3 → 2.5; p90 → rint(3.6) = 4 → 4.
	//   R-7    pos = 1+3p:      p50 → 2.5 → 1.5; p75 → 3.25 → 2.5+0.25·1.5 = 2.875;
	//                           p90 → 3.7 → 3.55; p95 → 3.85 → 3.775;
	//                           p99 → 3.97 → 3.955; p999 → 3.997 → 3.9955.
	tests := map[string]float64{
		"sum": 6, "zimsum": 6, "pfsum": 6,
		"min": -1, "mimmin": -1, "max": 4, "mimmax": 4,
		"avg":    1.5,
		"median": 2.5,
		// mean 1.5, squared deviations 1+6.25+6.25+1 = 14.5, variance 3.625.
		"dev":   math.Sqrt(3.625),
		"count": 4, "first": 2.5, "last": 0.5, "none": 2.5,
		"diff":      -2,   // 0.5 − 2.5
		"mult":      -5,   // 2.5·−1·4·0.5
		"squareSum": 23.5, // 6.25+1+16+0.25
		"p50":       1.5, "p75": 3.625, "p90": 4, "p95": 4, "p99": 4, "p999": 4,
		"ep50r3": 0.5, "ep75r3": 2.5, "ep90r3": 4, "ep95r3": 4, "ep99r3": 4, "ep999r3": 4,
		"ep50r7": 1.5, "ep75r7": 2.875, "ep90r7": 3.55, "ep95r7": 3.775, "ep99r7": 3.955, "ep999r7": 3.9955,
	}
	for _, name := range Names() {
		want, ok := tests[name]
		if !ok {
			t.Fatalf("no test for %s", name)
		}
		t.Run(name, func(t *testing.T) {
			got := mustLookup(t, name).Floats(slices.Clone(vals))
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("Floats = %v, want %v", got, want)
			}
		})
	}
}

func TestFloatsAllNaN(t *testing.T) {
	for _, name := range Names() {
		for _, vals := range [][]float64{nil, {math.NaN()}, {math.NaN(), math.NaN()}} {
			got := mustLookup(t, name).Floats(slices.Clone(vals))
			if name == "count" {
				if got != 0 {
					t.Errorf("count of %v = %v, want 0", vals, got)
				}
			} else if !math.IsNaN(got) {
				t.Errorf("%s of %v = %v, want NaN", name, vals, got)
			}
		}
	}
}

func TestFloatsSingle(t *testing.T) {
	for _, name := range Names() {
		want := 7.5
		switch name {
		case "dev", "diff":
			want = 0
		case "count":
			want = 1
		case "squareSum":
			want = 56.25
		}
		if got := mustLookup(t, name).Floats([]float64{math.NaN(), 7.5}); got != want {
			t.Errorf("%s of {NaN, 7.5} = %v, want %v", name, got, want)
		}
	}
}

// Apache Commons Math 3 results on 1..10, the usual reference data set.
func TestPercentilesOneToTen(t *testing.T) {
	var vals []float64
	for i := 1; i <= 10; i++ {
		vals = append(vals, float64(i))
	}
	tests := map[string]float64{
		// legacy: pos = 11p. p50 5.5; p75 8.25; p90 9.9; p95 10.45 ≥ 10 → 10.
		"p50": 5.5, "p75": 8.25, "p90": 9.9, "p95": 10, "p99": 10, "p999": 10,
		// pos = rint(10p). p50 5 → 5; p75 rint(7.5) = 8 → 8; p90 9 → 9; p95 rint(9.5) = 10 → 10.
		"ep50r3": 5, "ep75r3": 8, "ep90r3": 9, "ep95r3": 10, "ep99r3": 10, "ep999r3": 10,
		// R-7 (R's and Excel's default): pos = 1+9p.
		"ep50r7": 5.5, "ep75r7": 7.75, "ep90r7": 9.1, "ep95r7": 9.55, "ep99r7": 9.91, "ep999r7": 9.991,
	}
	for name, want := range tests {
		if got := mustLookup(t, name).Floats(slices.Clone(vals)); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s(1..10) = %v, want %v", name, got, want)
		}
	}
}

// nth and the percentiles select order statistics without sorting; check
// them against sorting on arrays long enough to partition, duplicates,
// runs and adversarial orders included.
func TestNthAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 3000 {
		n := 1 + r.IntN(400)
		vals := make([]float64, n)
		for j := range vals {
			switch i % 4 {
			case 0:
				vals[j] = r.NormFloat64()
			case 1:
				vals[j] = float64(r.IntN(5)) // many duplicates
			case 2:
				vals[j] = float64(j) // sorted
			default:
				vals[j] = float64(n - j) // reversed
			}
		}
		sorted := slices.Sorted(slices.Values(vals))
		k := r.IntN(n)
		if got := nth(slices.Clone(vals), k); got != sorted[k] {
			t.Fatalf("nth(%v, %d) = %v, want %v", vals, k, got, sorted[k])
		}
		for _, name := range []string{"p50", "p95", "p999", "ep90r3", "ep99r7", "median"} {
			a := mustLookup(t, name)
			var want float64
			if a.kind == kMedian {
				want = sorted[n/2]
			} else {
				want = sortedPercentile(sorted, a.pct, a.est)
			}
			if got := a.Floats(slices.Clone(vals)); got != want {
				t.Fatalf("%s of %d values = %v, want %v", name, n, got, want)
			}
		}
	}
}

// sortedPercentile is Commons Math's estimate on sorted data, written out
// plainly.
func sortedPercentile(sorted []float64, pct float64, est estimation) float64 {
	n := float64(len(sorted))
	p := pct / 100
	var pos float64
	switch {
	case len(sorted) == 1:
		return sorted[0]
	case est == estR3 && p <= 0.5/n:
		pos = 0
	case est == estR3:
		pos = math.RoundToEven(n * p)
	case p == 1:
		pos = n
	case est == estR7:
		pos = 1 + (n-1)*p
	default:
		pos = p * (n + 1)
	}
	switch {
	case pos < 1:
		return sorted[0]
	case pos >= n:
		return sorted[len(sorted)-1]
	}
	f := math.Floor(pos)
	lo, up := sorted[int(f)-1], sorted[int(f)]
	return lo + float64((pos-f)*(up-lo))
}
