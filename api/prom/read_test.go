package prom

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

func TestDecodeReadRequest(t *testing.T) {
	req := &prompb.ReadRequest{
		Queries: []*prompb.Query{
			{
				StartTimestampMs: 1000, EndTimestampMs: 2000,
				Matchers: []*prompb.LabelMatcher{
					{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "up"},
					{Type: prompb.LabelMatcher_NEQ, Name: "job", Value: "x"},
					{Type: prompb.LabelMatcher_RE, Name: "instance", Value: "a.*"},
					{Type: prompb.LabelMatcher_NRE, Name: "zone", Value: "eu|us"},
				},
				Hints: &prompb.ReadHints{StepMs: 15000, Func: "rate", StartMs: 900, EndMs: 2000, Grouping: []string{"job"}, By: true, RangeMs: 300000},
			},
			{StartTimestampMs: -5, EndTimestampMs: 7, Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "a", Value: "b"}}},
		},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES},
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeReadRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Queries) != 2 || len(got.Accepted) != 2 || got.Accepted[0] != ResponseStreamedXORChunks || got.Accepted[1] != ResponseSamples {
		t.Fatalf("got %+v", got)
	}
	q := got.Queries[0]
	if q.StartMs != 1000 || q.EndMs != 2000 || len(q.Matchers) != 4 {
		t.Fatalf("query %+v", q)
	}
	wantM := []string{`__name__="up"`, `job!="x"`, `instance=~"a.*"`, `zone!~"eu|us"`}
	for i, m := range q.Matchers {
		if m.String() != wantM[i] {
			t.Errorf("matcher %d: %s, want %s", i, m, wantM[i])
		}
	}
	h := q.Hints
	if h == nil || h.StepMs != 15000 || h.Func != "rate" || h.StartMs != 900 || h.EndMs != 2000 || len(h.Grouping) != 1 || !h.By || h.RangeMs != 300000 {
		t.Errorf("hints %+v", h)
	}
	if q2 := got.Queries[1]; q2.StartMs != -5 || q2.EndMs != 7 || q2.Hints != nil {
		t.Errorf("second query %+v", q2)
	}
}

func TestDecodeReadRequestRejects(t *testing.T) {
	marshal := func(r *prompb.ReadRequest) []byte {
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	manyQueries := &prompb.ReadRequest{}
	for i := 0; i <= MaxReadQueries; i++ {
		manyQueries.Queries = append(manyQueries.Queries, &prompb.Query{})
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"bad regex", marshal(&prompb.ReadRequest{Queries: []*prompb.Query{{Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "a", Value: "("}}}}}), "invalid matcher"},
		{"bad matcher type", marshal(&prompb.ReadRequest{Queries: []*prompb.Query{{Matchers: []*prompb.LabelMatcher{{Type: 7, Name: "a", Value: "b"}}}}}), "invalid matcher type 7"},
		{"too many queries", marshal(manyQueries), "more than 256 queries"},
		{"malformed", []byte{0x0a, 0x05, 0x01}, "malformed prometheus.ReadRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeReadRequest(tc.body)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNegotiateResponseType(t *testing.T) {
	for _, tc := range []struct {
		in   []ResponseType
		want ResponseType
		ok   bool
	}{
		{nil, ResponseSamples, true},
		{[]ResponseType{ResponseStreamedXORChunks, ResponseSamples}, ResponseStreamedXORChunks, true},
		{[]ResponseType{ResponseSamples, ResponseStreamedXORChunks}, ResponseSamples, true},
		{[]ResponseType{7, ResponseSamples}, ResponseSamples, true},
		{[]ResponseType{7, 9}, 0, false},
	} {
		got, err := NegotiateResponseType(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%v: got %v, %v", tc.in, got, err)
		}
		var re *RequestError
		if err != nil && !errors.As(err, &re) {
			t.Errorf("%v: error %T is not a RequestError", tc.in, err)
		}
	}
}

// testSeries is a series the read encoders are fed from.
type testSeries struct {
	lbls labels.Labels
	ts   []int64
	vs   []float64
}

func (s testSeries) iterator() chunkenc.Iterator {
	l := make(chunks.SampleSlice, len(s.ts))
	for i := range s.ts {
		l[i] = fsample{s.ts[i], s.vs[i]}
	}
	return storage.NewListSeriesIterator(l)
}

// fsample is a float sample for Prometheus' list iterator.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

func makeSeries(name string, n int, start int64) testSeries {
	s := testSeries{lbls: labels.FromStrings("__name__", name, "host", "a b\n", "ünï", "✓")}
	for i := 0; i < n; i++ {
		s.ts = append(s.ts, start+int64(i)*15000)
		s.vs = append(s.vs, specialValues[i%len(specialValues)]+float64(i%3))
	}
	return s
}

func TestSamplesResponse(t *testing.T) {
	queries := [][]testSeries{
		{makeSeries("a", 10, 0), makeSeries("b", 1, -3000)},
		{},
		{makeSeries("c", 0, 0), makeSeries("d", 300, 1767225600000)},
	}
	var r SamplesResponse
	for _, q := range queries {
		for _, s := range q {
			if err := r.AddSeries(s.lbls, s.iterator()); err != nil {
				t.Fatal(err)
			}
		}
		r.EndQuery()
	}
	body := r.AppendSnappy([]byte("prefix"))
	if !bytes.HasPrefix(body, []byte("prefix")) {
		t.Fatal("AppendSnappy lost dst")
	}
	raw, err := snappy.Decode(nil, body[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	var resp prompb.ReadResponse
	if err := resp.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != len(queries) {
		t.Fatalf("%d results, want %d", len(resp.Results), len(queries))
	}
	for qi, q := range queries {
		got := resp.Results[qi].Timeseries
		if len(got) != len(q) {
			t.Fatalf("query %d: %d series, want %d", qi, len(got), len(q))
		}
		for si, s := range q {
			checkSeries(t, s, got[si].Labels, got[si].Samples)
		}
	}
}

func checkSeries(t *testing.T, want testSeries, lbls []prompb.Label, samples []prompb.Sample) {
	t.Helper()
	var b labels.ScratchBuilder
	for _, l := range lbls {
		b.Add(l.Name, l.Value)
	}
	if got := b.Labels(); !labels.Equal(got, want.lbls) {
		t.Errorf("labels %s, want %s", got, want.lbls)
	}
	if len(samples) != len(want.ts) {
		t.Fatalf("%s: %d samples, want %d", want.lbls, len(samples), len(want.ts))
	}
	for i, s := range samples {
		if s.Timestamp != want.ts[i] || math.Float64bits(s.Value) != math.Float64bits(want.vs[i]) {
			t.Errorf("%s sample %d: %d %v, want %d %v", want.lbls, i, s.Timestamp, s.Value, want.ts[i], want.vs[i])
		}
	}
}

func TestChunkedWriter(t *testing.T) {
	series := []testSeries{makeSeries("a", 1000, 1767225600000), makeSeries("empty", 0, 0), makeSeries("b", 1, 5), makeSeries("c", 121, -120000)}
	var buf bytes.Buffer
	const frame = 2048
	w := NewChunkedWriter(&buf, frame)
	for i, s := range series {
		if err := w.WriteSeries(int64(i%2), s.lbls, s.iterator()); err != nil {
			t.Fatal(err)
		}
	}
	// Prometheus' own reader checks the framing and the CRCs.
	rd := remote.NewChunkedReader(&buf, 1<<20, nil)
	type got struct {
		lbls    []prompb.Label
		samples []prompb.Sample
		query   int64
	}
	var all []got
	frames := 0
	for {
		var resp prompb.ChunkedReadResponse
		err := rd.NextProto(&resp)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames++
		if len(resp.ChunkedSeries) != 1 {
			t.Fatalf("frame with %d series, want 1", len(resp.ChunkedSeries))
		}
		if sz := resp.Size(); sz > frame+4096 {
			t.Errorf("frame of %d bytes, bound %d (plus a chunk)", sz, frame)
		}
		cs := resp.ChunkedSeries[0]
		var samples []prompb.Sample
		for _, c := range cs.Chunks {
			if c.Type != prompb.Chunk_XOR {
				t.Fatalf("chunk type %v", c.Type)
			}
			chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
			if err != nil {
				t.Fatal(err)
			}
			if chk.NumSamples() > SamplesPerChunk {
				t.Errorf("chunk of %d samples", chk.NumSamples())
			}
			it := chk.Iterator(nil)
			first := true
			var last int64
			for it.Next() == chunkenc.ValFloat {
				ts, v := it.At()
				if first && ts != c.MinTimeMs {
					t.Errorf("chunk min time %d, first sample %d", c.MinTimeMs, ts)
				}
				first = false
				last = ts
				samples = append(samples, prompb.Sample{Timestamp: ts, Value: v})
			}
			if last != c.MaxTimeMs {
				t.Errorf("chunk max time %d, last sample %d", c.MaxTimeMs, last)
			}
		}
		if n := len(all); n > 0 && labels.Equal(toLabels(all[n-1].lbls), toLabels(cs.Labels)) {
			all[n-1].samples = append(all[n-1].samples, samples...)
			continue
		}
		all = append(all, got{cs.Labels, samples, resp.QueryIndex})
	}
	if frames < 4 {
		t.Errorf("%d frames: a 1000-sample series should span several %d-byte frames", frames, frame)
	}
	var want []testSeries
	var wantQ []int64
	for i, s := range series {
		if len(s.ts) > 0 {
			want = append(want, s)
			wantQ = append(wantQ, int64(i%2))
		}
	}
	if len(all) != len(want) {
		t.Fatalf("%d series, want %d", len(all), len(want))
	}
	for i := range want {
		checkSeries(t, want[i], all[i].lbls, all[i].samples)
		if all[i].query != wantQ[i] {
			t.Errorf("series %d: query index %d, want %d", i, all[i].query, wantQ[i])
		}
	}
}

func toLabels(ls []prompb.Label) labels.Labels {
	var b labels.ScratchBuilder
	for _, l := range ls {
		b.Add(l.Name, l.Value)
	}
	return b.Labels()
}
