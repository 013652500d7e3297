package api

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestOpenTSDBHistograms: /api/histogram's bucket form and the telnet
// histogram line are stored as custom-bucket native histograms that PromQL
// reads (histogram_count, histogram_quantile); the binary form is refused
// naming the form read; a point over -histogram-max-buckets is refused.
func TestOpenTSDBHistograms(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.HistogramMaxBuckets = 3 })
	ts := promT0 / 1000
	body := `[{"metric":"req.latency","timestamp":` + strconv.FormatInt(ts, 10) + `,"tags":{"host":"a"},
		"buckets":{"0,10":5,"10,20":3,"20,40":2},"underflow":1,"overflow":1}]`
	if r := ps.do("POST", "/api/histogram", nil, []byte(body)); r.code != 204 {
		t.Fatalf("/api/histogram: %d %s", r.code, r.body)
	}
	r := ps.do("POST", "/api/histogram", nil, []byte(`{"metric":"req.latency","timestamp":1,"tags":{"host":"a"},"id":0,"value":"AAE="}`))
	if r.code != 400 || !strings.Contains(string(r.body), "simple bucket form") {
		t.Fatalf("binary form: %d %s", r.code, r.body)
	}
	r = ps.do("POST", "/api/histogram?details", nil, []byte(`{"metric":"req.latency","timestamp":1,"tags":{"host":"a"},"buckets":{"0,1":1,"1,2":1,"2,3":1,"3,4":1}}`))
	if r.code != 400 || !strings.Contains(string(r.body), "-histogram-max-buckets") {
		t.Fatalf("over the bound: %d %s", r.code, r.body)
	}

	// The telnet line, a minute later.
	replies := ps.telnet(t, "histogram req.latency "+strconv.FormatInt(ts+60, 10)+" u=0:o=2:0,10=1:10,20=1 host=a\n"+
		"histogram req.latency "+strconv.FormatInt(ts+60, 10)+" 3 AAE= host=a\nexit\n")
	if strings.Count(replies, "\n") != 1 || !strings.HasPrefix(replies, "histogram: illegal argument: a codec id") {
		t.Fatalf("telnet replies %q: want one, refusing the binary form", replies)
	}

	q := func(expr string, at int64) map[string]string {
		code, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {expr}, "time": {strconv.FormatInt(at, 10)}})
		if code != 200 {
			t.Fatalf("%s: %d %s", expr, code, ar.Data)
		}
		return promVector(t, ar)
	}
	if got := q(`histogram_count({__name__="req.latency"})`, ts)[`{host="a"}`]; got != "12" {
		t.Errorf("histogram_count of the JSON point = %q, want 12", got)
	}
	if got := q(`histogram_count({__name__="req.latency"})`, ts+60)[`{host="a"}`]; got != "4" {
		t.Errorf("histogram_count of the telnet point = %q, want 4", got)
	}
	// percentiles on /api/query (OpenTSDB 2.4's SimpleHistogram rule: the
	// midpoint of the first bucket whose running count reaches p% of the
	// buckets' total, under- and overflow left out). The JSON point: 5, 3, 2
	// in [0,10), [10,20), [20,40): 50%, 80%, 100%. The telnet point: 1, 1 in
	// [0,10), [10,20): 50%, 100%.
	pct := func(sub string) map[string]map[string]float64 {
		t.Helper()
		pq := `{"start":` + strconv.FormatInt(ts, 10) + `,"end":` + strconv.FormatInt(ts+120, 10) + `,"queries":[` + sub + `]}`
		r := ps.do("POST", "/api/query", nil, []byte(pq))
		if r.code != 200 {
			t.Fatalf("percentiles %s: %d %s", sub, r.code, r.body)
		}
		var res []struct {
			Metric string             `json:"metric"`
			Dps    map[string]float64 `json:"dps"`
		}
		if err := json.Unmarshal(r.body, &res); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
		out := map[string]map[string]float64{}
		for _, x := range res {
			out[x.Metric] = x.Dps
		}
		return out
	}
	s0, s1 := strconv.FormatInt(ts, 10), strconv.FormatInt(ts+60, 10)
	got := pct(`{"aggregator":"sum","metric":"req.latency","percentiles":[99.9,50,83]}`)
	want := map[string]map[string]float64{
		"req.latency_pct_50.0": {s0: 5, s1: 5}, "req.latency_pct_83.0": {s0: 30, s1: 15}, "req.latency_pct_99.9": {s0: 30, s1: 15}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("percentiles = %v, want %v", got, want)
	}
	// Downsampled with sum into one 1h bucket, the two summed: 6, 4, 2 of
	// 12 in [0,10), [10,20), [20,40): 50%, 83.3%, 100%.
	// (ts is on the hour.)
	got = pct(`{"aggregator":"sum","metric":"req.latency","percentiles":[83],"downsample":"1h-sum"}`)
	if want := map[string]map[string]float64{"req.latency_pct_83.0": {s0: 15}}; !reflect.DeepEqual(got, want) {
		t.Errorf("downsampled percentiles = %v, want %v", got, want)
	}
	for sub, msg := range map[string]string{
		`{"aggregator":"avg","metric":"req.latency","percentiles":[50]}`:                       "only the sum or none aggregator",
		`{"aggregator":"sum","metric":"req.latency","percentiles":[50],"downsample":"1h-avg"}`: "only sum for downsampling",
		`{"aggregator":"sum","metric":"req.latency","showHistogramBuckets":true,"rate":true}`:  "Rates over histograms",
	} {
		pq := `{"start":` + s0 + `,"queries":[` + sub + `]}`
		if r := ps.do("POST", "/api/query", nil, []byte(pq)); r.code != 400 || !strings.Contains(string(r.body), msg) {
			t.Errorf("%s: %d %s, want 400 %q", sub, r.code, r.body, msg)
		}
	}
	// The median of 1 below 0, 5 in [0,10), 3 in [10,20), 2 in [20,40), 1
	// above: the 6th of 12 is the last of the [0,10) bucket: 10.
	if got := q(`histogram_quantile(0.5, {__name__="req.latency"})`, ts)[`{host="a"}`]; got != "10" {
		t.Errorf("the median = %q, want 10", got)
	}
}
