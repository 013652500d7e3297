package prom

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// decoded is a series as a test keeps it: copies, not views of the body.
type decoded struct {
	labels     []Label
	metric     string
	samples    []sampleBits
	histograms int
	exemplars  int
	meta       Metadata
	err        error
}

type sampleBits struct {
	t int64
	v uint64
}

func collect(t testing.TB, msg Message, body []byte) ([]decoded, []Metadata, error) {
	t.Helper()
	return collectWith(t, &Decoder{}, msg, body)
}

// collectWith is collect with the decoder d, which may remember series.
func collectWith(t testing.TB, d *Decoder, msg Message, body []byte) ([]decoded, []Metadata, error) {
	t.Helper()
	var out []decoded
	var metas []Metadata
	err := d.Decode(msg, body, func(s *Series) error {
		ds := decoded{metric: strings.Clone(s.Metric), histograms: s.Histograms, exemplars: s.Exemplars, err: s.Err}
		for _, l := range s.Labels {
			ds.labels = append(ds.labels, Label{strings.Clone(l.Name), strings.Clone(l.Value)})
		}
		for ts, v := range s.Samples() {
			ds.samples = append(ds.samples, sampleBits{ts, math.Float64bits(v)})
		}
		if len(ds.samples) != s.NumSamples {
			t.Errorf("series %d: NumSamples %d, iterated %d", s.Index, s.NumSamples, len(ds.samples))
		}
		ds.meta = Metadata{strings.Clone(s.Metadata.Metric), s.Metadata.Type, strings.Clone(s.Metadata.Help), strings.Clone(s.Metadata.Unit)}
		out = append(out, ds)
		return nil
	}, func(m *Metadata) error {
		metas = append(metas, Metadata{strings.Clone(m.Metric), m.Type, strings.Clone(m.Help), strings.Clone(m.Unit)})
		return nil
	})
	return out, metas, err
}

func TestParseWriteContentType(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want Message
		ok   bool
	}{
		{"", MessageV1, true},
		{"application/x-protobuf", MessageV1, true},
		{"application/x-protobuf;proto=prometheus.WriteRequest", MessageV1, true},
		{"application/x-protobuf; proto=io.prometheus.write.v2.Request", MessageV2, true},
		{"Application/X-Protobuf;proto=io.prometheus.write.v2.Request", MessageV2, true},
		{"application/x-protobuf;charset=utf-8", MessageV1, true},
		{"application/x-protobuf;proto=io.prometheus.write.v3.Request", 0, false},
		{"application/x-protobuf;proto", 0, false},
		{"application/json", 0, false},
		{"text/plain", 0, false},
	} {
		t.Run(tc.ct, func(t *testing.T) {
			got, err := ParseWriteContentType(tc.ct)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("got %v, %v; want %v, ok=%v", got, err, tc.want, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrUnsupportedContentType) {
				t.Fatalf("error %v is not ErrUnsupportedContentType", err)
			}
		})
	}
}

// awkward are label names and values a receiver must take: any order,
// dots, spaces, newlines, UTF-8.
var awkward = []prompb.Label{
	{Name: "zone", Value: "eu west\n1"},
	{Name: "__name__", Value: "sys.cpu.user"},
	{Name: "host.name", Value: "web-01.example.com"},
	{Name: "Ünïcødé ✓", Value: "日本語 ✓"},
	{Name: "a", Value: ""}, // an empty value: the label is absent
}

var specialValues = []float64{0, 1.5, -2.25, math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(value.StaleNaN), math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64}

func TestDecodeV1(t *testing.T) {
	var samples []prompb.Sample
	for i, v := range specialValues {
		samples = append(samples, prompb.Sample{Timestamp: 1767225600000 + int64(i)*15000, Value: v})
	}
	req := &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			{Labels: awkward, Samples: samples},
			{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "node"}},
				Samples:    []prompb.Sample{{Timestamp: 1, Value: 1}},
				Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 1, Timestamp: 1}},
				Histograms: []prompb.Histogram{prompb.FromIntHistogram(1, &histogram.Histogram{Count: 1, Sum: 1, ZeroCount: 1})}},
		},
		Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "http_requests_total", Help: "Requests.", Unit: "requests"}},
	}
	body, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, metas, err := collect(t, MessageV1, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d series, want 2", len(got))
	}
	s := got[0]
	if s.err != nil {
		t.Fatalf("valid series rejected: %v", s.err)
	}
	if s.metric != "sys.cpu.user" {
		t.Errorf("metric %q", s.metric)
	}
	wantLabels := []Label{{"__name__", "sys.cpu.user"}, {"a", ""}, {"host.name", "web-01.example.com"}, {"zone", "eu west\n1"}, {"Ünïcødé ✓", "日本語 ✓"}}
	if !equalLabels(s.labels, wantLabels) {
		t.Errorf("labels %q, want %q (sorted by name)", s.labels, wantLabels)
	}
	if len(s.samples) != len(samples) {
		t.Fatalf("%d samples, want %d", len(s.samples), len(samples))
	}
	for i, p := range samples {
		want := math.Float64bits(p.Value)
		if p.Value == 0 {
			want = 0 // gogo does not write a zero double, -0 included: it arrives as +0
		}
		if s.samples[i].t != p.Timestamp || s.samples[i].v != want {
			t.Errorf("sample %d: %d %#x, want %d %#x", i, s.samples[i].t, s.samples[i].v, p.Timestamp, want)
		}
	}
	if got[1].histograms != 1 || got[1].exemplars != 1 || len(got[1].samples) != 1 {
		t.Errorf("second series: %d histograms, %d exemplars, %d samples; want 1, 1, 1", got[1].histograms, got[1].exemplars, len(got[1].samples))
	}
	if len(metas) != 1 || metas[0] != (Metadata{"http_requests_total", MetricCounter, "Requests.", "requests"}) {
		t.Errorf("metadata %+v", metas)
	}
}

func equalLabels(a, b []Label) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDecodeV2(t *testing.T) {
	st := writev2.NewSymbolTable()
	lb := labels.New(labels.Label{Name: "__name__", Value: "http_requests_total"}, labels.Label{Name: "method", Value: "GET /a b"}, labels.Label{Name: "ünï", Value: "✓\n"})
	var samples []writev2.Sample
	for i, v := range specialValues {
		samples = append(samples, writev2.Sample{Timestamp: int64(i) * 1000, Value: v, StartTimestamp: 5})
	}
	req := &writev2.Request{
		Timeseries: []writev2.TimeSeries{
			{
				LabelsRefs: st.SymbolizeLabels(lb, nil),
				Samples:    samples,
				Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("Requests served."), UnitRef: st.Symbolize("requests")},
			},
			{
				LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "latency"), nil),
				Histograms: []writev2.Histogram{writev2.FromFloatHistogram(0, 10, &histogram.FloatHistogram{Count: 2, Sum: 3})},
				Exemplars:  []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "x"), nil), Value: 1, Timestamp: 10}},
			},
		},
	}
	req.Symbols = st.Symbols()
	body, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := collect(t, MessageV2, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d series", len(got))
	}
	s := got[0]
	if s.err != nil {
		t.Fatal(s.err)
	}
	want := []Label{{"__name__", "http_requests_total"}, {"method", "GET /a b"}, {"ünï", "✓\n"}}
	if !equalLabels(s.labels, want) {
		t.Errorf("labels %q, want %q", s.labels, want)
	}
	if s.meta != (Metadata{"http_requests_total", MetricCounter, "Requests served.", "requests"}) {
		t.Errorf("metadata %+v", s.meta)
	}
	for i, p := range samples {
		w := math.Float64bits(p.Value)
		if p.Value == 0 {
			w = 0
		}
		if s.samples[i] != (sampleBits{p.Timestamp, w}) {
			t.Errorf("sample %d: %+v, want %d %#x", i, s.samples[i], p.Timestamp, w)
		}
	}
	if got[1].err != nil || got[1].histograms != 1 || got[1].exemplars != 1 || len(got[1].samples) != 0 {
		t.Errorf("histogram series: %+v", got[1])
	}
}

// rawV1 builds a WriteRequest by hand, so tests can send what gogo would not.
func rawV1(series ...[]byte) []byte {
	var b []byte
	for _, s := range series {
		b = appendBytesField(b, 1, s)
	}
	return b
}

func rawLabel(name, value string) []byte {
	return appendStringField(appendStringField(nil, 1, name), 2, value)
}

func rawSeries(lbls [][2]string, nSamples int) []byte {
	var b []byte
	for _, l := range lbls {
		b = appendBytesField(b, 1, rawLabel(l[0], l[1]))
	}
	for i := 0; i < nSamples; i++ {
		s := appendFixed64Field(nil, 1, math.Float64bits(float64(i+1)))
		s = appendVarintField(s, 2, uint64(1000*(i+1)))
		b = appendBytesField(b, 2, s)
	}
	return b
}

func TestDecodeRejectsSeries(t *testing.T) {
	good := rawSeries([][2]string{{"__name__", "ok"}}, 1)
	for _, tc := range []struct {
		name   string
		series []byte
		reason string
	}{
		{"no name", rawSeries([][2]string{{"job", "x"}}, 1), "no __name__"},
		{"empty name value", rawSeries([][2]string{{"__name__", ""}, {"job", "x"}}, 1), "no __name__"},
		{"empty label name", rawSeries([][2]string{{"__name__", "m"}, {"", "x"}}, 1), "empty label name"},
		{"duplicate label", rawSeries([][2]string{{"__name__", "m"}, {"job", "a"}, {"job", "b"}}, 1), `duplicate label name "job"`},
		{"duplicate name", rawSeries([][2]string{{"__name__", "m"}, {"__name__", "n"}}, 1), `duplicate label name "__name__"`},
		{"bad utf8 name", rawSeries([][2]string{{"__name__", "m"}, {"a\xff", "x"}}, 1), "not valid UTF-8"},
		{"bad utf8 value", rawSeries([][2]string{{"__name__", "m\xfe"}}, 1), "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := collect(t, MessageV1, rawV1(good, tc.series, good))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || got[0].err != nil || got[2].err != nil {
				t.Fatalf("the good neighbours must pass: %+v", got)
			}
			var se *SeriesError
			if !errors.As(got[1].err, &se) || !strings.Contains(se.Reason, tc.reason) || se.Index != 1 {
				t.Fatalf("error %v, want a SeriesError #1 saying %q", got[1].err, tc.reason)
			}
			if len(got[1].samples) != 1 {
				t.Errorf("an invalid series still counts its samples: %d", len(got[1].samples))
			}
		})
	}
	t.Run("too many labels", func(t *testing.T) {
		var lbls [][2]string
		lbls = append(lbls, [2]string{"__name__", "m"})
		for i := 0; i < 20; i++ {
			lbls = append(lbls, [2]string{string(rune('a' + i)), "v"})
		}
		var d Decoder
		d.MaxLabels = 10
		var err error
		derr := d.Decode(MessageV1, rawV1(rawSeries(lbls, 1)), func(s *Series) error { err = s.Err; return nil }, nil)
		if derr != nil || err == nil || !strings.Contains(err.Error(), "21 labels, more than the limit of 10") {
			t.Fatalf("got %v / %v", derr, err)
		}
	})
}

func TestDecodeV2RejectsSeries(t *testing.T) {
	sym := func(ss ...string) []byte {
		var b []byte
		for _, s := range ss {
			b = appendStringField(b, 4, s)
		}
		return b
	}
	series := func(refs []uint32, samples int, meta []byte) []byte {
		var packed []byte
		for _, r := range refs {
			packed = appendUvarint(packed, uint64(r))
		}
		b := appendBytesField(nil, 1, packed)
		for i := 0; i < samples; i++ {
			b = appendBytesField(b, 2, appendVarintField(appendFixed64Field(nil, 1, math.Float64bits(1)), 2, 5))
		}
		if meta != nil {
			b = appendBytesField(b, 5, meta)
		}
		return appendBytesField(nil, 5, b)
	}
	symbols := sym("", "__name__", "up", "job")
	for _, tc := range []struct {
		name   string
		body   []byte
		reason string
	}{
		{"odd refs", series([]uint32{1, 2, 3}, 1, nil), "odd length"},
		{"ref out of range", series([]uint32{1, 2, 3, 9}, 1, nil), "outside of the symbol table"},
		{"no samples", series([]uint32{1, 2}, 0, nil), "no samples or histograms"},
		{"help ref out of range", series([]uint32{1, 2}, 1, appendVarintField(nil, 3, 40)), "help_ref 40"},
		{"no name", series([]uint32{3, 2}, 1, nil), "no __name__"},
		{"empty name", series([]uint32{1, 0}, 1, nil), "no __name__"},
		{"empty label name", series([]uint32{1, 2, 0, 2}, 1, nil), "empty label name"},
		{"duplicate", series([]uint32{1, 2, 3, 2, 3, 1}, 1, nil), `duplicate label name "job"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := append(append([]byte{}, symbols...), tc.body...)
			got, _, err := collect(t, MessageV2, body)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].err == nil || !strings.Contains(got[0].err.Error(), tc.reason) {
				t.Fatalf("got %+v, want an error saying %q", got, tc.reason)
			}
		})
	}
	t.Run("unpacked refs and symbols after series", func(t *testing.T) {
		// Fields may come in any order and repeated scalars unpacked.
		b := appendVarintField(nil, 1, 1)
		b = appendVarintField(b, 1, 2)
		b = appendBytesField(b, 2, appendVarintField(appendFixed64Field(nil, 1, math.Float64bits(7)), 2, 9))
		body := append(appendBytesField(nil, 5, b), symbols...)
		got, _, err := collect(t, MessageV2, body)
		if err != nil || len(got) != 1 || got[0].err != nil || got[0].metric != "up" || got[0].samples[0] != (sampleBits{9, math.Float64bits(7)}) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func TestDecodeMalformed(t *testing.T) {
	good := rawV1(rawSeries([][2]string{{"__name__", "ok"}}, 2))
	for _, tc := range []struct {
		name string
		msg  Message
		body []byte
	}{
		{"truncated", MessageV1, good[:len(good)-3]},
		{"wrong wire type for timeseries", MessageV1, appendVarintField(nil, 1, 5)},
		{"wrong wire type for a sample value", MessageV1, rawV1(appendBytesField(nil, 2, appendVarintField(nil, 1, 3)))},
		{"length past the end", MessageV1, []byte{0x0a, 0x7f, 0x00}},
		{"varint too long", MessageV1, []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"field number zero", MessageV1, []byte{0x02, 0x00}},
		{"group", MessageV1, []byte{0x0b, 0x0c}},
		{"good v1 + garbage", MessageV1, append(append([]byte{}, good...), 0xff)},
		{"v2 symbol as varint", MessageV2, appendVarintField(nil, 4, 1)},
		{"v2 ref over 32 bits", MessageV2, appendBytesField(nil, 5, appendVarintField(nil, 1, 1<<33))},
		{"v2 packed doubles of 7 bytes", MessageV2, appendBytesField(nil, 5, appendBytesField(nil, 3, appendBytesField(nil, 10, make([]byte, 7))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var d Decoder
			err := d.Decode(tc.msg, tc.body, func(*Series) error { calls++; return nil }, nil)
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("error %v, want a MalformedError", err)
			}
			if calls != 0 {
				t.Fatalf("%d series handed out of a malformed body", calls)
			}
		})
	}
}

func TestDecodeEmpty(t *testing.T) {
	got, _, err := collect(t, MessageV1, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("%v %v", got, err)
	}
	got, _, err = collect(t, MessageV2, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("%v %v", got, err)
	}
}

func TestCallbackErrorStops(t *testing.T) {
	body := rawV1(rawSeries([][2]string{{"__name__", "a"}}, 1), rawSeries([][2]string{{"__name__", "b"}}, 1))
	stop := errors.New("stop")
	n := 0
	var d Decoder
	err := d.Decode(MessageV1, body, func(*Series) error { n++; return stop }, nil)
	if err != stop || n != 1 {
		t.Fatalf("err %v after %d calls", err, n)
	}
}
