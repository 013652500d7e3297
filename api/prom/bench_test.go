package prom

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"hourglass/internal/cputime"
)

// A request as Prometheus sends it by default: 2,000 samples
// (max_samples_per_send), one per series, ten labels a series.
func benchSeries() []labels.Labels {
	out := make([]labels.Labels, 2000)
	for i := range out {
		out[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%50), "instance", fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250),
			"job", "node", "cpu", fmt.Sprint(i%16), "mode", "user", "region", "eu-west-1", "zone", "eu-west-1a",
			"cluster", "prod", "env", "production", "team", "infra")
	}
	return out
}

func benchV1(b *testing.B) []byte {
	req := &prompb.WriteRequest{}
	for i, ls := range benchSeries() {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil),
			Samples: []prompb.Sample{{Timestamp: 1767225600000 + int64(i), Value: float64(i) * 1.5}}})
	}
	body, err := req.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func benchV2(b *testing.B) []byte {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, ls := range benchSeries() {
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil),
			Samples: []writev2.Sample{{Timestamp: 1767225600000 + int64(i), Value: float64(i) * 1.5}}})
	}
	req.Symbols = st.Symbols()
	body, err := req.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func benchDecode(b *testing.B, msg Message, body []byte) {
	var d Decoder
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if err := d.Decode(msg, body, func(s *Series) error {
			for range s.Samples() {
				n++
			}
			return nil
		}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkDecodeV1(b *testing.B) { benchDecode(b, MessageV1, benchV1(b)) }
func BenchmarkDecodeV2(b *testing.B) { benchDecode(b, MessageV2, benchV2(b)) }

// A request as the load generator sends it (hourglass-loadtest write
// -workers 4 -batch 5000, 5,000 series): 1,250 series of 4 samples each,
// 10 s apart, six labels a series, values with two decimals; 2.0 with each
// series' metadata.
func benchLoadSeries() []labels.Labels {
	out := make([]labels.Labels, 1250)
	for i := range out {
		out[i] = labels.FromStrings("__name__", fmt.Sprintf("cpu_usage_%d", i%50), "dc", fmt.Sprintf("eu-west-%c", 'a'+i%3),
			"host", fmt.Sprintf("host-%06d", i/50), "rack", fmt.Sprintf("eu-west-a-r%02d", i%20), "region", "eu-west", "service", "api")
	}
	return out
}

func benchLoad(b *testing.B, msg Message) []byte {
	const t0 = 1767225600000
	var body []byte
	var err error
	if msg == MessageV1 {
		req := &prompb.WriteRequest{}
		for i, ls := range benchLoadSeries() {
			ts := prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil)}
			for k := 0; k < 4; k++ {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(k)*10000, Value: float64(i*7+k) / 100})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		body, err = req.Marshal()
	} else {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for i, ls := range benchLoadSeries() {
			// Each series with its metadata, as the load generator and
			// Prometheus send it (the type; a gauge).
			ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil), Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE}}
			for k := 0; k < 4; k++ {
				ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: t0 + int64(k)*10000, Value: float64(i*7+k) / 100})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		req.Symbols = st.Symbols()
		body, err = req.Marshal()
	}
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// benchDecodeCached decodes body again and again with a series cache, as
// the remote-write handler does: every series is known after the first.
// cpu-ns/sample is the process's CPU time: on a shared machine the
// wall-clock figures count the time spent waiting for a CPU.
func benchDecodeCached(b *testing.B, msg Message, body []byte) {
	d := Decoder{Cache: NewSeriesCache()}
	var sink benchSink
	if err := d.Decode(msg, body, sink.series, nil); err != nil {
		b.Fatal(err)
	}
	sink.n = 0
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cputime.Used()
	for b.Loop() {
		if err := d.Decode(msg, body, sink.series, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sink.n)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64((cputime.Used()-cpu).Nanoseconds())/float64(sink.n), "cpu-ns/sample")
}

type benchSink struct {
	n   int
	sum int64
}

func (k *benchSink) series(s *Series) error {
	if s.Err != nil {
		return s.Err
	}
	if s.Ref() == nil {
		s.SetRef(k)
	}
	for t := range s.Samples() {
		k.sum += t
		k.n++
	}
	return nil
}

func BenchmarkDecodeCached(b *testing.B) {
	b.Run("v1-prom", func(b *testing.B) { benchDecodeCached(b, MessageV1, benchV1(b)) })
	b.Run("v2-prom", func(b *testing.B) { benchDecodeCached(b, MessageV2, benchV2(b)) })
	b.Run("v1-load", func(b *testing.B) { benchDecodeCached(b, MessageV1, benchLoad(b, MessageV1)) })
	b.Run("v2-load", func(b *testing.B) { benchDecodeCached(b, MessageV2, benchLoad(b, MessageV2)) })
}

// The generated decoders, for comparison.
func BenchmarkGogoUnmarshalV1(b *testing.B) {
	body := benchV1(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req prompb.WriteRequest
		if err := req.Unmarshal(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGogoUnmarshalV2(b *testing.B) {
	body := benchV2(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req writev2.Request
		if err := req.Unmarshal(body); err != nil {
			b.Fatal(err)
		}
	}
}

// benchReadSeries: 100 series of 1,000 samples each, a gauge with two
// decimals every 15 s, their samples ready for Prometheus' list iterator.
func benchReadSeries() []benchSeriesT {
	out := make([]benchSeriesT, 100)
	for i := range out {
		s := testSeries{lbls: labels.FromStrings("__name__", "node_load1", "instance", fmt.Sprintf("10.0.0.%d:9100", i), "job", "node")}
		for j := 0; j < 1000; j++ {
			s.ts = append(s.ts, 1767225600000+int64(j)*15000)
			s.vs = append(s.vs, float64((j*37+i)%400)/100)
		}
		l := make(chunks.SampleSlice, len(s.ts))
		for j := range s.ts {
			l[j] = fsample{s.ts[j], s.vs[j]}
		}
		out[i] = benchSeriesT{s.lbls, l}
	}
	return out
}

type benchSeriesT struct {
	lbls    labels.Labels
	samples chunks.SampleSlice
}

func (s benchSeriesT) iterator() chunkenc.Iterator { return storage.NewListSeriesIterator(s.samples) }

func BenchmarkSamplesResponse(b *testing.B) {
	series := benchReadSeries()
	var r SamplesResponse
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		for _, s := range series {
			if err := r.AddSeries(s.lbls, s.iterator()); err != nil {
				b.Fatal(err)
			}
		}
		r.EndQuery()
		out = r.AppendSnappy(out[:0])
	}
	b.ReportMetric(float64(len(out))/100000, "bytes/sample")
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkChunkedWriter(b *testing.B) {
	series := benchReadSeries()
	cw := &countingWriter{}
	w := NewChunkedWriter(cw, 0)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range series {
			if err := w.WriteSeries(0, s.lbls, s.iterator()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cw.n)/float64(100000*b.N), "bytes/sample")
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "samples/s")
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)
