package opentsdb

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"hourglass/chunk"
)

func TestAppendError(t *testing.T) {
	tests := []struct {
		code         int
		msg, details string
		want         string
	}{
		{400, "Missing parameter <code>start</code>", "", `{"error":{"code":400,"message":"Missing parameter <code>start</code>"}}`},
		{404, "Endpoint not found", "", `{"error":{"code":404,"message":"Endpoint not found"}}`},
		{400, "One or more data points had errors", `Please see the TSD logs or append "details" to the put request`,
			`{"error":{"code":400,"message":"One or more data points had errors","details":"Please see the TSD logs or append \"details\" to the put request"}}`},
	}
	for _, tt := range tests {
		got := string(AppendError(nil, tt.code, tt.msg, tt.details))
		if got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	e := &RequestError{Status: 400, Message: "Unable to parse the given JSON", Details: "x"}
	if got := string(e.AppendJSON(nil)); got != `{"error":{"code":400,"message":"Unable to parse the given JSON","details":"x"}}` {
		t.Errorf("got %s", got)
	}
	if e.Error() != "Unable to parse the given JSON: x" || ErrMissingContent.Error() != "Missing request content" {
		t.Errorf("Error() %q", e.Error())
	}
}

func TestAppendValue(t *testing.T) {
	tests := []struct {
		v    chunk.Value
		null bool
		want string
	}{
		{chunk.Int(42), false, "42"},
		{chunk.Int(math.MaxInt64), false, "9223372036854775807"},
		{chunk.Int(math.MinInt64), false, "-9223372036854775808"},
		{chunk.Float(42), false, "42.0"},
		{chunk.Float(1.5), false, "1.5"},
		{chunk.Float(-0.0), false, "0.0"},
		{chunk.Float(math.Copysign(0, -1)), false, "-0.0"},
		{chunk.Float(0.1), false, "0.1"},
		{chunk.Float(2.2928386e10), false, "22928386000.0"},
		{chunk.Float(1e20), false, "100000000000000000000.0"},
		{chunk.Float(1e21), false, "1e+21"},
		{chunk.Float(1.5e-7), false, "1.5e-7"},
		{chunk.Float(1e-6), false, "0.000001"},
		{chunk.Float(5e-324), false, "5e-324"},
		{chunk.Float(math.MaxFloat64), false, "1.7976931348623157e+308"},
		{chunk.Float(math.NaN()), false, `"NaN"`},
		{chunk.Float(math.NaN()), true, "null"},
		{chunk.Float(math.Inf(1)), false, `"Infinity"`},
		{chunk.Float(math.Inf(-1)), true, `"-Infinity"`},
		{chunk.Int(7), true, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := string(AppendValue(nil, tt.v, tt.null))
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s is not JSON", got)
			}
		})
	}
}

// Every finite float must come out as valid JSON that reads back to the same bits.
func TestAppendFloatRoundTrip(t *testing.T) {
	vals := []float64{0, 1, -1, 0.1, 1.0 / 3, 1e-7, 1e-6, 9.999999e-7, 1e21, 9.999999999999999e20, 123456789012345678,
		math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64, math.Pi * 1e100, 4.9e-324, 2.5e-310}
	for i := 0; i < 2000; i++ {
		vals = append(vals, math.Float64frombits(uint64(i)*0x9E3779B97F4A7C15))
	}
	for _, f := range vals {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		b := appendFloat(nil, f)
		var back float64
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%v → %s: %v", f, b, err)
		}
		if math.Float64bits(back) != math.Float64bits(f) && !(f == 0 && back == 0 && math.Signbit(f) == math.Signbit(back)) {
			t.Errorf("%v → %s → %v", f, b, back)
		}
		if _, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			t.Errorf("%v → %s reads as an integer", f, b)
		}
	}
}

func TestAppendResult(t *testing.T) {
	pts := []chunk.Point{
		{T: 1365966001000, V: chunk.Int(25595461080)},
		{T: 1365966061500, V: chunk.Float(1.5)},
		{T: 1365966121000, V: chunk.Float(math.NaN())},
	}
	r := &QueryResult{
		Metric:        "sys.cpu",
		Tags:          []Tag{{"host", "web01"}},
		AggregateTags: []string{"cpu"},
	}
	tests := []struct {
		name string
		r    *QueryResult
		f    ResultFormat
		want string
	}{
		{"object", r, ResultFormat{},
			`{"metric":"sys.cpu","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":{"1365966001":25595461080,"1365966061":1.5,"1365966121":"NaN"}}`},
		{"object ms null", r, ResultFormat{MsResolution: true, NaNIsNull: true},
			`{"metric":"sys.cpu","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":{"1365966001000":25595461080,"1365966061500":1.5,"1365966121000":null}}`},
		{"arrays", r, ResultFormat{Arrays: true},
			`{"metric":"sys.cpu","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":[[1365966001,25595461080],[1365966061,1.5],[1365966121,"NaN"]]}`},
		{"arrays ms null", r, ResultFormat{Arrays: true, MsResolution: true, NaNIsNull: true},
			`{"metric":"sys.cpu","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":[[1365966001000,25595461080],[1365966061500,1.5],[1365966121000,null]]}`},
		{"everything", &QueryResult{
			Metric: "m", Tags: nil, AggregateTags: nil,
			Query:             &SubQuery{Aggregator: "sum", Metric: "m", Index: 2, UseMultiGets: true, UseFuzzyFilter: true},
			TSUIDs:            []string{"0001", "0002"},
			Annotations:       []Annotation{{TSUID: "0001", Description: "deploy", Notes: "", StartTime: 1365966001, Custom: map[string]string{"b": "2", "a": "1"}}},
			GlobalAnnotations: []Annotation{{Description: "global", StartTime: 1365966002, EndTime: 1365966003}},
			Stats:             []byte(`{"emittedDPs":3}`),
		}, ResultFormat{},
			`{"metric":"m","tags":{},"aggregateTags":[],"query":{"aggregator":"sum","metric":"m","tsuids":null,"downsample":null,"rate":false,"filters":[],"explicitTags":false,"percentiles":null,"rateOptions":null,"tags":{},"index":2,"preAggregate":false,"rollupUsage":null,"showHistogramBuckets":false,"useMultiGets":true,"useFuzzyFilter":true},` +
				`"tsuids":["0001","0002"],"annotations":[{"tsuid":"0001","description":"deploy","notes":"","custom":{"a":"1","b":"2"},"startTime":1365966001,"endTime":0}],` +
				`"globalAnnotations":[{"description":"global","notes":"","startTime":1365966002,"endTime":1365966003}],` +
				`"dps":{"1365966001":25595461080,"1365966061":1.5,"1365966121":"NaN"},"stats":{"emittedDPs":3}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendResult(nil, tt.r, pts, tt.f))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("invalid JSON")
			}
		})
	}
	empty := string(AppendResult(nil, r, nil, ResultFormat{Arrays: true}))
	if empty != `{"metric":"sys.cpu","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":[]}` {
		t.Errorf("empty: %s", empty)
	}
	if got := string(AppendStatsSummary(nil, []byte(`{"datapoints":0}`))); got != `{"statsSummary":{"datapoints":0}}` {
		t.Errorf("summary: %s", got)
	}
}

// What Grafana's Go backend decodes (clients.md §1.2): arrays as
// [][]float64 and objects as map[string]float64 (with null fill).
func TestAppendResultGrafana(t *testing.T) {
	pts := []chunk.Point{{T: 1767225600000, V: chunk.Float(12.5)}, {T: 1767225660000, V: chunk.Int(13)}, {T: 1767225720000, V: chunk.Float(math.NaN())}}
	r := &QueryResult{Metric: "cpu.usage", Tags: []Tag{{"host", "web01"}}, AggregateTags: []string{}}

	var arrays []struct {
		Metric        string            `json:"metric"`
		Tags          map[string]string `json:"tags"`
		AggregateTags []string          `json:"aggregateTags"`
		DPS           [][]float64       `json:"dps"`
	}
	body := append([]byte{'['}, AppendResult(nil, r, pts, ResultFormat{Arrays: true, NaNIsNull: true})...)
	body = append(body, ']')
	if err := json.Unmarshal(body, &arrays); err != nil {
		t.Fatal(err)
	}
	if len(arrays) != 1 || arrays[0].DPS[0][0] != 1767225600 || arrays[0].DPS[0][1] != 12.5 || arrays[0].DPS[1][1] != 13 {
		t.Errorf("arrays: %+v", arrays)
	}

	var objects []struct {
		DPS map[string]float64 `json:"dps"`
	}
	body = append([]byte{'['}, AppendResult(nil, r, pts, ResultFormat{NaNIsNull: true})...)
	body = append(body, ']')
	if err := json.Unmarshal(body, &objects); err != nil {
		t.Fatal(err)
	}
	if objects[0].DPS["1767225600"] != 12.5 || objects[0].DPS["1767225660"] != 13 {
		t.Errorf("objects: %+v", objects)
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"a\nb\rc\td\x01", `"a\nb\rc\td\u0001"`},
		{"é日本", `"é日本"`},
		{"a\xffb", `"a\ufffdb"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"<&>", `"<&>"`},
	}
	for _, tt := range tests {
		got := string(appendString(nil, tt.in))
		if got != tt.want {
			t.Errorf("%q: got %s, want %s", tt.in, got, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%q: invalid JSON %s", tt.in, got)
		}
	}
}
