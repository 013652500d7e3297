package opentsdb

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

func parseHistJSON(t testing.TB, body string, maxBuckets int) ([]HistogramPoint, []error, error) {
	var pts []HistogramPoint
	var errs []error
	err := ParseHistogramJSON([]byte(body), Limits{}, maxBuckets, func(i int, hp *HistogramPoint, err error) error {
		c := *hp
		c.Tags, c.Buckets = slices.Clone(hp.Tags), slices.Clone(hp.Buckets)
		pts, errs = append(pts, c), append(errs, err)
		return nil
	})
	return pts, errs, err
}

func TestParseHistogramJSON(t *testing.T) {
	body := `[{"metric":"sys.lat","timestamp":1700000000,"tags":{"host":"a","dc":"x"},
		"buckets":{"1.75,3.5":16,"0,1.75":12,"5.25,7":8},"underflow":1,"overflow":"2"},
		{"metric":"sys.lat","timestamp":1700000000123,"tags":{"host":"a"},"id":0,"value":"AAEC"},
		{"metric":"sys.lat","timestamp":1700000000,"tags":{"host":"a"},"buckets":{"0,2":1,"1,3":1}},
		{"metric":"sys.lat","timestamp":1700000000,"tags":{"host":"a"},"buckets":{"0,2":-1}},
		{"metric":"sys.lat","timestamp":1700000000,"tags":{"host":"a"},"buckets":{"0,1":1,"1,2":1,"2,3":1,"3,4":1}},
		{"metric":"","timestamp":1700000000,"tags":{"host":"a"},"buckets":{"0,1":1}},
		{"metric":"sys.lat","timestamp":1700000000,"tags":{"host":"a"}}]`
	pts, errs, err := parseHistJSON(t, body, 3)
	if err != nil || len(pts) != 7 {
		t.Fatalf("%d points, %v", len(pts), err)
	}
	p := pts[0]
	if errs[0] != nil {
		t.Fatalf("point 0: %v", errs[0])
	}
	want := []HistogramBucket{{0, 1.75, 12}, {1.75, 3.5, 16}, {5.25, 7, 8}}
	if p.Metric != "sys.lat" || p.Timestamp != 1700000000000 || !slices.Equal(p.Buckets, want) || p.Underflow != 1 || p.Overflow != 2 ||
		!slices.Equal(p.Tags, []Tag{{"dc", "x"}, {"host", "a"}}) {
		t.Errorf("point 0: %+v", p)
	}
	for i, sub := range map[int]string{1: "simple bucket form", 2: "overlap", 3: "0 or more", 4: "Too many buckets: more than 3", 5: "Metric name was empty", 6: `Missing "buckets"`} {
		var pe *PointError
		if !errors.As(errs[i], &pe) || pe.Index != i || !strings.Contains(pe.Message, sub) {
			t.Errorf("point %d: %v, want a PointError saying %q", i, errs[i], sub)
		}
	}
	// maxBuckets 3 refused point 4 of four buckets; 0 is OpenTSDB's 100.
	if _, errs, _ := parseHistJSON(t, body, 0); errs[4] != nil {
		t.Errorf("four buckets under the default bound: %v", errs[4])
	}
	for _, bad := range []struct {
		body string
		want error
	}{{"", ErrMissingContent}, {"x", ErrNotObjectOrArray}, {"[", ErrUnparseableJSON}, {"{", ErrUnparseableJSON}, {"[]", ErrNoDataPoints}} {
		if _, _, err := parseHistJSON(t, bad.body, 0); err != bad.want {
			t.Errorf("%q: %v, want %v", bad.body, err, bad.want)
		}
	}
}

func TestHistogramNative(t *testing.T) {
	hp := HistogramPoint{Metric: "m", Timestamp: 1, Tags: []Tag{{"a", "b"}}, Underflow: 1, Overflow: 2,
		Buckets: []HistogramBucket{{0, 1, 3}, {1, 2, 4}, {5, 10, 5}}}
	if err := hp.Validate(Limits{}); err != nil {
		t.Fatal(err)
	}
	h := hp.Native()
	if err := h.Validate(); err != nil {
		t.Fatalf("Native: %v", err)
	}
	// Bounds 0, 1, 2, 5 (the gap), 10; buckets: underflow, 3, 4, 5, overflow,
	// the gap (2,5] skipped by the spans.
	if !slices.Equal(h.CustomValues, []float64{0, 1, 2, 5, 10}) || h.Count != 15 || h.Sum != 65 || h.Schema != histogram.CustomBucketsSchema {
		t.Errorf("Native: %+v", h)
	}
	var counts, uppers []float64
	for it := h.ToFloat(nil).PositiveBucketIterator(); it.Next(); {
		counts = append(counts, it.At().Count)
		uppers = append(uppers, it.At().Upper)
	}
	if !slices.Equal(counts, []float64{1, 3, 4, 5, 2}) || !slices.Equal(uppers, []float64{0, 1, 2, 10, math.Inf(1)}) {
		t.Errorf("bucket counts %v, upper bounds %v", counts, uppers)
	}
	if want := []histogram.Span{{Offset: 0, Length: 3}, {Offset: 1, Length: 2}}; !slices.Equal(h.PositiveSpans, want) {
		t.Errorf("spans %v, want %v", h.PositiveSpans, want)
	}
}

func TestParseHistogramLine(t *testing.T) {
	var hp HistogramPoint
	err := ParseHistogramLine([]byte("histogram sys.lat 1700000000 u=1:o=2:0,1.75=12:1.75,3.5=16 host=a dc=x\r\n"), Limits{}, 0, &hp)
	if err != nil || hp.Underflow != 1 || hp.Overflow != 2 || len(hp.Buckets) != 2 || hp.Buckets[1] != (HistogramBucket{1.75, 3.5, 16}) ||
		hp.Timestamp != 1700000000000 || len(hp.Tags) != 2 {
		t.Fatalf("%+v, %v", hp, err)
	}
	for line, want := range map[string]string{
		"histogram sys.lat 1700000000 0 AAEC host=a":         "histogram: illegal argument: a codec id: the binary histogram form is not supported",
		"histogram sys.lat 1700000000 u=1":                   "histogram: illegal argument: not enough arguments (need least 5, got 4)",
		"histogram sys.lat x u=1:0,1=1 host=a":               "histogram: invalid value:",
		"histogram sys.lat 1700000000 u=1:0,1=x host=a":      "histogram: illegal argument: bucket \"0,1\"",
		"histogram sys.lat 1700000000 u=1:0,1=1 host":        "histogram: illegal argument: invalid tag: host",
		"histogram sys.lat 1700000000 0,1=1:0,1=1:0,1=1 h=a": "Too many buckets: more than 2",
		"histogram sys.l!t 1700000000 0,1=1 h=a":             "illegal character",
		"put sys.lat 1 1 h=a":                                "unknown command: put",
	} {
		err := ParseHistogramLine([]byte(line), Limits{}, 2, &hp)
		var le *LineError
		if !errors.As(err, &le) || !strings.Contains(le.Reply, want) {
			t.Errorf("%q: %v, want %q", line, err, want)
		}
	}
}

func checkParsedHistogram(t *testing.T, hp *HistogramPoint) {
	h := hp.Native()
	if err := h.Validate(); err != nil {
		t.Fatalf("a valid point's native histogram is invalid: %v (%+v)", err, hp)
	}
	total := hp.Underflow + hp.Overflow
	for _, b := range hp.Buckets {
		total += b.Count
	}
	if h.Count != uint64(total) {
		t.Fatalf("count %d, want %d", h.Count, total)
	}
}

func FuzzParseHistogramJSON(f *testing.F) {
	f.Add(`{"metric":"m","timestamp":1,"tags":{"a":"b"},"buckets":{"0,1":1,"2,3":4},"underflow":1,"overflow":2}`)
	f.Add(`[{"metric":"m","timestamp":"1","tags":{"a":"b"},"buckets":{"-1e300,1e300":9223372036854775807}}]`)
	f.Add(`{"id":3,"value":"AAAA"}`)
	f.Fuzz(func(t *testing.T, body string) {
		_ = ParseHistogramJSON([]byte(body), Limits{}, 0, func(i int, hp *HistogramPoint, err error) error {
			if err == nil {
				checkParsedHistogram(t, hp)
			} else if _, ok := err.(*PointError); !ok {
				t.Fatalf("point error %T %v", err, err)
			}
			return nil
		})
	})
}

func FuzzParseHistogramLine(f *testing.F) {
	f.Add("histogram m 1 u=1:o=2:0,1=3:1,2=4 a=b")
	f.Add("histogram m 1.5 0,1=1 a=b c=d")
	f.Add("histogram m 1 7 AAAA a=b")
	f.Fuzz(func(t *testing.T, line string) {
		var hp HistogramPoint
		err := ParseHistogramLine([]byte(line), Limits{}, 0, &hp)
		if err == nil {
			checkParsedHistogram(t, &hp)
		} else if _, ok := err.(*LineError); !ok {
			t.Fatalf("error %T %v", err, err)
		}
	})
}
