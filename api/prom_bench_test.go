package api

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"hourglass/internal/cputime"
)

// BenchmarkPromRemoteWrite is a remote-write request as Prometheus sends it
// by default (2,000 samples, one per series, ten labels each) through the
// handler: snappy, decoding, validation, the WAL (fsync before the reply)
// and the head. Each iteration writes the next 15 s of the same series.
func BenchmarkPromRemoteWrite(b *testing.B) {
	ps := newPromServer(b, nil)
	series := make([][]prompb.Label, 2000)
	for i := range series {
		series[i] = []prompb.Label{{Name: "__name__", Value: fmt.Sprintf("node_metric_%d", i%50)}, {Name: "cluster", Value: "prod"},
			{Name: "cpu", Value: fmt.Sprint(i % 16)}, {Name: "env", Value: "production"}, {Name: "instance", Value: fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250)},
			{Name: "job", Value: "node"}, {Name: "mode", Value: "user"}, {Name: "region", Value: "eu-west-1"}, {Name: "team", Value: "infra"}, {Name: "zone", Value: "eu-west-1a"}}
	}
	bodies := make([][]byte, 64)
	for k := range bodies {
		req := &prompb.WriteRequest{}
		for i, ls := range series {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Timestamp: promT0 + int64(k)*15000, Value: float64(i + k)}}})
		}
		bodies[k] = snappy.Encode(nil, promMarshal(b, req))
	}
	ps.benchWrites(b, bodies, 2000, "samples")
}

// BenchmarkPromRemoteWriteV2 is BenchmarkPromRemoteWrite's series and
// samples as Prometheus sends them over Remote-Write 2.0: each request's
// own symbol table, and each series' metadata (its type, as Prometheus
// sends from the scrape; a gauge).
func BenchmarkPromRemoteWriteV2(b *testing.B) {
	ps := newPromServer(b, nil)
	series := make([]labels.Labels, 2000)
	for i := range series {
		series[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%50), "cluster", "prod",
			"cpu", fmt.Sprint(i%16), "env", "production", "instance", fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250),
			"job", "node", "mode", "user", "region", "eu-west-1", "team", "infra", "zone", "eu-west-1a")
	}
	bodies := make([][]byte, 64)
	for k := range bodies {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for i, ls := range series {
			req.Timeseries = append(req.Timeseries, writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil),
				Samples:  []writev2.Sample{{Timestamp: promT0 + int64(k)*15000, Value: float64(i + k)}},
				Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE}})
		}
		req.Symbols = st.Symbols()
		bodies[k] = snappy.Encode(nil, promMarshal(b, req))
	}
	ps.benchWritesAs(b, promV2Headers, bodies, 2000, "samples")
}

// benchWrites sends bodies[0] (creating the series), then, timed, the
// bodies in turn as remote-write 1.0 requests of n samples each, and
// reports unit/s and the CPU and wall time per sample.
func (ps *promServer) benchWrites(b *testing.B, bodies [][]byte, n int, unit string) {
	ps.benchWritesAs(b, promV1Headers, bodies, n, unit)
}

// benchWritesAs is benchWrites with the requests' headers hdr.
func (ps *promServer) benchWritesAs(b *testing.B, hdr map[string]string, bodies [][]byte, n int, unit string) {
	if r := ps.do("POST", "/api/v1/write", hdr, bodies[0]); r.code != 204 { // creates the series
		b.Fatalf("%d %s", r.code, r.body)
	}
	b.ReportAllocs()
	cpu, _ := cputime.Process()
	k := 1
	for b.Loop() {
		r := ps.do("POST", "/api/v1/write", hdr, bodies[k%len(bodies)])
		if r.code != 204 {
			b.Fatalf("%d %s", r.code, r.body)
		}
		k++
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), unit+"/s")
	reportPerPoint(b, n*b.N, cpu)
}

// BenchmarkPromRemoteWriteParallel is the same with 16 senders at once, as
// Prometheus' shards send, each with its own 2,000 series (created before
// the timing starts): group commit shares the WAL's fsyncs.
func BenchmarkPromRemoteWriteParallel(b *testing.B) {
	ps := newPromServer(b, nil)
	const senders = 16
	bodies := make([][][]byte, senders)
	for sh := range bodies {
		for k := 0; k < 16; k++ {
			req := &prompb.WriteRequest{}
			for i := 0; i < 2000; i++ {
				req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{
					{Name: "__name__", Value: fmt.Sprintf("node_metric_%d", i%50)}, {Name: "instance", Value: fmt.Sprintf("10.%d.%d.%d:9100", sh, i/250, i%250)},
					{Name: "job", Value: "node"}, {Name: "cpu", Value: fmt.Sprint(i % 16)}, {Name: "region", Value: "eu-west-1"}},
					Samples: []prompb.Sample{{Timestamp: promT0 + int64(k)*15000, Value: float64(i + k)}}})
			}
			bodies[sh] = append(bodies[sh], snappy.Encode(nil, promMarshal(b, req)))
		}
		if r := ps.do("POST", "/api/v1/write", promV1Headers, bodies[sh][0]); r.code != 204 {
			b.Fatalf("%d %s", r.code, r.body)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(senders / 2) // 2 cores
	cpu, _ := cputime.Process()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mine := bodies[int(next.Add(1)-1)%senders]
		k := 1
		for pb.Next() {
			r := ps.do("POST", "/api/v1/write", promV1Headers, mine[k%len(mine)])
			if r.code != 204 {
				b.Errorf("%d %s", r.code, r.body)
				return
			}
			k++
		}
	})
	b.ReportMetric(float64(2000*b.N)/b.Elapsed().Seconds(), "samples/s")
	reportPerPoint(b, 2000*b.N, cpu)
}
