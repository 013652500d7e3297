package rollup

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/value"

	"hourglass/chunk"
)

var (
	stale  = chunk.FloatBits(StaleNaNBits)
	nan    = chunk.Float(math.NaN())
	negZer = chunk.Float(math.Copysign(0, -1))
)

func in(t int64, v int64) chunk.Point   { return chunk.Point{T: t, V: chunk.Int(v)} }
func fl(t int64, f float64) chunk.Point { return chunk.Point{T: t, V: chunk.Float(f)} }

func TestStaleBitsArePrometheus(t *testing.T) {
	if StaleNaNBits != value.StaleNaN {
		t.Fatalf("StaleNaNBits = %x, Prometheus' StaleNaN = %x", StaleNaNBits, value.StaleNaN)
	}
	if !IsStale(chunk.Float(math.Float64frombits(value.StaleNaN))) || IsStale(nan) || IsStale(chunk.Int(int64(StaleNaNBits))) {
		t.Fatal("IsStale is wrong")
	}
}

func TestValidateInterval(t *testing.T) {
	for _, c := range []struct {
		ms int64
		ok bool
	}{{60_000, true}, {600_000, true}, {900_000, true}, {3_600_000, true}, {7_200_000, true}, {86_400_000, true},
		{0, false}, {-600_000, false}, {500, false}, {1500, false}, {7 * 60_000, false}, {5 * 3_600_000, false}, {2 * 86_400_000, false}} {
		if err := ValidateInterval(c.ms); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInterval)) {
			t.Errorf("ValidateInterval(%d) = %v, want ok %v", c.ms, err, c.ok)
		}
	}
}

func TestCompute(t *testing.T) {
	const iv = 600_000
	cases := []struct {
		name string
		pts  []chunk.Point
		want []Bucket
	}{
		{"ints stay ints", []chunk.Point{in(0, 5), in(10, 3), in(20, 9)}, []Bucket{{
			Start: 0, Count: 3, FirstT: 0, LastT: 20, First: chunk.Int(5), Last: chunk.Int(9),
			Min: chunk.Int(3), Max: chunk.Int(9), Sum: chunk.Int(17), Changes: 2, Resets: 1, Correction: 5}}},
		{"bucket edges and negative time", []chunk.Point{in(-1, 1), in(0, 2), in(iv-1, 3), in(iv, 4)}, []Bucket{
			{Start: -iv, Count: 1, FirstT: -1, LastT: -1, First: chunk.Int(1), Last: chunk.Int(1), Min: chunk.Int(1), Max: chunk.Int(1), Sum: chunk.Int(1)},
			{Start: 0, Count: 2, FirstT: 0, LastT: iv - 1, First: chunk.Int(2), Last: chunk.Int(3), Min: chunk.Int(2), Max: chunk.Int(3), Sum: chunk.Int(5), Changes: 1},
			{Start: iv, Count: 1, FirstT: iv, LastT: iv, First: chunk.Int(4), Last: chunk.Int(4), Min: chunk.Int(4), Max: chunk.Int(4), Sum: chunk.Int(4)}}},
		{"int overflow becomes a flagged float", []chunk.Point{in(1, math.MaxInt64), in(2, 1)}, []Bucket{{
			Start: 0, Count: 2, FirstT: 1, LastT: 2, First: chunk.Int(math.MaxInt64), Last: chunk.Int(1), Min: chunk.Int(1),
			Max: chunk.Int(math.MaxInt64), Sum: chunk.Float(float64(math.MaxInt64) + 1), SumOverflow: true,
			Changes: 1, Resets: 1, Correction: float64(math.MaxInt64)}}},
		{"an overflow undone stays an int", []chunk.Point{in(1, math.MaxInt64), in(2, 1), in(3, -2)}, []Bucket{{
			Start: 0, Count: 3, FirstT: 1, LastT: 3, First: chunk.Int(math.MaxInt64), Last: chunk.Int(-2), Min: chunk.Int(-2),
			Max: chunk.Int(math.MaxInt64), Sum: chunk.Int(math.MaxInt64 - 1), Changes: 2, Resets: 2, Correction: float64(math.MaxInt64) + 1}}},
		{"a float makes the sum a float, min and max keep kinds", []chunk.Point{in(1, 2), fl(2, 1.5), in(3, 1)}, []Bucket{{
			Start: 0, Count: 3, FirstT: 1, LastT: 3, First: chunk.Int(2), Last: chunk.Int(1), Min: chunk.Int(1),
			Max: chunk.Int(2), Sum: chunk.Float(4.5), Changes: 2, Resets: 2, Correction: 3.5}}},
		{"NaN counted apart, stale nowhere", []chunk.Point{fl(1, 2), {T: 2, V: nan}, {T: 3, V: stale}, fl(4, 1)}, []Bucket{{
			Start: 0, Count: 3, NaN: 1, FirstT: 1, LastT: 4, First: chunk.Float(2), Last: chunk.Float(1), Min: chunk.Float(1),
			Max: chunk.Float(2), Sum: chunk.Float(3), Changes: 1, Resets: 1, Correction: 2}}},
		{"stale at the end", []chunk.Point{fl(1, 2), {T: 3, V: stale}}, []Bucket{{
			Start: 0, Count: 1, FirstT: 1, LastT: 1, First: chunk.Float(2), Last: chunk.Float(2), Min: chunk.Float(2),
			Max: chunk.Float(2), Sum: chunk.Float(2), StaleEnd: true}}},
		{"only a marker", []chunk.Point{{T: iv + 3, V: stale}}, []Bucket{{Start: iv, StaleEnd: true}}},
		{"only NaN", []chunk.Point{{T: 5, V: nan}}, []Bucket{{Start: 0, Count: 1, NaN: 1}}},
		{"infinities and -0", []chunk.Point{fl(1, math.Inf(1)), {T: 2, V: negZer}, fl(3, math.Inf(-1))}, []Bucket{{
			Start: 0, Count: 3, FirstT: 1, LastT: 3, First: chunk.Float(math.Inf(1)), Last: chunk.Float(math.Inf(-1)),
			Min: chunk.Float(math.Inf(-1)), Max: chunk.Float(math.Inf(1)), Sum: chunk.Float(math.NaN()),
			Changes: 2, Resets: 2, Correction: math.Inf(1)}}},
		{"ties keep the first", []chunk.Point{fl(1, 0), {T: 2, V: negZer}, in(3, 0)}, []Bucket{{
			Start: 0, Count: 3, FirstT: 1, LastT: 3, First: chunk.Float(0), Last: chunk.Int(0), Min: chunk.Float(0),
			Max: chunk.Float(0), Sum: chunk.Float(0)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Compute(nil, c.pts, iv)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d buckets %+v, want %d", len(got), got, len(c.want))
			}
			for i := range got {
				c.want[i].SetSumExact() // TestSumExact checks it
				if d := diff(&got[i], &c.want[i], 0); d != "" {
					t.Errorf("bucket %d: %s", i, d)
				}
			}
		})
	}
}

func TestComputeRefusesDisorder(t *testing.T) {
	if _, err := Compute(nil, []chunk.Point{in(5, 1), in(5, 2)}, 1000); err == nil {
		t.Fatal("a repeated timestamp was accepted")
	}
}

// diff describes how got differs from want. tol 0 is exact; otherwise the
// float sums (Sum when a float, Correction) may differ by rounding, by at
// most tol (n·ε·Σ|x| bounds a reassociated sum of n terms).
func diff(got, want *Bucket, tol float64) string {
	g, w := *got, *want
	if tol > 0 {
		if !g.Sum.IsInt() && !w.Sum.IsInt() && near(g.Sum.Float(), w.Sum.Float(), tol) {
			g.Sum = w.Sum
		}
		if g.SumOverflow != w.SumOverflow && near(g.Sum.Float(), w.Sum.Float(), tol) {
			g.Sum, g.SumOverflow = w.Sum, w.SumOverflow
		}
		if near(g.Correction, w.Correction, tol) {
			g.Correction = w.Correction
		}
	}
	if g.Sum.IsInt() == w.Sum.IsInt() && sameFloat(g.Sum.Float(), w.Sum.Float()) && !g.Sum.IsInt() {
		g.Sum = w.Sum // NaN sums of different payloads
	}
	if sameFloat(g.Correction, w.Correction) {
		g.Correction = w.Correction
	}
	if g != w {
		return fmt.Sprintf("got  %+v\nwant %+v", g, w)
	}
	return ""
}

// near: equal, both NaN, or within tol.
func near(a, b, tol float64) bool {
	return sameFloat(a, b) || a == b || math.Abs(a-b) <= tol
}

// sumTol is n·2ε·Σ|x| over the points' finite values.
func sumTol(pts []chunk.Point) float64 {
	var s float64
	for _, p := range pts {
		if f := math.Abs(p.V.Float()); f <= math.MaxFloat64 {
			s += f
		}
	}
	return float64(len(pts)) * 2 * 0x1p-52 * s
}

// randomPoints makes n points in [t0, t0+span): ints only (mode 0);
// ints and two-decimal floats (1); and also NaN, markers, ±Inf, -0, huge
// ints and long floats (2).
func randomPoints(r *rand.Rand, t0, span int64, n int, mode int) []chunk.Point {
	pts := make([]chunk.Point, 0, n)
	t := t0
	for len(pts) < n {
		t += 1 + r.Int64N(2*span/int64(n)+1)
		if t >= t0+span {
			break
		}
		var v chunk.Value
		switch k := r.IntN(20); {
		case k < 8 || mode == 0:
			v = chunk.Int(r.Int64N(1000))
		case k < 16:
			v = chunk.Float(float64(r.Int64N(10000)) / 100)
		case mode == 1:
			v = chunk.Int(r.Int64N(10))
		case k == 16:
			v = [...]chunk.Value{nan, stale, negZer, chunk.Float(math.Inf(1)), chunk.Float(math.Inf(-1))}[r.IntN(5)]
		case k == 17:
			v = chunk.Int(math.MaxInt64 - r.Int64N(3))
		case k == 18:
			v = chunk.Int(math.MinInt64 + r.Int64N(3))
		default:
			v = chunk.Float(r.NormFloat64() * 1e6)
		}
		pts = append(pts, chunk.Point{T: t, V: v})
	}
	return pts
}

// TestMergeEqualsCompute is the re-computation property: the bucket of
// all points equals the merge of the buckets of two parts split anywhere,
// and finer buckets merged are the coarser bucket.
func TestMergeEqualsCompute(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		mode := i % 3
		pts := randomPoints(r, 7*hourMs, hourMs, 1+r.IntN(200), mode)
		tol := sumTol(pts)
		if mode == 0 {
			tol = 0 // sums of ints below 2^53 are exact in any order
		}
		all, err := Compute(nil, pts, hourMs)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) == 0 {
			continue // no point fell in the hour
		}
		k := r.IntN(len(pts) + 1)
		a, _ := Compute(nil, pts[:k], hourMs)
		b, _ := Compute(nil, pts[k:], hourMs)
		merged := mergeAll(t, append(a, b...), 7*hourMs)
		if d := diff(&merged, &all[0], tol); d != "" {
			t.Fatalf("case %d, split at %d of %d: %s", i, k, len(pts), d)
		}
		fine, _ := Compute(nil, pts, 600_000)
		coarse := mergeAll(t, fine, 7*hourMs)
		if d := diff(&coarse, &all[0], tol); d != "" {
			t.Fatalf("case %d, 10m buckets merged into 1h: %s", i, d)
		}
	}
}

func mergeAll(t *testing.T, bs []Bucket, start int64) Bucket {
	t.Helper()
	m := Bucket{Start: start}
	for _, b := range bs {
		var err error
		if m, err = Merge(m, b); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestMergeRefusesOverlap(t *testing.T) {
	a, _ := Compute(nil, []chunk.Point{in(1, 1), in(5, 2)}, 1000)
	b, _ := Compute(nil, []chunk.Point{in(3, 1)}, 1000)
	if _, err := Merge(a[0], b[0]); !errors.Is(err, ErrOverlap) {
		t.Fatalf("Merge of interleaved runs: err = %v, want ErrOverlap", err)
	}
}

// TestIncreaseAcrossBuckets: Prometheus' counter increase over raw points
// equals the one from buckets joined with their edges.
func TestIncreaseAcrossBuckets(t *testing.T) {
	pts := []chunk.Point{in(0, 10), in(300_000, 20), in(600_000, 5), in(900_000, 8), in(1_200_000, 2), in(1_500_000, 4)}
	var raw, prev float64
	for i, p := range pts {
		if i > 0 && p.V.Float() < prev {
			raw += prev
		}
		prev = p.V.Float()
	}
	raw += pts[len(pts)-1].V.Float() - pts[0].V.Float()
	bs, _ := Compute(nil, pts, 600_000)
	m := mergeAll(t, bs, 0)
	if m.Increase() != raw || m.Resets != 2 || m.Changes != 5 {
		t.Fatalf("increase %v resets %d changes %d, want %v 2 5", m.Increase(), m.Resets, m.Changes, raw)
	}
}

// TestSumExact: SumExact is set exactly when the float64 additions of the
// points give the int Sum, by Compute, and read back from a cell whole
// and for the sums alone (FieldsSum).
func TestSumExact(t *testing.T) {
	const iv = 600_000
	big := int64(1) << 52
	cases := []struct {
		name string
		pts  []chunk.Point
		want bool
	}{
		{"small ints", []chunk.Point{{T: 1, V: chunk.Int(3)}, {T: 2, V: chunk.Int(-4)}}, true},
		{"at 2^53", []chunk.Point{{T: 1, V: chunk.Int(big)}, {T: 2, V: chunk.Int(-big)}}, true},
		{"past 2^53", []chunk.Point{{T: 1, V: chunk.Int(big)}, {T: 2, V: chunk.Int(big)}, {T: 3, V: chunk.Int(-big)}}, false},
		{"min int", []chunk.Point{{T: 1, V: chunk.Int(math.MinInt64)}}, false},
		{"a float", []chunk.Point{{T: 1, V: chunk.Int(3)}, {T: 2, V: chunk.Float(4)}}, false},
		{"NaN only", []chunk.Point{{T: 1, V: chunk.Float(math.NaN())}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bs, err := Compute(nil, c.pts, iv)
			if err != nil || len(bs) != 1 {
				t.Fatalf("%d buckets, %v", len(bs), err)
			}
			if bs[0].SumExact != c.want {
				t.Fatalf("SumExact %v, want %v", bs[0].SumExact, c.want)
			}
			cell, err := AppendCell(nil, 0, iv, bs)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []Fields{FieldsAll, FieldsSum, FieldsSumTimes} {
				got, _, err := decodeFields(cell, 0, f)
				if err != nil || len(got) != 1 || got[0].SumExact != c.want || !got[0].Sum.Identical(bs[0].Sum) {
					t.Fatalf("fields %d: decoded %+v, %v", f, got, err)
				}
			}
		})
	}
}
