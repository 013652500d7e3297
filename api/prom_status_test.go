package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"testing"

	"hourglass/api/promhttp"
	"hourglass/chunk"
	"hourglass/series"
)

// TestTSDBStatus compares /api/v1/status/tsdb with the series written:
// 5 series of cpu (host h0..h4, dc a/b), 2 of mem (host h0, h1, dc a).
func TestTSDBStatus(t *testing.T) {
	ps := newPromServer(t, nil)
	var ss []series.Sample
	for i := range 5 {
		dc := []string{"a", "b"}[i%2]
		ss = append(ss, series.Sample{Labels: series.MakeLabels("cpu", []series.Tag{{Key: "host", Value: fmt.Sprint("h", i)}, {Key: "dc", Value: dc}}), T: 1000 + int64(i), V: chunk.Int(1)})
	}
	for i := range 2 {
		ss = append(ss, series.Sample{Labels: series.MakeLabels("mem", []series.Tag{{Key: "host", Value: fmt.Sprint("h", i)}, {Key: "dc", Value: "a"}}), T: 2000, V: chunk.Int(1)})
	}
	if err := ps.head.Append(context.Background(), ss, make([]error, len(ss))); err != nil {
		t.Fatal(err)
	}
	code, r := ps.api("GET", "/api/v1/status/tsdb", url.Values{"limit": {"3"}})
	if code != 200 {
		t.Fatalf("%d %+v", code, r)
	}
	var got promhttp.TSDBStatus
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatal(err)
	}
	var want promhttp.TSDBStatus
	want.HeadStats.NumSeries, want.HeadStats.NumLabelPairs = 7, 2+5+2 // __name__ ×2, host ×5, dc ×2
	want.HeadStats.ChunkCount, want.HeadStats.MinTime, want.HeadStats.MaxTime = 7, 1000, 2000
	want.SeriesCountByMetricName = []promhttp.TSDBStat{{Name: "cpu", Value: 5}, {Name: "mem", Value: 2}}
	want.LabelValueCountByLabelName = []promhttp.TSDBStat{{Name: "host", Value: 5}, {Name: "__name__", Value: 2}, {Name: "dc", Value: 2}}
	// bytes of name and value over the series: host+hN is 6 bytes ×7, dc+a/b 3 ×7, __name__ 11 ×5 + 11 ×2
	want.MemoryInBytesByLabelName = []promhttp.TSDBStat{{Name: "__name__", Value: 77}, {Name: "host", Value: 42}, {Name: "dc", Value: 21}}
	want.SeriesCountByLabelValuePair = []promhttp.TSDBStat{{Name: "__name__=cpu", Value: 5}, {Name: "dc=a", Value: 5}, {Name: "__name__=mem", Value: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"0", "x", "10001"} {
		if code, r := ps.api("GET", "/api/v1/status/tsdb", url.Values{"limit": {bad}}); code != 400 || r.ErrorType != "bad_data" {
			t.Errorf("limit=%s: %d %+v", bad, code, r)
		}
	}
}
