package query_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/query"
	"hourglass/series"
)

// otsHist is an /api/histogram point as stored (api/opentsdb's Native).
func otsHist(t *testing.T, host string, ts int64, under, over int64, buckets ...opentsdb.HistogramBucket) series.HistSample {
	t.Helper()
	hp := opentsdb.HistogramPoint{Metric: "m", Timestamp: ts, Tags: []opentsdb.Tag{{Key: "host", Value: host}},
		Underflow: under, Overflow: over, Buckets: buckets}
	if err := hp.Validate(opentsdb.Limits{}); err != nil {
		t.Fatal(err)
	}
	return series.HistSample{Labels: series.MakeLabels("m", []series.Tag{{Key: "host", Value: host}}), T: ts, H: hp.Native()}
}

// pctRun runs RunPercentiles over m from start to end and returns each
// result as "name: t=v …" (t in seconds from base, v with its kind).
func pctRun(t *testing.T, eng *query.Engine, start, end int64, agg, ds string, loc *time.Location, hq query.HistogramQuery) []string {
	t.Helper()
	a, err := downsample.Lookup(agg)
	if err != nil {
		t.Fatal(err)
	}
	req := query.Request{Selector: query.Selector{Metric: "m", Start: start, End: end}, Aggregator: a, Location: loc}
	if ds != "" {
		spec, err := downsample.ParseSpec(ds)
		if err != nil {
			t.Fatal(err)
		}
		req.Downsample = &spec
	}
	rs, err := eng.RunPercentiles(context.Background(), req, hq)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		s := r.Metric + ":"
		for _, p := range r.Points {
			s += fmt.Sprintf(" %d=%s", (p.T-base)/1000, pointText(p))
		}
		out = append(out, s)
	}
	return out
}

func pointText(p chunk.Point) string {
	if p.V.IsInt() {
		return fmt.Sprintf("%di", p.V.Int())
	}
	return fmt.Sprint(p.V.Float())
}

// TestRunPercentilesBuckets: showHistogramBuckets as OpenTSDB 2.4 answers
// it (TsdbQuery.generateHistogramBucketDataPoints,
// HistogramBucketDataPointsAdaptor): after the group's percentiles, one
// integer series per bucket of its first (summed) histogram, the underflow
// first and the overflow last, named m_<low>_<high> with Java's float
// printing; a later histogram without a bucket answers 0 for it; a gap
// between the buckets sent is not a bucket. Also 0all (one point stamped
// with the query's end, from the histograms in [start, end)) and calendar
// downsampling. Every value worked by hand.
func TestRunPercentilesBuckets(t *testing.T) {
	db := openHistDB(t, t.TempDir())
	defer db.close()
	b := func(lo, hi float64, n int64) opentsdb.HistogramBucket {
		return opentsdb.HistogramBucket{Low: lo, High: hi, Count: n}
	}
	appendHist(t, db, []series.HistSample{
		// a at base: a gap (40, 50] that is not a bucket.
		otsHist(t, "a", base, 3, 4, b(0, 10, 5), b(10, 20, 3), b(20, 40, 2), b(50, 60, 1)),
		otsHist(t, "b", base, 1, 0, b(0, 10, 1), b(10, 20, 1), b(20, 40, 8)),
		otsHist(t, "a", base+60_000, 0, 0, b(0, 10, 1), b(10, 20, 1)),
	})
	// At base the sum is under 4; 6, 4, 10, 1 in the regular buckets (21:
	// running 28.6 %, 47.6 %, 95.2 %: p50 is 30); over 4. At base+60 s a
	// alone: 1, 1 (p50 5), the other buckets 0.
	got := pctRun(t, db.eng, base, base+120_000, "sum", "", nil, query.HistogramQuery{Percentiles: []float64{50}, ShowBuckets: true})
	want := []string{
		"m_pct_50.0: 0=30 60=5",
		"m_UNDERFLOW: 0=4i 60=0i",
		"m_0.0_10.0: 0=6i 60=1i",
		"m_10.0_20.0: 0=4i 60=1i",
		"m_20.0_40.0: 0=10i 60=0i",
		"m_50.0_60.0: 0=1i 60=0i",
		"m_OVERFLOW: 0=4i 60=0i",
	}
	if !slices.Equal(got, want) {
		t.Errorf("buckets:\n got %q\nwant %q", got, want)
	}
	// The buckets are those of the first histogram: from base+60 s on, a's
	// two buckets only; buckets alone, no percentile.
	got = pctRun(t, db.eng, base+30_000, base+120_000, "none", "", nil, query.HistogramQuery{ShowBuckets: true})
	want = []string{"m_UNDERFLOW: 60=0i", "m_0.0_10.0: 60=1i", "m_10.0_20.0: 60=1i", "m_OVERFLOW: 60=0i"}
	if !slices.Equal(got, want) {
		t.Errorf("from base+30s:\n got %q\nwant %q", got, want)
	}
	// 0all over [base, base+60 s): the histogram at base+60 s is out; the
	// one point is stamped base+60 s. p50 of 21 is 30 as above.
	got = pctRun(t, db.eng, base, base+60_000, "sum", "0all-sum", nil, query.HistogramQuery{Percentiles: []float64{50}})
	if want := []string{"m_pct_50.0: 60=30"}; !slices.Equal(got, want) {
		t.Errorf("0all to base+60s: %q, want %q", got, want)
	}
	// 0all over [base, base+120 s]: all three: 7, 5, 10, 1 of 23: p50 15.
	got = pctRun(t, db.eng, base, base+120_000, "sum", "0all-sum", nil, query.HistogramQuery{Percentiles: []float64{50}})
	if want := []string{"m_pct_50.0: 120=15"}; !slices.Equal(got, want) {
		t.Errorf("0all to base+120s: %q, want %q", got, want)
	}
	// Calendar: base is 2026-01-01T00:00Z, 19:00 on Dec 31 at UTC-5, so
	// 1dc there stamps both minutes with that zone's midnight, 19 hours
	// before base; 1d (epoch) stamps them with base.
	zone := time.FixedZone("UTC-5", -5*3600)
	mid := time.Date(2025, 12, 31, 0, 0, 0, 0, zone).UnixMilli()
	got = pctRun(t, db.eng, mid, base+120_000, "sum", "1dc-sum", zone, query.HistogramQuery{Percentiles: []float64{50}})
	if want := []string{fmt.Sprintf("m_pct_50.0: %d=15", (mid-base)/1000)}; !slices.Equal(got, want) {
		t.Errorf("1dc at UTC-5: %q, want %q", got, want)
	}
	got = pctRun(t, db.eng, mid, base+120_000, "sum", "1d-sum", zone, query.HistogramQuery{Percentiles: []float64{50}})
	if want := []string{"m_pct_50.0: 0=15"}; !slices.Equal(got, want) {
		t.Errorf("1d: %q, want %q", got, want)
	}
}

// TestJavaFloat: Float.toString's forms, as OpenTSDB prints bucket bounds
// and percentiles.
func TestJavaFloat(t *testing.T) {
	for f, want := range map[float32]string{
		0: "0.0", 10: "10.0", 0.1: "0.1", 99.9: "99.9", -2.5: "-2.5", 1e-3: "0.001", 9999999: "9999999.0",
		1e7: "1.0E7", 1.25e-5: "1.25E-5", 1e-4: "1.0E-4", 3.4028235e38: "3.4028235E38",
	} {
		if got := query.JavaFloat(f); got != want {
			t.Errorf("JavaFloat(%v) = %q, want %q", f, got, want)
		}
	}
	if got := query.BucketMetric("m", query.BucketKey{Kind: query.Regular, Low: 0.5, High: 1e7}); got != "m_0.5_1.0E7" {
		t.Errorf("BucketMetric = %q", got)
	}
}
