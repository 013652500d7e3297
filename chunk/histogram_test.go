package chunk

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
)

// histScenario generates n samples of a series scraped every step ms from
// base: observations of a log-normal latency added each scrape.
type histScenario struct {
	name   string
	schema int32
	custom []float64
	float  bool    // float histograms (integral counts)
	scale  float64 // float: counts divided by this (non-integral counts)
	neg    bool    // observations of both signs
}

var histScenarios = []histScenario{
	{name: "exp-schema3-int", schema: 3},
	{name: "exp-schema0-int", schema: 0},
	{name: "exp-schema3-float", schema: 3, float: true},
	{name: "exp-schema3-float-rate", schema: 3, float: true, scale: 15},
	{name: "exp-schema3-int-neg", schema: 3, neg: true},
	{name: "custom-buckets-int", schema: histogram.CustomBucketsSchema,
		custom: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
}

func bucketIndex(sc histScenario, v float64) int {
	if sc.custom != nil {
		i, _ := slices.BinarySearch(sc.custom, v)
		return i // the last index, len(custom), is +Inf
	}
	return int(math.Ceil(math.Log2(v) * math.Exp2(float64(sc.schema))))
}

func spansOf(idx []int) []histogram.Span {
	var spans []histogram.Span
	prev := 0
	for i, x := range idx {
		if i > 0 && x == prev+1 {
			spans[len(spans)-1].Length++
		} else {
			off := x
			if i > 0 {
				off = x - prev - 1
			}
			spans = append(spans, histogram.Span{Offset: int32(off), Length: 1})
		}
		prev = x
	}
	return spans
}

func (sc histScenario) generate(seed uint64, base, step int64, n int) []HistPoint {
	rng := rand.New(rand.NewPCG(seed, 1))
	pos, neg := map[int]uint64{}, map[int]uint64{}
	var count, zero uint64
	var sum float64
	pts := make([]HistPoint, 0, n)
	for i := range n {
		for range 50 + rng.IntN(100) {
			v := math.Exp(math.Log(0.1) + rng.NormFloat64())
			count++
			sum += v
			switch {
			case sc.neg && rng.IntN(3) == 0:
				neg[bucketIndex(sc, v)]++
				sum -= 2 * v
			case v < 0.001 && sc.custom == nil:
				zero++
			default:
				pos[bucketIndex(sc, v)]++
			}
		}
		h := &histogram.Histogram{Schema: sc.schema, Count: count, ZeroCount: zero, Sum: sum, CustomValues: sc.custom}
		if sc.custom == nil {
			h.ZeroThreshold = 0.001
		}
		for _, side := range []struct {
			m       map[int]uint64
			spans   *[]histogram.Span
			buckets *[]int64
		}{{pos, &h.PositiveSpans, &h.PositiveBuckets}, {neg, &h.NegativeSpans, &h.NegativeBuckets}} {
			idx := make([]int, 0, len(side.m))
			for k := range side.m {
				idx = append(idx, k)
			}
			slices.Sort(idx)
			*side.spans = spansOf(idx)
			var prev int64
			for _, k := range idx {
				c := int64(side.m[k])
				*side.buckets = append(*side.buckets, c-prev)
				prev = c
			}
		}
		p := HistPoint{T: base + int64(i)*step, H: h}
		if sc.float {
			p.FH, p.H = h.ToFloat(nil), nil
			if sc.scale != 0 {
				p.FH.Div(sc.scale)
			}
		}
		pts = append(pts, p)
	}
	return pts
}

func equalSpans(a, b []histogram.Span) bool {
	return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b))
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// sameHistPoint compares two samples field by field, floats bit for bit.
func sameHistPoint(a, b HistPoint) bool {
	if a.T != b.T || (a.H == nil) != (b.H == nil) {
		return false
	}
	if a.H != nil {
		x, y := a.H, b.H
		return x.CounterResetHint == y.CounterResetHint && x.Schema == y.Schema &&
			math.Float64bits(x.ZeroThreshold) == math.Float64bits(y.ZeroThreshold) && x.ZeroCount == y.ZeroCount &&
			x.Count == y.Count && math.Float64bits(x.Sum) == math.Float64bits(y.Sum) &&
			equalSpans(x.PositiveSpans, y.PositiveSpans) && equalSpans(x.NegativeSpans, y.NegativeSpans) &&
			slices.Equal(x.PositiveBuckets, y.PositiveBuckets) && slices.Equal(x.NegativeBuckets, y.NegativeBuckets) &&
			equalFloats(x.CustomValues, y.CustomValues)
	}
	x, y := a.FH, b.FH
	return x.CounterResetHint == y.CounterResetHint && x.Schema == y.Schema &&
		math.Float64bits(x.ZeroThreshold) == math.Float64bits(y.ZeroThreshold) &&
		equalFloats([]float64{x.ZeroCount, x.Count, x.Sum}, []float64{y.ZeroCount, y.Count, y.Sum}) &&
		equalSpans(x.PositiveSpans, y.PositiveSpans) && equalSpans(x.NegativeSpans, y.NegativeSpans) &&
		equalFloats(x.PositiveBuckets, y.PositiveBuckets) && equalFloats(x.NegativeBuckets, y.NegativeBuckets) &&
		equalFloats(x.CustomValues, y.CustomValues)
}

// asFloat is p as a float histogram sample.
func asFloat(p HistPoint) HistPoint {
	if p.H != nil {
		return HistPoint{T: p.T, FH: p.H.ToFloat(nil)}
	}
	return p
}

func roundTrip(t *testing.T, base int64, pts []HistPoint) []byte {
	t.Helper()
	b, err := AppendHistograms(nil, base, pts)
	if err != nil {
		t.Fatalf("AppendHistograms: %v", err)
	}
	if !IsHistogramChunk(b) {
		t.Fatal("IsHistogramChunk: false for a histogram chunk")
	}
	got, err := DecodeHistograms(nil, b, base)
	if err != nil {
		t.Fatalf("DecodeHistograms: %v", err)
	}
	if len(got) != len(pts) {
		t.Fatalf("decoded %d samples, want %d", len(got), len(pts))
	}
	anyFloat := slices.ContainsFunc(pts, func(p HistPoint) bool { return p.FH != nil })
	for i := range pts {
		want := pts[i]
		if anyFloat {
			want = asFloat(want)
		}
		if !sameHistPoint(got[i], want) {
			t.Fatalf("sample %d: got %+v %+v, want %+v %+v", i, got[i].H, got[i].FH, want.H, want.FH)
		}
	}
	return b
}

const hBase = 1_700_000_000_000 / HourMillis * HourMillis

func TestHistogramRoundTripScenarios(t *testing.T) {
	for _, sc := range histScenarios {
		t.Run(sc.name, func(t *testing.T) {
			pts := sc.generate(1, hBase, 15_000, 240)
			b := roundTrip(t, hBase, pts)
			t.Logf("%s: %d samples, %d bytes, %.1f bytes/sample", sc.name, len(pts), len(b), float64(len(b))/float64(len(pts)))
		})
	}
}

func TestHistogramRoundTripEdges(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	h := func(t int64, hint histogram.CounterResetHint, schema int32, count uint64, sum float64, pos []histogram.Span, pb []int64, neg []histogram.Span, nb []int64) HistPoint {
		return HistPoint{T: t, H: &histogram.Histogram{CounterResetHint: hint, Schema: schema, ZeroThreshold: 1e-128, ZeroCount: count / 2,
			Count: count, Sum: sum, PositiveSpans: pos, PositiveBuckets: pb, NegativeSpans: neg, NegativeBuckets: nb}}
	}
	sp := func(o int32, l uint32) histogram.Span { return histogram.Span{Offset: o, Length: l} }
	cases := map[string][]HistPoint{
		"one empty":  {h(hBase, 0, 0, 0, 0, nil, nil, nil, nil)},
		"stale sum":  {h(hBase, 0, 0, 5, 1, []histogram.Span{sp(-3, 2)}, []int64{2, 1}, nil, nil), h(hBase+1, 0, 0, 5, stale, []histogram.Span{sp(-3, 2)}, []int64{2, 1}, nil, nil)},
		"hints":      {h(hBase, histogram.CounterReset, 0, 5, 1, nil, nil, nil, nil), h(hBase+10, histogram.NotCounterReset, 0, 6, 2, nil, nil, nil, nil), h(hBase+20, histogram.GaugeType, 0, 1, 2, nil, nil, nil, nil), h(hBase+30, histogram.GaugeType, 0, 1, 2, nil, nil, nil, nil)},
		"zero-len":   {h(hBase, 0, 2, 7, -1.5, []histogram.Span{sp(0, 0), sp(5, 1), sp(0, 0)}, []int64{7}, []histogram.Span{sp(-100000, 3)}, []int64{1, -1, 5})},
		"extremes":   {h(hBase, 0, -4, math.MaxUint64, math.Inf(-1), []histogram.Span{sp(math.MinInt32, 2)}, []int64{math.MinInt64, math.MaxInt64}, nil, nil), h(hBase+HourMillis-1, 0, 8, 0, math.NaN(), nil, nil, nil, nil)},
		"any schema": {h(hBase, 0, 100, 1, 0, []histogram.Span{sp(1, 1)}, []int64{1}, nil, nil), h(hBase+1, 0, -100, 1, 0, []histogram.Span{sp(1, 1)}, []int64{1}, nil, nil)},
	}
	// Layout changes every sample, then stays.
	var grow []HistPoint
	for i := range 20 {
		n := min(i, 10) + 1
		pb := make([]int64, n)
		for j := range pb {
			pb[j] = int64(i + j)
		}
		grow = append(grow, h(hBase+int64(i)*1000, 0, 3, uint64(i*i), float64(i)/3, []histogram.Span{sp(int32(-i), uint32(n))}, pb, nil, nil))
	}
	cases["layout changes"] = grow
	mixed := slices.Clone(grow)
	mixed[3] = asFloat(mixed[3])
	mixed[4] = HistPoint{T: mixed[4].T, FH: &histogram.FloatHistogram{Count: 0.5, Sum: -0.0, ZeroCount: math.Copysign(0, -1), ZeroThreshold: 2,
		PositiveSpans: []histogram.Span{sp(0, 1)}, PositiveBuckets: []float64{math.Inf(1)}}}
	cases["mixed int and float"] = mixed
	custom := []HistPoint{{T: hBase, FH: &histogram.FloatHistogram{Schema: -53, Count: 3, Sum: 1, CustomValues: []float64{1, 2, math.Inf(1)},
		PositiveSpans: []histogram.Span{sp(0, 2), sp(1, 1)}, PositiveBuckets: []float64{1, 1, 1}}}}
	cases["custom float"] = custom
	for name, pts := range cases {
		t.Run(name, func(t *testing.T) { roundTrip(t, hBase, pts) })
	}
}

func TestHistogramRefused(t *testing.T) {
	good := histScenarios[0].generate(1, hBase, 1000, 3)
	bad := map[string][]HistPoint{
		"none":          nil,
		"both kinds":    {{T: hBase, H: &histogram.Histogram{}, FH: &histogram.FloatHistogram{}}},
		"neither":       {{T: hBase}},
		"outside hour":  {{T: hBase + HourMillis, H: &histogram.Histogram{}}},
		"not ascending": {good[1], good[0]},
		"span mismatch": {{T: hBase, H: &histogram.Histogram{PositiveSpans: []histogram.Span{{Length: 2}}, PositiveBuckets: []int64{1}}}},
		"too many":      {{T: hBase, H: &histogram.Histogram{PositiveSpans: []histogram.Span{{Length: MaxHistogramBuckets + 1}}, PositiveBuckets: make([]int64, MaxHistogramBuckets+1)}}},
	}
	for name, pts := range bad {
		if _, err := AppendHistograms(nil, hBase, pts); !errors.Is(err, ErrInvalidPoints) {
			t.Errorf("%s: err = %v, want ErrInvalidPoints", name, err)
		}
	}
}

func TestHistogramTruncatedAndCorrupt(t *testing.T) {
	for _, sc := range histScenarios {
		pts := sc.generate(2, hBase, 10_000, 30)
		b, err := AppendHistograms(nil, hBase, pts)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			if _, err := DecodeHistograms(nil, b[:n], hBase); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: prefix of %d of %d bytes: err = %v, want ErrCorrupt", sc.name, n, len(b), err)
			}
		}
		if _, err := DecodeHistograms(nil, append(slices.Clone(b), 0), hBase); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: a trailing byte: err = %v, want ErrCorrupt", sc.name, err)
		}
	}
	// A float chunk reader refuses a histogram chunk, and the reverse.
	b, _ := AppendHistograms(nil, hBase, histScenarios[0].generate(1, hBase, 1000, 3))
	var it Iterator
	if err := it.Reset(b, hBase); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Iterator.Reset(histogram chunk) = %v, want ErrCorrupt", err)
	}
	fb, _ := Append(nil, hBase, []Point{{T: hBase, V: Int(1)}})
	if IsHistogramChunk(fb) {
		t.Error("IsHistogramChunk(float chunk) = true")
	}
	if _, err := DecodeHistograms(nil, fb, hBase); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeHistograms(float chunk) = %v, want ErrCorrupt", err)
	}
}
