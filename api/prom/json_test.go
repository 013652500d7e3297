package prom

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/jsonutil"
)

// Prometheus writes its JSON with jsoniter and util/jsonutil; these tests
// hold the appenders to that output byte for byte.

func jsoniterOut(f func(*jsoniter.Stream)) string {
	st := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
	defer jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(st)
	f(st)
	return string(st.Buffer())
}

var testFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, 1e-7, 1e-6, 123456789.123, 1e20, 1e21, 1e300, -1e-300,
	math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(), 2.5e-5, 1.0 / 3}

func TestAppendFloatMatchesPrometheus(t *testing.T) {
	for _, f := range testFloats {
		want := jsoniterOut(func(s *jsoniter.Stream) { jsonutil.MarshalFloat(f, s) })
		if got := string(AppendFloat(nil, f)); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}

func TestAppendTimestampMatchesPrometheus(t *testing.T) {
	for _, ts := range []int64{0, 1, 5, 10, 99, 100, 999, 1000, 1001, 1010, 4000, 1767225600123, -1, -1500, -1000, math.MaxInt64, math.MinInt64 + 1} {
		want := jsoniterOut(func(s *jsoniter.Stream) { jsonutil.MarshalTimestamp(ts, s) })
		if got := string(AppendTimestamp(nil, ts)); got != want {
			t.Errorf("%d: %s, want %s", ts, got, want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "<html>&amp;", "new\nline\ttab\r\b\f\x00\x1f", "ünï ✓ 日本", "bad\xffutf8\xc3", "\u2028\u2029", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := string(AppendString(nil, s)); got != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

func TestAppendHistogramMatchesPrometheus(t *testing.T) {
	h := &histogram.FloatHistogram{
		Schema: 0, Count: 19, Sum: 2.7, ZeroThreshold: 0.001, ZeroCount: 4,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}},
		PositiveBuckets: []float64{1, 2, 0, 4},
		NegativeSpans:   []histogram.Span{{Offset: 0, Length: 1}},
		NegativeBuckets: []float64{8},
	}
	want := jsoniterOut(func(s *jsoniter.Stream) { jsonutil.MarshalHistogram(h, s) })
	if got := string(AppendHistogram(nil, h)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	empty := &histogram.FloatHistogram{}
	want = jsoniterOut(func(s *jsoniter.Stream) { jsonutil.MarshalHistogram(empty, s) })
	if got := string(AppendHistogram(nil, empty)); got != want {
		t.Errorf("empty: got %s, want %s", got, want)
	}
}

func TestAppendScalarAndStringMatchPrometheus(t *testing.T) {
	for _, v := range []any{promql.Scalar{T: 4000, V: 2}, promql.Scalar{T: 1500, V: math.NaN()}, promql.Scalar{T: 1, V: math.Inf(-1)},
		promql.Scalar{T: 1767225600123, V: 1e300}, promql.String{T: 1000, V: "a\"<b>"}} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		switch x := v.(type) {
		case promql.Scalar:
			got = AppendValue(nil, x)
		case promql.String:
			got = AppendValue(nil, x)
		}
		if string(got) != string(want) {
			t.Errorf("%v: %s, want %s", v, got, want)
		}
	}
}

func TestAppendQueryData(t *testing.T) {
	lbls := labels.FromStrings("__name__", "up", "job", "node")
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"vector", promql.Vector{{T: 4000, F: 1, Metric: lbls}, {T: 4500, F: math.NaN(), Metric: labels.EmptyLabels()}},
			`{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"node"},"value":[4,"1"]},{"metric":{},"value":[4.500,"NaN"]}]}`},
		{"matrix", promql.Matrix{{Metric: lbls, Floats: []promql.FPoint{{T: 1000, F: 1.5}, {T: 16000, F: math.Inf(1)}}}, {Metric: lbls}},
			`{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"node"},"values":[[1,"1.5"],[16,"+Inf"]]},{"metric":{"__name__":"up","job":"node"}}]}`},
		{"empty matrix", promql.Matrix{}, `{"resultType":"matrix","result":[]}`},
		{"scalar", promql.Scalar{T: 4000, V: 2}, `{"resultType":"scalar","result":[4,"2"]}`},
		{"string", promql.String{T: 4000, V: "x"}, `{"resultType":"string","result":[4,"x"]}`},
		{"histogram sample", promql.Vector{{T: 1000, H: &histogram.FloatHistogram{Count: 1, Sum: 2}, Metric: lbls}},
			`{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"node"},"histogram":[1,{"count":"1","sum":"2"}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			switch x := tc.v.(type) {
			case promql.Vector:
				got = AppendQueryData(nil, x)
			case promql.Matrix:
				got = AppendQueryData(nil, x)
			case promql.Scalar:
				got = AppendQueryData(nil, x)
			case promql.String:
				got = AppendQueryData(nil, x)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Error("not valid JSON")
			}
		})
	}
}

func TestEnvelopes(t *testing.T) {
	got := AppendSuccessEnd(append(AppendSuccessStart(nil), `[]`...), []string{"w<1>"}, []string{"i"})
	if want := `{"status":"success","data":[],"warnings":["w\u003c1\u003e"],"infos":["i"]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got = AppendSuccessEnd(append(AppendSuccessStart(nil), `{}`...), nil, nil)
	if want := `{"status":"success","data":{}}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got = AppendError(nil, ErrorBadData, `invalid parameter "query": 1:1: parse error`)
	if want := `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestAppendHundredthsMatchesStrconv: the whole-hundredths path of
// AppendFloat writes what strconv's shortest formatting writes, over every
// hundredth within ±1000, random ones up to the bound (1e12), values just
// off a hundredth, and the bound's neighbours; and it is taken for whole
// hundredths.
func TestAppendHundredthsMatchesStrconv(t *testing.T) {
	check := func(f float64) bool {
		want := strconv.AppendFloat(nil, f, 'f', -1, 64)
		got, ok := appendHundredths(nil, f)
		if ok && string(got) != string(want) {
			t.Fatalf("%v (%x): %s, want %s", f, math.Float64bits(f), got, want)
		}
		return ok
	}
	for m := -100_000; m <= 100_000; m++ {
		if f := float64(m) / 100; !check(f) && m != 0 {
			t.Fatalf("%v: not taken", f)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		m := r.Int64N(1e14) - 5e13
		f := float64(m) / 100
		if !check(f) && m != 0 {
			t.Fatalf("%v: not taken", f)
		}
		check(math.Nextafter(f, math.Inf(1)))
		check(r.NormFloat64() * math.Pow(10, float64(r.IntN(24)-6)))
	}
	for _, f := range []float64{1e12, -1e12, math.Nextafter(1e12, 0), math.Nextafter(-1e12, 0), 999999999999.99, 0.01, -0.01, 0.005, 1e-300, 0.1 + 0.2} {
		check(f)
	}
}

// TestAppendMatrixSharedTimestamps: a matrix whose series share their
// steps, start later, skip some, or have other times (the first series'
// timestamps are kept written and copied for the others where they
// match) is written as each series alone writes it.
func TestAppendMatrixSharedTimestamps(t *testing.T) {
	pts := func(ts ...int64) []promql.FPoint {
		out := make([]promql.FPoint, len(ts))
		for i, t := range ts {
			out[i] = promql.FPoint{T: t, F: float64(t) / 7}
		}
		return out
	}
	m := promql.Matrix{
		{Metric: labels.FromStrings("a", "0")}, // no points: nothing kept from it
		{Metric: labels.FromStrings("a", "1"), Floats: pts(1000, 61000, 121500, 181000)},
		{Metric: labels.FromStrings("a", "2"), Floats: pts(1000, 61000, 121500, 181000, 241000)},
		{Metric: labels.FromStrings("a", "3"), Floats: pts(61000, 121500, 181000)},
		{Metric: labels.FromStrings("a", "4"), Floats: pts(1000, 61001, 121500)},
		{Metric: labels.FromStrings("a", "5"), Floats: pts(-1500, 1000)},
	}
	want := []byte{'['}
	for i := range m {
		if i > 0 {
			want = append(want, ',')
		}
		want = AppendSeries(want, &m[i])
	}
	want = append(want, ']')
	if got := AppendValue(nil, m); string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
