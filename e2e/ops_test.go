package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// TestTSDBStatusThroughTheBinary writes series over /api/put and compares
// /api/v1/status/tsdb with them: a metric with an exploding id label
// (50 series), one with 3 hosts; limit=2 cuts every list to two.
func TestTSDBStatusThroughTheBinary(t *testing.T) {
	s := start(t, t.TempDir())
	var pts []point
	for i := range 50 {
		pts = append(pts, point{metric: "ops.requests", tags: map[string]string{"id": fmt.Sprintf("req-%02d", i), "host": "h0"}, ts: 1_700_000_000_000, value: int64(i)})
	}
	for i := range 3 {
		pts = append(pts, point{metric: "ops.cpu", tags: map[string]string{"host": fmt.Sprint("h", i)}, ts: 1_700_000_000_000, value: int64(i)})
	}
	if code, body := s.do("POST", "/api/put", "application/json", putBody(pts)); code != http.StatusNoContent {
		t.Fatalf("put: %d %s", code, body)
	}
	code, body := s.do("GET", "/api/v1/status/tsdb?limit=2", "", nil)
	if code != 200 {
		t.Fatalf("status/tsdb: %d %s", code, body)
	}
	type stat struct {
		Name  string `json:"name"`
		Value uint64 `json:"value"`
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			HeadStats struct {
				NumSeries     uint64 `json:"numSeries"`
				NumLabelPairs int    `json:"numLabelPairs"`
				MinTime       int64  `json:"minTime"`
				MaxTime       int64  `json:"maxTime"`
			} `json:"headStats"`
			SeriesCountByMetricName     []stat `json:"seriesCountByMetricName"`
			LabelValueCountByLabelName  []stat `json:"labelValueCountByLabelName"`
			MemoryInBytesByLabelName    []stat `json:"memoryInBytesByLabelName"`
			SeriesCountByLabelValuePair []stat `json:"seriesCountByLabelValuePair"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	d := r.Data
	// pairs: __name__ ×2, id ×50, host h0..h2
	if r.Status != "success" || d.HeadStats.NumSeries != 53 || d.HeadStats.NumLabelPairs != 55 ||
		d.HeadStats.MinTime != 1_700_000_000_000 || d.HeadStats.MaxTime != 1_700_000_000_000 {
		t.Errorf("headStats %+v", d.HeadStats)
	}
	check := func(what string, got, want []stat) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("seriesCountByMetricName", d.SeriesCountByMetricName, []stat{{"ops.requests", 50}, {"ops.cpu", 3}})
	check("labelValueCountByLabelName", d.LabelValueCountByLabelName, []stat{{"id", 50}, {"host", 3}})
	// id+req-NN is 8 bytes ×50; __name__ with ops.requests 20 ×50 and ops.cpu 15 ×3
	check("memoryInBytesByLabelName", d.MemoryInBytesByLabelName, []stat{{"__name__", 1045}, {"id", 400}})
	check("seriesCountByLabelValuePair", d.SeriesCountByLabelValuePair, []stat{{"host=h0", 51}, {"__name__=ops.requests", 50}})
}
