package downsample

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"hourglass/chunk"
)

func TestAggregateWorkedExample(t *testing.T) {
	// docs:user_guide/query/aggregators.rst, with t0 = 100s:
	//
	//	     t0   +10  +20  +30  +40  +50  +60
	//	A     -     5    -   15    -    5    -
	//	B    10     -   20    -   10    -   20
	//
	// t0:  B only (A has not started)            = 10
	// +10: 5 + B lerp 10→20 at half way = 15     = 20
	// +20: A lerp 5→15 = 10, + 20                = 30
	// +30: 15 + B lerp 20→10 at half way = 15    = 30
	// +40: A lerp 15→5 = 10, + 10                = 20
	// +50: 5 + B lerp 10→20 = 15                 = 20
	// +60: B only (A ended at +50)               = 20
	//
	// The docs' own table is garbled (15, −7, −2, 15 in the middle) and
	// the brief says 25 at +30; OpenTSDB 2.4.1's AggregationIterator, run
	// on this input, gives 30 as computed above.
	const t0 = 100 * sec
	a := []chunk.Point{pt(t0+10*sec, 5), pt(t0+30*sec, 15), pt(t0+50*sec, 5)}
	b := []chunk.Point{pt(t0, 10), pt(t0+20*sec, 20), pt(t0+40*sec, 10), pt(t0+60*sec, 20)}
	got := Aggregate(nil, [][]chunk.Point{a, b}, mustLookup(t, "sum"), false)
	want := "100000:10 110000:20 120000:30 130000:30 140000:20 150000:20 160000:20"
	if s := fmtPoints(got); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	// The same with floats gives the same values as floats.
	fa, fb := toFloats(a), toFloats(b)
	got = Aggregate(nil, [][]chunk.Point{fa, fb}, mustLookup(t, "sum"), false)
	want = "100000:10.0 110000:20.0 120000:30.0 130000:30.0 140000:20.0 150000:20.0 160000:20.0"
	if s := fmtPoints(got); s != want {
		t.Errorf("floats: got  %s\nwant %s", s, want)
	}
}

func toFloats(pts []chunk.Point) []chunk.Point {
	out := make([]chunk.Point, len(pts))
	for i, p := range pts {
		out[i] = fpt(p.T, p.V.Float())
	}
	return out
}

func TestAggregateInterpolation(t *testing.T) {
	// A has points at 0, 20, 40; B at 10, 30. Where one lacks a point the
	// aggregator's interpolation fills in:
	//
	//	      0    10   20   30   40
	//	A     5     -    1    -    9
	//	B     -     3    -    7    -
	a := []chunk.Point{pt(0, 5), pt(20, 1), pt(40, 9)}
	b := []chunk.Point{pt(10, 3), pt(30, 7)}
	tests := []struct {
		agg  string
		want string
	}{
		// LERP: A at 10 = 5 + 10·(1−5)/20 = 3; B at 20 = 5; A at 30 = 5.
		{"sum", "0:5 10:6 20:6 30:12 40:9"},
		{"min", "0:5 10:3 20:1 30:5 40:9"},
		{"max", "0:5 10:3 20:5 30:7 40:9"},
		{"avg", "0:5 10:3 20:3 30:6 40:9"},
		// ZIM: the missing one counts as 0.
		{"zimsum", "0:5 10:3 20:1 30:7 40:9"},
		// MAX/MIN: the missing one is the type's extreme and never wins.
		{"mimmin", "0:5 10:3 20:1 30:7 40:9"},
		{"mimmax", "0:5 10:3 20:1 30:7 40:9"},
		// PREV: the missing one repeats its last value.
		{"pfsum", "0:5 10:8 20:4 30:8 40:9"},
		// count: only series with a point at t; OpenTSDB would say 2 at
		// 10, 20 and 30 (issue 977).
		{"count", "0:1 10:1 20:1 30:1 40:1"},
		// first/last take series order; first's ZIM gives A's 0 at 10.
		{"first", "0:5 10:0 20:1 30:0 40:9"},
		{"last", "0:5 10:3 20:0 30:7 40:9"},
		// diff = last − first: B − A, with A lerped.
		{"diff", "0:0 10:0 20:4 30:2 40:0"},
		{"mult", "0:5 10:9 20:5 30:35 40:9"},
		{"squareSum", "0:25 10:9 20:1 30:49 40:81"},
	}
	for _, tt := range tests {
		t.Run(tt.agg, func(t *testing.T) {
			got := Aggregate(nil, [][]chunk.Point{a, b}, mustLookup(t, tt.agg), false)
			if s := fmtPoints(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

func TestAggregateLerpIntsVsFloats(t *testing.T) {
	// A = {0:1, 3000:2}, B = {1000:7}. At 1000, A lerps to
	// 1 + 1000·(2−1)/3000: 1 in integer arithmetic (1.333 truncated),
	// 1.3333… in float64.
	b := []chunk.Point{pt(1000, 7)}
	got := Aggregate(nil, [][]chunk.Point{{pt(0, 1), pt(3000, 2)}, b}, mustLookup(t, "sum"), false)
	if s, want := fmtPoints(got), "0:1 1000:8 3000:2"; s != want {
		t.Errorf("ints: got %s, want %s", s, want)
	}
	got = Aggregate(nil, [][]chunk.Point{{pt(0, 1), fpt(3000, 2)}, b}, mustLookup(t, "sum"), false)
	if s, want := fmtPoints(got), "0:1 1000:8.333333333333334 3000:2.0"; s != want {
		t.Errorf("floats: got %s, want %s", s, want)
	}
	// Truncation is toward zero, as in Java: 0 + 1000·(−2)/3000 = −0.67 → 0.
	got = Aggregate(nil, [][]chunk.Point{{pt(0, 0), pt(3000, -2)}, {pt(1000, 0)}}, mustLookup(t, "sum"), false)
	if s, want := fmtPoints(got), "0:0 1000:0 3000:-2"; s != want {
		t.Errorf("negative: got %s, want %s", s, want)
	}
}

func TestLerpInt(t *testing.T) {
	tests := []struct {
		x0, y0, x1, y1, x int64
		want              int64
	}{
		{0, 10, 20, 20, 10, 15},
		{0, 1, 3, 2, 1, 1},
		{0, 0, 3, -2, 1, 0},
		{0, 0, 3, -2, 2, -1},
		{0, 5, 20, 1, 10, 3},
		// Java would overflow (x−x0)·(y1−y0) here; 128 bits do not.
		{0, 0, 4, math.MaxInt64, 2, math.MaxInt64 / 2},
		{0, -math.MaxInt64, 2, math.MaxInt64, 1, 0},
		{0, math.MaxInt64, 2, math.MinInt64, 1, 0}, // (−1 + ...)/2: −0.5 → 0
		{1 << 40, 1e15, 1<<40 + 86400000, 2e15, 1<<40 + 43200000, 1.5e15},
	}
	for _, tt := range tests {
		if got := lerpInt(tt.x0, tt.y0, tt.x1, tt.y1, tt.x); got != tt.want {
			t.Errorf("lerpInt(%d,%d → %d,%d at %d) = %d, want %d", tt.x0, tt.y0, tt.x1, tt.y1, tt.x, got, tt.want)
		}
	}
}

func TestAggregateTypes(t *testing.T) {
	// A is integers, B one float point. At 0 and 20 only integers went
	// in; at 10 the float did.
	a := []chunk.Point{pt(0, 1), pt(20, 3)}
	b := []chunk.Point{fpt(10, 2.5)}
	got := Aggregate(nil, [][]chunk.Point{a, b}, mustLookup(t, "sum"), false)
	if s, want := fmtPoints(got), "0:1 10:4.5 20:3"; s != want {
		t.Errorf("got %s, want %s", s, want)
	}
	// An interpolated series counts as float if either point around t is;
	// at 0 only A's integer 1 went in.
	got = Aggregate(nil, [][]chunk.Point{{pt(0, 1), fpt(20, 3)}, {pt(10, 1)}}, mustLookup(t, "sum"), false)
	if s, want := fmtPoints(got), "0:1 10:3.0 20:3.0"; s != want {
		t.Errorf("got %s, want %s", s, want)
	}
	// count's result type follows the points it counts.
	got = Aggregate(nil, [][]chunk.Point{{pt(0, 1), fpt(20, 3)}, {pt(10, 1)}}, mustLookup(t, "count"), false)
	if s, want := fmtPoints(got), "0:1 10:1 20:1.0"; s != want {
		t.Errorf("count: got %s, want %s", s, want)
	}
}

func TestAggregateRate(t *testing.T) {
	// Rates are never lerped: a series without a point at t contributes
	// its previous rate, whatever the aggregator; the result is a float.
	a := []chunk.Point{pt(0, 1), pt(20, 3)}
	b := []chunk.Point{pt(10, 2), pt(30, 4)}
	for agg, want := range map[string]string{
		"sum":    "0:1.0 10:3.0 20:5.0 30:4.0",
		"zimsum": "0:1.0 10:3.0 20:5.0 30:4.0",
		"mimmin": "0:1.0 10:1.0 20:2.0 30:4.0",
		"count":  "0:1.0 10:1.0 20:1.0 30:1.0",
	} {
		got := Aggregate(nil, [][]chunk.Point{a, b}, mustLookup(t, agg), true)
		if s := fmtPoints(got); s != want {
			t.Errorf("%s: got %s, want %s", agg, s, want)
		}
	}
}

func TestAggregateNaN(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		agg    string
		series [][]chunk.Point
		want   string
	}{
		{"sum", [][]chunk.Point{{fpt(0, nan), fpt(10, 1)}, {fpt(0, 2), fpt(10, nan)}}, "0:2.0 10:1.0"},
		{"sum", [][]chunk.Point{{fpt(0, nan)}, {fpt(0, nan)}}, "0:NaN"},
		// NaN from a fill policy is not a point: count skips it.
		{"count", [][]chunk.Point{{fpt(0, nan), fpt(10, 1)}, {fpt(0, 2), fpt(10, 3)}}, "0:1.0 10:2.0"},
		{"count", [][]chunk.Point{{fpt(0, nan)}, {fpt(0, nan)}}, "0:0.0"},
		// Lerping toward a NaN gives NaN, which is skipped.
		{"sum", [][]chunk.Point{{fpt(0, 1), fpt(20, nan)}, {fpt(10, 5)}}, "0:1.0 10:5.0 20:NaN"},
	}
	for _, tt := range tests {
		got := Aggregate(nil, tt.series, mustLookup(t, tt.agg), false)
		if s := fmtPoints(got); s != tt.want {
			t.Errorf("%s %v: got %s, want %s", tt.agg, tt.series, s, tt.want)
		}
	}
}

func TestAggregateEdges(t *testing.T) {
	sum := mustLookup(t, "sum")
	if got := Aggregate(nil, nil, sum, false); len(got) != 0 {
		t.Errorf("no series: %v", got)
	}
	if got := Aggregate(nil, [][]chunk.Point{nil, {}}, sum, false); len(got) != 0 {
		t.Errorf("empty series: %v", got)
	}
	// Duplicate timestamps: the last point wins, nothing breaks.
	got := Aggregate(nil, [][]chunk.Point{{pt(0, 1), pt(0, 2), pt(10, 3), pt(10, 3)}, {pt(0, 10)}}, sum, false)
	if s, want := fmtPoints(got), "0:12 10:3"; s != want {
		t.Errorf("duplicates: got %s, want %s", s, want)
	}
	// none on one series is the series itself, kinds kept.
	one := []chunk.Point{pt(0, 1), fpt(5, 2.5), pt(9, -3)}
	got = Aggregate(nil, [][]chunk.Point{one}, mustLookup(t, "none"), false)
	if s, want := fmtPoints(got), fmtPoints(one); s != want {
		t.Errorf("none: got %s, want %s", s, want)
	}
	// Appends to dst.
	got = Aggregate([]chunk.Point{pt(-1, 0)}, [][]chunk.Point{{pt(0, 1)}}, sum, false)
	if s, want := fmtPoints(got), "-1:0 0:1"; s != want {
		t.Errorf("append: got %s, want %s", s, want)
	}
	// Series that do not overlap follow each other.
	got = Aggregate(nil, [][]chunk.Point{{pt(30, 3), pt(40, 4)}, {pt(0, 1), pt(10, 2)}}, sum, false)
	if s, want := fmtPoints(got), "0:1 10:2 30:3 40:4"; s != want {
		t.Errorf("disjoint: got %s, want %s", s, want)
	}
}

// At timestamps where every series has a point, Aggregate is the
// aggregator applied to the values in series order.
func TestAggregateAlignedMatchesAggregator(t *testing.T) {
	ints := []int64{3, 1, 4, 1, 5, 9, 2, 6}
	floats := []float64{2.5, -1, 4, 0.5, 8.25, -3, 7, 1e-3}
	for _, name := range Names() {
		agg := mustLookup(t, name)
		var is, fs [][]chunk.Point
		for i := range ints {
			is = append(is, []chunk.Point{pt(100, ints[i])})
			fs = append(fs, []chunk.Point{fpt(100, floats[i])})
		}
		if name == "none" {
			continue
		}
		if got := Aggregate(nil, is, agg, false); len(got) != 1 || !got[0].V.IsInt() || got[0].V.Int() != agg.Ints(slices.Clone(ints)) {
			t.Errorf("%s ints: %s, want %d", name, fmtPoints(got), agg.Ints(slices.Clone(ints)))
		}
		if got := Aggregate(nil, fs, agg, false); len(got) != 1 || got[0].V.IsInt() || got[0].V.Float() != agg.Floats(slices.Clone(floats)) {
			t.Errorf("%s floats: %s, want %v", name, fmtPoints(got), agg.Floats(slices.Clone(floats)))
		}
	}
}

// naiveAggregate is the definition of Aggregate written the slow way: for
// every timestamp of the union, look every series up.
func naiveAggregate(series [][]chunk.Point, agg *Aggregator, isRate bool) []chunk.Point {
	var ts []int64
	for _, s := range series {
		for _, p := range s {
			ts = append(ts, p.T)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	ts = slices.Compact(ts)
	interp := agg.Interpolation()
	if isRate {
		interp = PrevIfMissing
	}
	var out []chunk.Point
	for _, t := range ts {
		type contrib struct {
			exact  bool
			v0, v1 chunk.Value
			x0, x1 int64
		}
		var cs []contrib
		isInt := !isRate
		for _, s := range series {
			if len(s) == 0 || t < s[0].T || t > s[len(s)-1].T {
				continue
			}
			i := sort.Search(len(s), func(i int) bool { return s[i].T >= t })
			if s[i].T == t {
				cs = append(cs, contrib{exact: true, v0: s[i].V})
				isInt = isInt && s[i].V.IsInt()
				continue
			}
			if agg.kind == kCount {
				continue
			}
			cs = append(cs, contrib{v0: s[i-1].V, v1: s[i].V, x0: s[i-1].T, x1: s[i].T})
			isInt = isInt && s[i-1].V.IsInt() && s[i].V.IsInt()
		}
		if isInt {
			var vals []int64
			for _, c := range cs {
				switch {
				case c.exact:
					vals = append(vals, c.v0.Int())
				case interp == Lerp:
					vals = append(vals, c.v0.Int()+(t-c.x0)*(c.v1.Int()-c.v0.Int())/(c.x1-c.x0))
				case interp == ZeroIfMissing:
					vals = append(vals, 0)
				case interp == MaxIfMissing:
					vals = append(vals, math.MaxInt64)
				case interp == MinIfMissing:
					vals = append(vals, math.MinInt64)
				default:
					vals = append(vals, c.v0.Int())
				}
			}
			out = append(out, chunk.Point{T: t, V: chunk.Int(agg.Ints(vals))})
			continue
		}
		var vals []float64
		for _, c := range cs {
			y0, y1 := c.v0.Float(), c.v1.Float()
			switch {
			case c.exact:
				vals = append(vals, y0)
			case interp == Lerp:
				vals = append(vals, y0+float64(t-c.x0)*(y1-y0)/float64(c.x1-c.x0))
			case interp == ZeroIfMissing:
				vals = append(vals, 0)
			case interp == MaxIfMissing:
				vals = append(vals, math.MaxFloat64)
			case interp == MinIfMissing:
				vals = append(vals, -math.MaxFloat64)
			default:
				vals = append(vals, y0)
			}
		}
		out = append(out, chunk.Point{T: t, V: chunk.Float(agg.Floats(vals))})
	}
	return out
}

func randomSeries(r *rand.Rand, n int, floats bool) [][]chunk.Point {
	series := make([][]chunk.Point, n)
	for i := range series {
		t := r.Int64N(100)
		for range r.IntN(30) {
			t += 1 + r.Int64N(20)
			switch {
			case floats && r.IntN(20) == 0:
				series[i] = append(series[i], fpt(t, math.NaN()))
			case floats && r.IntN(2) == 0:
				series[i] = append(series[i], fpt(t, float64(r.IntN(2000)-1000)/8))
			default:
				series[i] = append(series[i], pt(t, r.Int64N(2000)-1000))
			}
		}
	}
	return series
}

func TestAggregateMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var s Scratch // reused across calls on purpose
	for i := range 3000 {
		series := randomSeries(r, 1+r.IntN(8), i%2 == 1)
		name := Names()[r.IntN(len(Names()))]
		if name == "none" {
			continue
		}
		agg := mustLookup(t, name)
		isRate := r.IntN(4) == 0
		got := s.Aggregate(nil, series, agg, isRate)
		want := naiveAggregate(series, agg, isRate)
		if len(got) != len(want) {
			t.Fatalf("case %d %s rate=%v: %d points, want %d\n%v", i, name, isRate, len(got), len(want), series)
		}
		for j := range got {
			g, w := got[j], want[j]
			same := g.T == w.T && g.V.IsInt() == w.V.IsInt() &&
				(g.V.Identical(w.V) || (math.IsNaN(g.V.Float()) && math.IsNaN(w.V.Float())))
			if !same {
				t.Fatalf("case %d %s rate=%v: point %d = %d:%s, want %d:%s\nseries %v",
					i, name, isRate, j, g.T, fmtValue(g.V), w.T, fmtValue(w.V), series)
			}
		}
	}
}
