package api

import (
	"fmt"
	"math"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
)

// BenchmarkPromRemoteWriteHistograms is BenchmarkPromRemoteWrite with
// native histograms: 500 series of one integer histogram each (schema 3,
// 20 buckets in two spans, as a latency histogram), through the handler,
// the WAL (fsync before the reply) and the head. Each iteration writes the
// next 15 s of the same series. cpu-ns/point is process CPU per histogram.
func BenchmarkPromRemoteWriteHistograms(b *testing.B) {
	ps := newPromServer(b, nil)
	const n = 500
	bodies := make([][]byte, 64)
	for k := range bodies {
		req := &prompb.WriteRequest{}
		for i := range n {
			h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128,
				PositiveSpans: []histogram.Span{{Offset: -20, Length: 12}, {Offset: 3, Length: 8}}, PositiveBuckets: make([]int64, 20)}
			var prev int64
			var count uint64
			for j := range h.PositiveBuckets {
				c := int64(k*(j+1) + i%7)
				h.PositiveBuckets[j], prev = c-prev, c
				count += uint64(c)
			}
			h.Count, h.Sum = count, math.Sqrt(float64(count))
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
				Labels:     []prompb.Label{{Name: "__name__", Value: "http_request_duration_seconds"}, {Name: "handler", Value: fmt.Sprintf("/api/%d", i)}, {Name: "job", Value: "api"}},
				Histograms: []prompb.Histogram{prompb.FromIntHistogram(promT0+int64(k)*15000, h)},
			})
		}
		bodies[k] = snappy.Encode(nil, promMarshal(b, req))
	}
	ps.benchWrites(b, bodies, n, "histograms")
}
