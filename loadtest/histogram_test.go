package loadtest

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"hourglass/api/prom"
)

func histGen(t *testing.T, seed uint64) *Generator {
	t.Helper()
	g, err := NewGenerator(GenConfig{Seed: seed, Series: 30, Interval: 10 * time.Second,
		Start: time.Unix(1_700_000_000, 0), Steps: 20, Histograms: 2})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestHistogramMix: every histogram the generator makes is valid by
// Prometheus' own rules, has 10 to 20 populated buckets at schema 3, and
// grows as a counter; the data is the seed's.
func TestHistogramMix(t *testing.T) {
	g := histGen(t, 7)
	if want := int64((30 + 3*2) * 20); g.Points() != want { // 3 hosts of 12 float metrics (the last has 6), 2 histograms each
		t.Fatalf("Points() = %d, want %d", g.Points(), want)
	}
	if d := g.DistinctSeries(20); d != 36 {
		t.Fatalf("DistinctSeries = %d, want 36", d)
	}
	var nh, n int
	last := map[*Series]float64{}
	var sig strings.Builder
	g.Each(func(p Point) {
		n++
		if p.H == nil {
			if p.S.Kind == Histogram {
				t.Fatalf("%s: histogram series without a histogram", p.S.Key())
			}
			return
		}
		nh++
		if p.S.Kind != Histogram || !strings.HasPrefix(p.S.Metric, "http_request_duration_seconds") {
			t.Fatalf("histogram on series %s kind %v", p.S.Key(), p.S.Kind)
		}
		if err := p.H.Validate(); err != nil {
			t.Fatalf("%s@%d: invalid histogram: %v", p.S.Key(), p.T, err)
		}
		if p.H.Schema != 3 {
			t.Fatalf("schema %d", p.H.Schema)
		}
		populated := 0
		for _, c := range p.H.ToFloat(nil).PositiveBuckets {
			if c > 0 {
				populated++
			}
		}
		if populated < 10 || populated > 20 {
			t.Fatalf("%s@%d: %d populated buckets", p.S.Key(), p.T, populated)
		}
		if prev, ok := last[p.S]; ok && float64(p.H.Count) < prev {
			t.Fatalf("%s@%d: count fell from %v to %d", p.S.Key(), p.T, prev, p.H.Count)
		}
		last[p.S] = float64(p.H.Count)
		sig.WriteString(p.H.String())
	})
	if int64(n) != g.Points() || nh != 3*2*20 {
		t.Fatalf("%d points (%d histograms), want %d (120)", n, nh, g.Points())
	}
	var again strings.Builder
	histGen(t, 7).Each(func(p Point) {
		if p.H != nil {
			again.WriteString(p.H.String())
		}
	})
	if again.String() != sig.String() {
		t.Fatal("same seed, different histograms")
	}
	var other strings.Builder
	histGen(t, 8).Each(func(p Point) {
		if p.H != nil {
			other.WriteString(p.H.String())
		}
	})
	if other.String() == sig.String() {
		t.Fatal("another seed, the same histograms")
	}
}

// TestHistogramRoundTrip: a batch with histograms, encoded by either remote
// write encoder, decodes through hourglass' decoder (api/prom) to the same
// histograms, and as many floats.
func TestHistogramRoundTrip(t *testing.T) {
	g := histGen(t, 3)
	src := g.Source(0, 1)
	pts := src.Fill(nil, 200, math.MaxInt64)
	want := map[string]string{}
	floats := 0
	for _, p := range pts {
		if p.H != nil {
			want[p.S.Key()+"@"+time.UnixMilli(p.T).String()] = p.H.String()
		} else {
			floats++
		}
	}
	if len(want) == 0 || floats == 0 {
		t.Fatalf("batch has %d histograms, %d floats", len(want), floats)
	}
	encs := map[prom.Message]func([]byte, []Point) ([]byte, error){
		prom.MessageV1: (&rw1Encoder{}).encode,
		prom.MessageV2: (&rw2Encoder{symbols: writev2.NewSymbolTable()}).encode,
	}
	for msg, enc := range encs {
		body, err := enc(nil, pts)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		gotFloats := 0
		var d prom.Decoder
		err = d.Decode(msg, raw, func(s *prom.Series) error {
			if s.Err != nil {
				return s.Err
			}
			if msg == prom.MessageV2 && s.Histograms > 0 && s.Metadata.Type != prom.MetricHistogram {
				t.Errorf("%s: metadata type %v", s.Metric, s.Metadata.Type)
			}
			gotFloats += s.NumSamples
			tags := map[string]string{}
			for _, l := range s.Labels {
				if l.Name != "__name__" {
					tags[l.Name] = l.Value
				}
			}
			for hs, err := range s.HistogramSamples() {
				if err != nil {
					return err
				}
				got[SeriesKey(s.Metric, tags)+"@"+time.UnixMilli(hs.T).String()] = hs.H.String()
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatalf("message %d: %v", msg, err)
		}
		if gotFloats != floats || len(got) != len(want) {
			t.Fatalf("message %d: %d floats, %d histograms; want %d, %d", msg, gotFloats, len(got), floats, len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("message %d: %s: got %s, want %s", msg, k, got[k], v)
			}
		}
	}
}

// TestHistogramDialects: the dialects without native histograms refuse a
// histogram mix before sending anything.
func TestHistogramDialects(t *testing.T) {
	g := histGen(t, 1)
	for _, d := range []string{DialectPut, DialectTelnet} {
		_, err := Write(context.Background(), g, WriteConfig{Dialect: d, URL: "http://127.0.0.1:1", Addr: "127.0.0.1:1",
			Workers: 1, BatchSize: 10, Duration: time.Second, ServerPID: -1})
		if err == nil || !strings.Contains(err.Error(), "histograms") {
			t.Fatalf("%s: err %v", d, err)
		}
	}
}
