package api

import (
	"fmt"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"hourglass/series"
)

// BenchmarkPromRemoteWriteNewSeries is what a burst of new series costs
// through the remote-write handler: each iteration sends requests of 2,000
// samples (Prometheus' max_samples_per_send) that together create 100,000
// series never seen before (new instance and id values: UID assignment,
// head series, index entries), as a restart of many targets brings them.
func BenchmarkPromRemoteWriteNewSeries(b *testing.B) {
	const nSeries, perReq = 100_000, 2000
	ps := newPromServer(b, nil)
	b.ReportAllocs()
	round := 0
	for b.Loop() {
		b.StopTimer()
		bodies := make([][]byte, 0, nSeries/perReq)
		for r := 0; r < nSeries/perReq; r++ {
			req := &prompb.WriteRequest{}
			for i := 0; i < perReq; i++ {
				n := r*perReq + i
				req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{
					{Name: "__name__", Value: fmt.Sprintf("new_metric_%d", n%20)}, {Name: "id", Value: fmt.Sprintf("r%d-%d", round, n)},
					{Name: "instance", Value: fmt.Sprintf("10.%d.%d.%d:9100", round%250, n/250, n%250)}, {Name: "job", Value: "node"}},
					Samples: []prompb.Sample{{Timestamp: promT0, Value: float64(n)}}})
			}
			bodies = append(bodies, snappy.Encode(nil, promMarshal(b, req)))
		}
		b.StartTimer()
		for _, body := range bodies {
			if r := ps.do("POST", "/api/v1/write", promV1Headers, body); r.code != 204 {
				b.Fatalf("%d %s", r.code, r.body)
			}
		}
		round++
	}
	b.ReportMetric(float64(nSeries*b.N)/b.Elapsed().Seconds(), "series/s")
}

// BenchmarkPromRemoteWriteRefusedSeries is what a request over
// -max-new-series-per-request costs: 100,000 new series of which the limit
// (1,000) lets the first in; the rest are refused, each looked up in the
// index without any UID lookup.
func BenchmarkPromRemoteWriteRefusedSeries(b *testing.B) {
	const nSeries = 100_000
	ps := newPromServer(b, nil)
	ps.head.SetSeriesLimits(series.SeriesLimits{MaxNewSeriesPerRequest: 1000}, nil)
	b.ReportAllocs()
	round := 0
	for b.Loop() {
		b.StopTimer()
		req := &prompb.WriteRequest{}
		for n := 0; n < nSeries; n++ {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: "refused_metric"}, {Name: "id", Value: fmt.Sprintf("r%d-%d", round, n)}, {Name: "job", Value: "node"}},
				Samples: []prompb.Sample{{Timestamp: promT0, Value: float64(n)}}})
		}
		body := snappy.Encode(nil, promMarshal(b, req))
		b.StartTimer()
		if r := ps.do("POST", "/api/v1/write", promV1Headers, body); r.code != 400 {
			b.Fatalf("%d %s", r.code, r.body)
		}
		round++
	}
	b.ReportMetric(float64(nSeries*b.N)/b.Elapsed().Seconds(), "series/s")
}
