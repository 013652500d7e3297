package e2e

import (
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
)

// TestOpenTSDBPercentiles: histograms written through /api/histogram are
// answered by /api/query's percentiles as OpenTSDB 2.4 answers them
// (SimpleHistogram: the midpoint of the first bucket whose running count
// reaches p% of the buckets' total; the group's histograms summed bucket
// by bucket), before and after a restart. Every value is worked by hand in
// the comments.
func TestOpenTSDBPercentiles(t *testing.T) {
	s := start(t, t.TempDir())
	hist := func(ts int64, host string, buckets string) string {
		return fmt.Sprintf(`{"metric":"hist.m","timestamp":%d,"tags":{"host":%q},"buckets":{%s},"underflow":3,"overflow":4}`, ts, host, buckets)
	}
	// host a at t0: 5, 3, 2 in [0,10), [10,20), [20,40); at t0+60: 1, 1 in
	// [0,10), [10,20). host b at t0: 1, 1, 8. The under- and overflow
	// counts never count.
	body := "[" + hist(otsT0, "a", `"0,10":5,"10,20":3,"20,40":2`) + "," + hist(otsT0+60, "a", `"0,10":1,"10,20":1`) + "," +
		hist(otsT0, "b", `"0,10":1,"10,20":1,"20,40":8`) + "]"
	if code, resp := s.do("POST", "/api/histogram", "application/json", []byte(body)); code != 204 {
		t.Fatalf("/api/histogram: %d %s", code, resp)
	}
	check := func(when string) {
		// sum at t0: 6, 4, 10 of 20: 30%, 50%, 100%: p30 5, p50 15, p99.9
		// 30. At t0+60 (a alone): 50%, 100%: p30 5, p50 5, p99.9 15.
		rs := otsQuery(t, s, "/api/query", map[string]any{"start": otsT0, "end": otsT0 + 120, "queries": []map[string]any{
			{"aggregator": "sum", "metric": "hist.m", "percentiles": []float64{99.9, 30, 50}}}})
		byName := map[string]otsResult{}
		for _, r := range rs {
			byName[r.Metric] = r
		}
		if len(rs) != 3 {
			t.Fatalf("%s: %d results, want 3: %+v", when, len(rs), rs)
		}
		otsCheckPoints(t, when+" p30", byName["hist.m_pct_30.0"].points(t), otsPts{otsT0: 5, otsT0 + 60: 5})
		otsCheckPoints(t, when+" p50", byName["hist.m_pct_50.0"].points(t), otsPts{otsT0: 15, otsT0 + 60: 5})
		otsCheckPoints(t, when+" p99.9", byName["hist.m_pct_99.9"].points(t), otsPts{otsT0: 30, otsT0 + 60: 15})

		// The m= form, downsampled 2m-sum: all three in the t0 bucket:
		// 7, 5, 10 of 22: 31.8%, 54.5%, 100%: p50 15, p55 30.
		qs := url.Values{"start": {fmt.Sprint(otsT0)}, "end": {fmt.Sprint(otsT0 + 120)},
			"m": {"sum:2m-sum:percentiles[50,55]:hist.m"}}.Encode()
		rs = otsQueryGET(t, s, qs)
		if len(rs) != 2 || rs[0].Metric != "hist.m_pct_50.0" || rs[1].Metric != "hist.m_pct_55.0" {
			t.Fatalf("%s m=: %+v", when, rs)
		}
		otsCheckPoints(t, when+" m= p50", rs[0].points(t), otsPts{otsT0: 15})
		otsCheckPoints(t, when+" m= p55", rs[1].points(t), otsPts{otsT0: 30})

		// Grouped by host: b at t0: 10%, 20%, 100%: p50 30.
		rs = otsQuery(t, s, "/api/query", map[string]any{"start": otsT0, "end": otsT0 + 120, "queries": []map[string]any{
			{"aggregator": "sum", "metric": "hist.m", "percentiles": []float64{50}, "tags": map[string]string{"host": "*"}}}})
		if len(rs) != 2 || rs[0].Tags["host"] != "a" || rs[1].Tags["host"] != "b" {
			t.Fatalf("%s by host: %+v", when, rs)
		}
		otsCheckPoints(t, when+" a p50", rs[0].points(t), otsPts{otsT0: 5, otsT0 + 60: 5})
		otsCheckPoints(t, when+" b p50", rs[1].points(t), otsPts{otsT0: 30})
		// none: each series alone, as by host.
		rs = otsQuery(t, s, "/api/query", map[string]any{"start": otsT0, "end": otsT0 + 120, "queries": []map[string]any{
			{"aggregator": "none", "metric": "hist.m", "percentiles": []float64{50}}}})
		if len(rs) != 2 || rs[0].Tags["host"] == rs[1].Tags["host"] {
			t.Fatalf("%s none: %+v", when, rs)
		}
		for _, r := range rs {
			want := otsPts{otsT0: 5, otsT0 + 60: 5}
			if r.Tags["host"] == "b" {
				want = otsPts{otsT0: 30}
			}
			otsCheckPoints(t, when+" none "+r.Tags["host"], r.points(t), want)
		}
	}
	check("before the restart")
	checkBuckets(t, s, "before the restart")
	s.stop() // a clean stop flushes the head to the store
	s.restart()
	check("after the restart")
	checkBuckets(t, s, "after the restart")
}

// checkBuckets checks showHistogramBuckets over TestOpenTSDBPercentiles'
// data as OpenTSDB 2.4 answers it (HistogramBucketDataPointsAdaptor): per
// group, after the percentiles, one series per bucket of the group's first
// histogram, underflow first, overflow last, named <metric>_<low>_<high>
// with Java's float printing, the counts as JSON integers (0 where a later
// histogram lacks the bucket). Worked by hand.
func checkBuckets(t *testing.T, s *server, when string) {
	t.Helper()
	want := func(what string, rs []otsResult, names []string, pts []map[int64]string) {
		t.Helper()
		if len(rs) != len(names) {
			t.Fatalf("%s %s: %d results, want %v: %+v", when, what, len(rs), names, rs)
		}
		for i, r := range rs {
			if r.Metric != names[i] {
				t.Fatalf("%s %s: result %d is %q, want %q", when, what, i, r.Metric, names[i])
			}
			if got := r.points(t); !maps.Equal(got, pts[i]) {
				t.Errorf("%s %s %s: %v, want %v", when, what, r.Metric, got, pts[i])
			}
		}
	}
	// At t0 a and b: under 3+3, 6, 4, 10, over 4+4; at t0+60 a alone:
	// under 3, 1, 1, none in [20,40), over 4.
	rs := otsQuery(t, s, "/api/query", map[string]any{"start": otsT0, "end": otsT0 + 120, "queries": []map[string]any{
		{"aggregator": "sum", "metric": "hist.m", "percentiles": []float64{50}, "showHistogramBuckets": true}}})
	at := func(v0, v60 string) map[int64]string { return map[int64]string{otsT0: v0, otsT0 + 60: v60} }
	want("showHistogramBuckets", rs,
		[]string{"hist.m_pct_50.0", "hist.m_UNDERFLOW", "hist.m_0.0_10.0", "hist.m_10.0_20.0", "hist.m_20.0_40.0", "hist.m_OVERFLOW"},
		[]map[int64]string{at("15.0", "5.0"), at("6", "3"), at("6", "1"), at("4", "1"), at("10", "0"), at("8", "4")})
	// m= with show-histogram-buckets alone and 0all: one point stamped
	// with the query's end (OpenTSDB's HistogramDownsampler), all three
	// histograms summed: under 9, 7, 5, 10, over 12.
	qs := url.Values{"start": {fmt.Sprint(otsT0)}, "end": {fmt.Sprint(otsT0 + 120)},
		"m": {"sum:0all-sum:show-histogram-buckets:hist.m"}}.Encode()
	end := func(v string) map[int64]string { return map[int64]string{otsT0 + 120: v} }
	want("m= 0all", otsQueryGET(t, s, qs),
		[]string{"hist.m_UNDERFLOW", "hist.m_0.0_10.0", "hist.m_10.0_20.0", "hist.m_20.0_40.0", "hist.m_OVERFLOW"},
		[]map[int64]string{end("9"), end("7"), end("5"), end("10"), end("12")})
}

// TestOpenTSDBPercentilesLimits: percentiles are bounded as other queries
// are: the histograms read without a downsample and the percentile points
// written count against -query-max-output-points (413, counted in
// hourglass_query_limit_exceeded_total{limit="output_points"}).
func TestOpenTSDBPercentilesLimits(t *testing.T) {
	s := start(t, t.TempDir(), "-query-max-output-points", "2")
	body := `[{"metric":"hist.m","timestamp":` + fmt.Sprint(otsT0) + `,"tags":{"host":"a"},"buckets":{"0,10":1}},` +
		`{"metric":"hist.m","timestamp":` + fmt.Sprint(otsT0+60) + `,"tags":{"host":"a"},"buckets":{"0,10":1}},` +
		`{"metric":"hist.m","timestamp":` + fmt.Sprint(otsT0+90) + `,"tags":{"host":"a"},"buckets":{"0,10":1}}]`
	if code, resp := s.do("POST", "/api/histogram", "application/json", []byte(body)); code != 204 {
		t.Fatalf("/api/histogram: %d %s", code, resp)
	}
	q := func(pcts []float64, ds string) map[string]any {
		sub := map[string]any{"aggregator": "sum", "metric": "hist.m", "percentiles": pcts}
		if ds != "" {
			sub["downsample"] = ds
		}
		return map[string]any{"start": otsT0, "end": otsT0 + 120, "queries": []map[string]any{sub}}
	}
	// Within: one 2m bucket, two percentiles (the 5 of [0,10)).
	rs := otsQuery(t, s, "/api/query", q([]float64{50, 90}, "2m-sum"))
	if len(rs) != 2 {
		t.Fatalf("within the limit: %+v", rs)
	}
	otsCheckPoints(t, "p50", rs[0].points(t), otsPts{otsT0: 5})
	// Three histograms read raw, over 2; three percentile points, over 2.
	otsWantError(t, s, 413, "POST", "/api/query", q([]float64{50}, ""), "-query-max-output-points")
	otsWantError(t, s, 413, "POST", "/api/query", q([]float64{50, 90, 99}, "2m-sum"), "-query-max-output-points")
	code, metrics := s.do("GET", "/metrics", "", nil)
	if code != 200 || !strings.Contains(string(metrics), `hourglass_query_limit_exceeded_total{limit="output_points"} 2`) {
		t.Errorf("/metrics: %d, want output_points 2 in:\n%.2000s", code, metrics)
	}
}
