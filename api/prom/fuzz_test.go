package prom

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/golang/snappy"
	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/jsonutil"
)

// The decoders are held to Prometheus' generated ones: whatever this
// package accepts, gogo accepts too and reads the same labels, samples (bit
// for bit) and counts. The encoders round-trip through Prometheus' decoders.

func seedsV1(f *testing.F) {
	var samples []prompb.Sample
	for i, v := range specialValues {
		samples = append(samples, prompb.Sample{Timestamp: int64(i) - 3, Value: v})
	}
	reqs := []*prompb.WriteRequest{
		{Timeseries: []prompb.TimeSeries{{Labels: awkward, Samples: samples}}},
		{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "x"}, {Name: "job", Value: "y"}},
			Samples:    []prompb.Sample{{Timestamp: 1, Value: 1}},
			Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "t", Value: "1"}}, Value: 2, Timestamp: 3}},
			Histograms: []prompb.Histogram{prompb.FromFloatHistogram(4, &histogram.FloatHistogram{Count: 3, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []float64{1, 2}})}}},
			Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "up", Help: "h", Unit: "u"}}},
		{},
	}
	for _, r := range reqs {
		b, err := r.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(rawV1(rawSeries([][2]string{{"__name__", "a"}, {"", "x"}}, 3)))
}

func FuzzDecodeWriteV1(f *testing.F) {
	seedsV1(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, metas, err := collect(t, MessageV1, body)
		if err != nil {
			return
		}
		var ref prompb.WriteRequest
		if rerr := ref.Unmarshal(body); rerr != nil {
			t.Fatalf("accepted a body gogo rejects (%v)", rerr)
		}
		if len(got) != len(ref.Timeseries) || len(metas) != len(ref.Metadata) {
			t.Fatalf("%d series, %d metadata; gogo %d, %d", len(got), len(metas), len(ref.Timeseries), len(ref.Metadata))
		}
		for i, ts := range ref.Timeseries {
			g := got[i]
			if g.histograms != len(ts.Histograms) || g.exemplars != len(ts.Exemplars) {
				t.Fatalf("series %d: counts differ", i)
			}
			compareSamples(t, i, g.samples, func(yield func(int64, float64)) {
				for _, s := range ts.Samples {
					yield(s.Timestamp, s.Value)
				}
			})
			if len(ts.Labels) <= DefaultMaxLabels {
				want := make([]Label, len(ts.Labels))
				for j, l := range ts.Labels {
					want[j] = Label{l.Name, l.Value}
				}
				compareLabels(t, i, g.labels, want)
			} else if g.err == nil {
				t.Fatalf("series %d: %d labels accepted", i, len(ts.Labels))
			}
		}
		for i, m := range ref.Metadata {
			want := Metadata{m.MetricFamilyName, metricType(uint64(uint32(m.Type))), m.Help, m.Unit}
			if m.Type < 0 {
				want.Type = MetricUnknown
			}
			if metas[i] != want {
				t.Fatalf("metadata %d: %+v, want %+v", i, metas[i], want)
			}
		}
	})
}

func compareSamples(t *testing.T, i int, got []sampleBits, want func(func(int64, float64))) {
	t.Helper()
	j := 0
	want(func(ts int64, v float64) {
		if j >= len(got) || got[j].t != ts || got[j].v != math.Float64bits(v) {
			t.Fatalf("series %d sample %d differs", i, j)
		}
		j++
	})
	if j != len(got) {
		t.Fatalf("series %d: %d samples, gogo %d", i, len(got), j)
	}
}

func compareLabels(t *testing.T, i int, got, want []Label) {
	t.Helper()
	slices.SortStableFunc(want, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	// Equal names may sort in either order: compare as multisets.
	key := func(l Label) string { return l.Name + "\x00" + l.Value }
	g := make([]string, len(got))
	w := make([]string, len(want))
	for j := range got {
		g[j] = key(got[j])
	}
	for j := range want {
		w[j] = key(want[j])
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("series %d: labels %q, gogo %q", i, got, want)
	}
}

func FuzzDecodeWriteV2(f *testing.F) {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "a.b c", "x", "✓\n"), nil),
			Samples:  []writev2.Sample{{Value: 1, Timestamp: 2}, {Value: math.Float64frombits(value.StaleNaN), Timestamp: 3}, {Value: math.Inf(-1), Timestamp: 4, StartTimestamp: 1}},
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("help"), UnitRef: st.Symbolize("s")}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "h"), nil),
			Histograms: []writev2.Histogram{writev2.FromFloatHistogram(0, 5, &histogram.FloatHistogram{Count: 1})},
			Exemplars:  []writev2.Exemplar{{LabelsRefs: []uint32{1, 2}, Value: 1, Timestamp: 1}}},
		{LabelsRefs: []uint32{1}},
	}}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, _, err := collect(t, MessageV2, body)
		if err != nil {
			return
		}
		var ref writev2.Request
		if rerr := ref.Unmarshal(body); rerr != nil {
			t.Fatalf("accepted a body gogo rejects (%v)", rerr)
		}
		if len(got) != len(ref.Timeseries) {
			t.Fatalf("%d series, gogo %d", len(got), len(ref.Timeseries))
		}
		var b labels.ScratchBuilder
		for i, ts := range ref.Timeseries {
			g := got[i]
			if g.histograms != len(ts.Histograms) || g.exemplars != len(ts.Exemplars) {
				t.Fatalf("series %d: counts differ", i)
			}
			compareSamples(t, i, g.samples, func(yield func(int64, float64)) {
				for _, s := range ts.Samples {
					yield(s.Timestamp, s.Value)
				}
			})
			ls, lerr := ts.ToLabels(&b, ref.Symbols)
			md, merr := ts.ToMetadata(ref.Symbols)
			if g.err != nil {
				continue
			}
			if lerr != nil || merr != nil {
				t.Fatalf("series %d accepted, Prometheus says %v / %v", i, lerr, merr)
			}
			var want []Label
			ls.Range(func(l labels.Label) { want = append(want, Label{l.Name, l.Value}) })
			compareLabels(t, i, g.labels, want)
			if g.meta.Type.String() != string(md.Type) && !(g.meta.Type == MetricUnknown && md.Type == "unknown") {
				t.Fatalf("series %d: type %v, Prometheus %v", i, g.meta.Type, md.Type)
			}
			if g.meta.Help != md.Help || g.meta.Unit != md.Unit {
				t.Fatalf("series %d: metadata %+v, Prometheus %+v", i, g.meta, md)
			}
		}
	})
}

func FuzzDecodeReadRequest(f *testing.F) {
	req := &prompb.ReadRequest{
		Queries: []*prompb.Query{{StartTimestampMs: 1, EndTimestampMs: 2, Matchers: []*prompb.LabelMatcher{
			{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "up"}, {Type: prompb.LabelMatcher_NRE, Name: "a", Value: "b|c"}},
			Hints: &prompb.ReadHints{Func: "rate", Grouping: []string{"x"}}}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{1, 0},
	}
	b, _ := req.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := DecodeReadRequest(body)
		if err != nil {
			return
		}
		var ref prompb.ReadRequest
		if rerr := ref.Unmarshal(body); rerr != nil {
			t.Fatalf("accepted a body gogo rejects (%v)", rerr)
		}
		if len(got.Queries) != len(ref.Queries) {
			t.Fatalf("%d queries, gogo %d", len(got.Queries), len(ref.Queries))
		}
		if len(ref.AcceptedResponseTypes) <= 64 && len(got.Accepted) != len(ref.AcceptedResponseTypes) {
			t.Fatalf("%d response types, gogo %d", len(got.Accepted), len(ref.AcceptedResponseTypes))
		}
		for i, q := range ref.Queries {
			g := got.Queries[i]
			if g.StartMs != q.StartTimestampMs || g.EndMs != q.EndTimestampMs || len(g.Matchers) != len(q.Matchers) {
				t.Fatalf("query %d differs", i)
			}
			for j, m := range q.Matchers {
				if int(g.Matchers[j].Type) != int(m.Type) || g.Matchers[j].Name != m.Name || g.Matchers[j].Value != m.Value {
					t.Fatalf("query %d matcher %d: %s, gogo %v", i, j, g.Matchers[j], m)
				}
			}
		}
	})
}

// seriesFromBytes turns fuzz input into series: sorted timestamps, raw
// value bits (NaN payloads, ±Inf and -0 come up), awkward label values.
func seriesFromBytes(data []byte) []testSeries {
	var out []testSeries
	for len(data) > 0 && len(out) < 8 {
		n := int(data[0]) % 300
		data = data[1:]
		s := testSeries{lbls: labels.FromStrings("__name__", "m", "i", string(rune('a'+len(out))), "v", string(data[:min(len(data), 5)]))}
		t := int64(-1000)
		for i := 0; i < n && len(data) >= 9; i++ {
			t += int64(data[0])
			s.ts = append(s.ts, t)
			s.vs = append(s.vs, math.Float64frombits(binary.LittleEndian.Uint64(data[1:9])))
			data = data[9:]
		}
		out = append(out, s)
	}
	return out
}

func FuzzReadEncoders(f *testing.F) {
	seed := []byte{5}
	for _, v := range specialValues {
		seed = append(seed, 15)
		seed = binary.LittleEndian.AppendUint64(seed, math.Float64bits(v))
	}
	f.Add(seed)
	f.Add(bytes.Repeat([]byte{200, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 400))
	f.Fuzz(func(t *testing.T, data []byte) {
		series := seriesFromBytes(data)
		// SAMPLES: one query per series.
		var r SamplesResponse
		for _, s := range series {
			if err := r.AddSeries(s.lbls, s.iterator()); err != nil {
				t.Fatal(err)
			}
			r.EndQuery()
		}
		raw, err := snappy.Decode(nil, r.AppendSnappy(nil))
		if err != nil {
			t.Fatal(err)
		}
		var resp prompb.ReadResponse
		if err := resp.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != len(series) {
			t.Fatalf("%d results", len(resp.Results))
		}
		for i, s := range series {
			checkSeries(t, s, resp.Results[i].Timeseries[0].Labels, resp.Results[i].Timeseries[0].Samples)
		}
		// STREAMED_XOR_CHUNKS, small frames.
		var buf bytes.Buffer
		w := NewChunkedWriter(&buf, 512)
		for i, s := range series {
			if err := w.WriteSeries(int64(i), s.lbls, s.iterator()); err != nil {
				t.Fatal(err)
			}
		}
		rd := remote.NewChunkedReader(&buf, 1<<20, nil)
		got := map[int64][]prompb.Sample{}
		for {
			var cr prompb.ChunkedReadResponse
			err := rd.NextProto(&cr)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cr.ChunkedSeries[0].Chunks {
				chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
				if err != nil {
					t.Fatal(err)
				}
				it := chk.Iterator(nil)
				for it.Next() == chunkenc.ValFloat {
					ts, v := it.At()
					got[cr.QueryIndex] = append(got[cr.QueryIndex], prompb.Sample{Timestamp: ts, Value: v})
				}
			}
		}
		for i, s := range series {
			checkSeries(t, s, prompb.FromLabels(s.lbls, nil), got[int64(i)])
		}
	})
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("a<b>\n\xff\u2028", 1.5, int64(1500))
	f.Add("", 12.34, int64(1795886284000))  // whole hundredths (appendHundredths)
	f.Add("", -999999999999.99, int64(-10)) // at its bound
	f.Add("", 0.30000000000000004, int64(0))
	f.Fuzz(func(t *testing.T, s string, v float64, ts int64) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
		st := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
		jsonutil.MarshalFloat(v, st)
		if got := AppendFloat(nil, v); string(got) != string(st.Buffer()) {
			t.Fatalf("%v: %s, want %s", v, got, st.Buffer())
		}
		st.SetBuffer(nil)
		jsonutil.MarshalTimestamp(ts, st)
		if ts != math.MinInt64 {
			if got := AppendTimestamp(nil, ts); string(got) != string(st.Buffer()) {
				t.Fatalf("%d: %s, want %s", ts, got, st.Buffer())
			}
		}
		jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(st)
	})
}
