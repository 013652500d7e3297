package api

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"hourglass/api/promhttp"
	"hourglass/series"
)

// Series the remote-write decoder remembers (prom.Series.Ref) skip the
// name checks, never the series limits: a request mixing known series with
// new ones stores the known ones and holds the new ones to
// -max-new-series-per-request, and the 2.0 Written header counts what was
// stored.
func TestPromWriteKnownSeriesAndLimits(t *testing.T) {
	ps := newPromServer(t, nil)
	body := func(ts int64, names ...string) *writev2.Request {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for _, n := range names {
			req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
				LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "known_test", "s", n), nil),
				Samples:    []writev2.Sample{{Value: 1, Timestamp: ts}, {Value: 2, Timestamp: ts + 1}}})
		}
		req.Symbols = st.Symbols()
		return req
	}
	written := func(r promReply) string { return r.header.Get(promhttp.HeaderSamplesWritten) }
	for i := range 3 { // the decoder remembers "a" after the first
		if r := ps.writeV2(body(promT0+int64(i)*1000, "a")); r.code != 204 || written(r) != "2" {
			t.Fatalf("write %d: %d %s, written %s", i, r.code, r.body, written(r))
		}
	}
	ps.head.SetSeriesLimits(series.SeriesLimits{MaxNewSeriesPerRequest: 1}, nil)
	r := ps.writeV2(body(promT0+10_000, "a", "b", "c"))
	if r.code != 400 || written(r) != "4" {
		t.Fatalf("known a, new b and c over the limit of 1: %d %s, written %s", r.code, r.body, written(r))
	}
	r = ps.writeV2(body(promT0+20_000, "a", "b", "c"))
	if r.code != 204 || written(r) != "6" {
		t.Fatalf("known a and b, new c: %d %s, written %s", r.code, r.body, written(r))
	}
	r = ps.writeV2(body(promT0+30_000, "a", "b", "c", "d", "e"))
	if r.code != 400 || written(r) != "8" {
		t.Fatalf("known a, b, c; new d and e over the limit of 1: %d %s, written %s", r.code, r.body, written(r))
	}
}
