package prom

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// gotHist is what a test keeps of a series' histograms and exemplars.
type gotHist struct {
	hs        []HistogramSample
	herrs     []error
	exemplars []string // labels value@t, rendered
	eerrs     []error
}

func collectHist(t testing.TB, d *Decoder, msg Message, body []byte) ([]gotHist, error) {
	t.Helper()
	var out []gotHist
	err := d.Decode(msg, body, func(s *Series) error {
		var g gotHist
		for h, err := range s.HistogramSamples() {
			g.hs, g.herrs = append(g.hs, h), append(g.herrs, err)
		}
		for e, err := range s.ExemplarSamples() {
			g.exemplars = append(g.exemplars, fmt.Sprintf("%s %v@%d", FormatLabels(e.Labels), e.Value, e.T))
			g.eerrs = append(g.eerrs, err)
		}
		if len(g.hs) != s.Histograms || len(g.exemplars) != s.Exemplars {
			t.Errorf("series %d: %d histograms and %d exemplars iterated, counted %d and %d", s.Index, len(g.hs), len(g.exemplars), s.Histograms, s.Exemplars)
		}
		out = append(out, g)
		return nil
	}, nil)
	return out, err
}

// render prints a histogram sample with empty slices as nil, for comparison.
func render(h HistogramSample) string {
	norm := func(s []histogram.Span) []histogram.Span {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	if h.H != nil {
		c := *h.H
		c.PositiveSpans, c.NegativeSpans = norm(c.PositiveSpans), norm(c.NegativeSpans)
		c.PositiveBuckets, c.NegativeBuckets = slices.Clip(append([]int64(nil), c.PositiveBuckets...)), slices.Clip(append([]int64(nil), c.NegativeBuckets...))
		c.CustomValues = append([]float64(nil), c.CustomValues...)
		return fmt.Sprintf("%d int %+v", h.T, c)
	}
	if h.FH != nil {
		c := *h.FH
		c.PositiveSpans, c.NegativeSpans = norm(c.PositiveSpans), norm(c.NegativeSpans)
		c.PositiveBuckets, c.NegativeBuckets = append([]float64(nil), c.PositiveBuckets...), append([]float64(nil), c.NegativeBuckets...)
		c.CustomValues = append([]float64(nil), c.CustomValues...)
		return fmt.Sprintf("%d float %+v", h.T, c)
	}
	return "none"
}

func testHistograms() (*histogram.Histogram, *histogram.FloatHistogram, *histogram.Histogram) {
	h := &histogram.Histogram{CounterResetHint: histogram.NotCounterReset, Schema: 3, ZeroThreshold: 0.001, ZeroCount: 2, Count: 12, Sum: 18.4,
		PositiveSpans: []histogram.Span{{Offset: -2, Length: 2}, {Offset: 1, Length: 2}}, PositiveBuckets: []int64{1, 1, -1, 0},
		NegativeSpans: []histogram.Span{{Offset: 0, Length: 1}}, NegativeBuckets: []int64{5}}
	fh := &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Schema: 0, Count: 3.5, ZeroCount: 0.5, Sum: -1,
		PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []float64{1, 2}}
	custom := &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 4, Sum: 2,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 1, -1}, CustomValues: []float64{0.1, 1, 10}}
	return h, fh, custom
}

func TestHistogramSamplesBothVersions(t *testing.T) {
	h, fh, custom := testHistograms()
	want := []string{render(HistogramSample{T: 1000, H: h}), render(HistogramSample{T: 2000, FH: fh}), render(HistogramSample{T: 3000, H: custom})}
	wantEx := []string{`{trace_id="abc"} 0.5@1500`, `{} 2@2500`}

	v1 := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:     []prompb.Label{{Name: "__name__", Value: "lat"}},
		Histograms: []prompb.Histogram{prompb.FromIntHistogram(1000, h), prompb.FromFloatHistogram(2000, fh), prompb.FromIntHistogram(3000, custom)},
		Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 0.5, Timestamp: 1500}, {Value: 2, Timestamp: 2500}},
	}}}
	st := writev2.NewSymbolTable()
	v2 := &writev2.Request{Timeseries: []writev2.TimeSeries{{
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "lat"), nil),
		Histograms: []writev2.Histogram{writev2.FromIntHistogram(0, 1000, h), writev2.FromFloatHistogram(0, 2000, fh), writev2.FromIntHistogram(0, 3000, custom)},
		Exemplars:  []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "abc"), nil), Value: 0.5, Timestamp: 1500}, {Value: 2, Timestamp: 2500}},
	}}}
	v2.Symbols = st.Symbols()
	b1, _ := v1.Marshal()
	b2, _ := v2.Marshal()
	for _, tc := range []struct {
		msg  Message
		body []byte
	}{{MessageV1, b1}, {MessageV2, b2}} {
		got, err := collectHist(t, &Decoder{}, tc.msg, tc.body)
		if err != nil || len(got) != 1 {
			t.Fatalf("%v: %d series, %v", tc.msg, len(got), err)
		}
		for i, hs := range got[0].hs {
			if got[0].herrs[i] != nil || render(hs) != want[i] {
				t.Errorf("%v: histogram %d:\n got %s (%v)\nwant %s", tc.msg, i, render(hs), got[0].herrs[i], want[i])
			}
		}
		if !slices.Equal(got[0].exemplars, wantEx) || slices.ContainsFunc(got[0].eerrs, func(e error) bool { return e != nil }) {
			t.Errorf("%v: exemplars %q (%v), want %q", tc.msg, got[0].exemplars, got[0].eerrs, wantEx)
		}
	}
}

func TestHistogramBoundsAndInvalid(t *testing.T) {
	big := &histogram.Histogram{Count: 5, PositiveSpans: []histogram.Span{{Length: 5}}, PositiveBuckets: []int64{1, 0, 0, 0, 0}}
	bad := &histogram.Histogram{Count: 1, PositiveSpans: []histogram.Span{{Length: 2}}, PositiveBuckets: []int64{1}} // spans say 2
	long := strings.Repeat("x", 200)
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:     []prompb.Label{{Name: "__name__", Value: "lat"}},
		Samples:    []prompb.Sample{{Value: 1, Timestamp: 1}},
		Histograms: []prompb.Histogram{prompb.FromIntHistogram(1, big), prompb.FromIntHistogram(2, bad)},
		Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: long}}}, {Labels: []prompb.Label{{Name: "", Value: "x"}}}},
	}}}
	b, _ := req.Marshal()
	got, err := collectHist(t, &Decoder{MaxHistogramBuckets: 4}, MessageV1, b)
	if err != nil {
		t.Fatal(err)
	}
	g := got[0]
	var he *HistogramError
	if !errors.As(g.herrs[0], &he) || !he.Limit() || !strings.Contains(he.Error(), "more than 4") {
		t.Errorf("5 buckets over a bound of 4: %v", g.herrs[0])
	}
	if !errors.As(g.herrs[1], &he) || he.Limit() || he.Index != 1 {
		t.Errorf("spans and buckets that disagree: %v", g.herrs[1])
	}
	if !errors.As(g.eerrs[0], &he) || !he.Limit() || !strings.Contains(he.Error(), "128") {
		t.Errorf("an exemplar of 208 characters: %v", g.eerrs[0])
	}
	if !errors.As(g.eerrs[1], &he) || he.Limit() {
		t.Errorf("an exemplar with an empty label name: %v", g.eerrs[1])
	}
	// The same histogram fits the default bound.
	got, _ = collectHist(t, &Decoder{}, MessageV1, b)
	if got[0].herrs[0] != nil {
		t.Errorf("default bound: %v", got[0].herrs[0])
	}
}

// FuzzDecodeHistogramsV1 checks the histograms and exemplars of any body
// the decoder accepts against Prometheus' own (gogo) decoding.
func FuzzDecodeHistogramsV1(f *testing.F) {
	h, fh, custom := testHistograms()
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:     []prompb.Label{{Name: "__name__", Value: "lat"}},
		Histograms: []prompb.Histogram{prompb.FromIntHistogram(1000, h), prompb.FromFloatHistogram(2000, fh), prompb.FromIntHistogram(3000, custom)},
		Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 0.5, Timestamp: 1500}},
	}}}
	b, _ := req.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := collectHist(t, &Decoder{}, MessageV1, body)
		if err != nil {
			return
		}
		var ref prompb.WriteRequest
		if rerr := ref.Unmarshal(body); rerr != nil {
			t.Fatalf("accepted a body gogo rejects (%v)", rerr)
		}
		for i, ts := range ref.Timeseries {
			for j, rh := range ts.Histograms {
				compareHist(t, got[i].hs[j], got[i].herrs[j], rh.IsFloatHistogram(), rh.ToIntHistogram(), rh.ToFloatHistogram(), rh.Timestamp)
			}
			for j, re := range ts.Exemplars {
				if got[i].eerrs[j] != nil {
					continue
				}
				var ls []Label
				for _, l := range re.Labels {
					ls = append(ls, Label{l.Name, l.Value})
				}
				if w := fmt.Sprintf("%s %v@%d", FormatLabels(ls), re.Value, re.Timestamp); got[i].exemplars[j] != w {
					t.Fatalf("exemplar %d: %s, gogo %s", j, got[i].exemplars[j], w)
				}
			}
		}
	})
}

// FuzzDecodeHistogramsV2 is FuzzDecodeHistogramsV1 for Remote-Write 2.0.
func FuzzDecodeHistogramsV2(f *testing.F) {
	h, fh, custom := testHistograms()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{{
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "lat"), nil),
		Histograms: []writev2.Histogram{writev2.FromIntHistogram(0, 1000, h), writev2.FromFloatHistogram(0, 2000, fh), writev2.FromIntHistogram(0, 3000, custom)},
		Exemplars:  []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "abc"), nil), Value: 0.5, Timestamp: 1500}},
	}}}
	req.Symbols = st.Symbols()
	b, _ := req.Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := collectHist(t, &Decoder{}, MessageV2, body)
		if err != nil {
			return
		}
		var ref writev2.Request
		if rerr := ref.Unmarshal(body); rerr != nil {
			t.Fatalf("accepted a body gogo rejects (%v)", rerr)
		}
		var sb labels.ScratchBuilder
		for i, ts := range ref.Timeseries {
			for j, rh := range ts.Histograms {
				compareHist(t, got[i].hs[j], got[i].herrs[j], rh.IsFloatHistogram(), rh.ToIntHistogram(), rh.ToFloatHistogram(), rh.Timestamp)
			}
			for j, re := range ts.Exemplars {
				e, rerr := re.ToExemplar(&sb, ref.Symbols)
				if got[i].eerrs[j] != nil || rerr != nil {
					continue
				}
				// Prometheus sorts an exemplar's labels; this decoder keeps the order sent.
				var ls []Label
				e.Labels.Range(func(l labels.Label) { ls = append(ls, Label{l.Name, l.Value}) })
				if w := fmt.Sprintf("%s %v@%d", FormatLabels(ls), re.Value, re.Timestamp); !sameLabelSet(got[i].exemplars[j], w) {
					t.Fatalf("exemplar %d: %s, gogo %s", j, got[i].exemplars[j], w)
				}
			}
		}
	})
}

// sameLabelSet compares two rendered exemplars as sets of labels.
func sameLabelSet(a, b string) bool {
	sort := func(s string) string {
		i := strings.LastIndex(s, "} ")
		if i < 0 {
			return s
		}
		parts := strings.Split(s[1:i], ", ")
		slices.Sort(parts)
		return strings.Join(parts, ",") + s[i:]
	}
	return sort(a) == sort(b)
}

func compareHist(t *testing.T, got HistogramSample, err error, isFloat bool, ih *histogram.Histogram, fh *histogram.FloatHistogram, ts int64) {
	t.Helper()
	want := HistogramSample{T: ts, H: ih}
	if isFloat {
		want = HistogramSample{T: ts, FH: fh}
	}
	var verr error
	if isFloat {
		verr = fh.Validate()
	} else {
		verr = ih.Validate()
	}
	if err != nil {
		var he *HistogramError
		if !errors.As(err, &he) {
			t.Fatalf("error %v is not a *HistogramError", err)
		}
		if !he.Limit() && verr == nil {
			t.Fatalf("refused %s (%v), which Prometheus validates", render(want), err)
		}
		return
	}
	if verr != nil {
		t.Fatalf("accepted %s, which Prometheus refuses: %v", render(want), verr)
	}
	if hint := want; hint.H != nil && hint.H.CounterResetHint > histogram.GaugeType || hint.FH != nil && hint.FH.CounterResetHint > histogram.GaugeType {
		return // an unknown hint is read as unknown here
	}
	if render(got) != render(want) {
		t.Fatalf("histogram:\n got %s\nwant %s", render(got), render(want))
	}
}
