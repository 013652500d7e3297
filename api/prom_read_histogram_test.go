package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestPromRemoteReadHistograms: native histograms written over remote
// write come back over remote read, in both response types, as Prometheus'
// own decoders read them (prompb.Histogram, HISTOGRAM and FLOAT_HISTOGRAM
// chunks), with a series' float samples beside them.
func TestPromRemoteReadHistograms(t *testing.T) {
	ps := newPromServer(t, nil)
	var ints []prompb.Histogram
	var want []string
	for i := range 150 { // more than a chunk of 120
		h := &histogram.Histogram{Schema: 3, ZeroThreshold: 0.001, Count: uint64(3 + 2*i), ZeroCount: 1, Sum: float64(i) / 3,
			PositiveSpans: []histogram.Span{{Offset: -1, Length: 2}}, PositiveBuckets: []int64{int64(1 + i), 0}}
		if i >= 100 { // a new bucket appears: absolute counts 1+i, 1+i, i
			h.Count = uint64(3 + 3*i)
			h.PositiveSpans = []histogram.Span{{Offset: -1, Length: 2}, {Offset: 2, Length: 1}}
			h.PositiveBuckets = []int64{int64(1 + i), 0, -1}
		}
		ints = append(ints, prompb.FromIntHistogram(promT0+int64(i)*1000, h))
		want = append(want, fmt.Sprintf("%d %s", promT0+int64(i)*1000, h.String()))
	}
	fh := &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Count: 0, Sum: 0}
	r := ps.writeV1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "lat"}}, Histograms: ints},
		{Labels: []prompb.Label{{Name: "__name__", Value: "gauge_h"}}, Histograms: []prompb.Histogram{prompb.FromFloatHistogram(promT0, fh)}},
	}})
	if r.code != 204 {
		t.Fatalf("write: %d %s", r.code, r.body)
	}
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: promT0, EndTimestampMs: promT0 + 200000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "lat|gauge_h"}}}}}
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		rr.AcceptedResponseTypes = []prompb.ReadRequest_ResponseType{rt}
		r := ps.do("POST", "/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"},
			snappy.Encode(nil, promMarshal(t, rr)))
		if r.code != 200 {
			t.Fatalf("%v: %d %s", rt, r.code, r.body)
		}
		got := map[string][]string{}
		if rt == prompb.ReadRequest_SAMPLES {
			raw, _ := snappy.Decode(nil, r.body)
			var resp prompb.ReadResponse
			if err := resp.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
			for _, ts := range resp.Results[0].Timeseries {
				for _, h := range ts.Histograms {
					s := ""
					if h.IsFloatHistogram() {
						s = "float " + h.ToFloatHistogram().String()
					} else {
						s = h.ToIntHistogram().String()
					}
					got[ts.Labels[0].Value] = append(got[ts.Labels[0].Value], fmt.Sprintf("%d %s", h.Timestamp, s))
				}
			}
		} else {
			for _, cr := range promChunkedFrames(t, r.body) {
				for _, cs := range cr.ChunkedSeries {
					for _, c := range cs.Chunks {
						chk, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data)
						if err != nil {
							t.Fatal(err)
						}
						it := chk.Iterator(nil)
						for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
							if vt == chunkenc.ValFloatHistogram {
								ts, h := it.AtFloatHistogram(nil)
								got[cs.Labels[0].Value] = append(got[cs.Labels[0].Value], fmt.Sprintf("%d float %s", ts, h.String()))
								continue
							}
							ts, h := it.AtHistogram(nil)
							got[cs.Labels[0].Value] = append(got[cs.Labels[0].Value], fmt.Sprintf("%d %s", ts, h.String()))
						}
					}
				}
			}
		}
		if strings.Join(got["lat"], "\n") != strings.Join(want, "\n") {
			t.Errorf("%v: lat: %d histograms; first %q, want %q", rt, len(got["lat"]), got["lat"][:min(1, len(got["lat"]))], want[0])
		}
		if w := fmt.Sprintf("%d float %s", promT0, fh.String()); len(got["gauge_h"]) != 1 || got["gauge_h"][0] != w {
			t.Errorf("%v: gauge_h: %q, want %q", rt, got["gauge_h"], w)
		}
	}
}
