package query

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// OpenTSDB 2.4 percentiles over histograms (/api/query's `percentiles`,
// issue 16). Histograms written through /api/histogram are stored as
// custom-bucket native histograms; here they are read back as OpenTSDB's
// SimpleHistogram: the finite buckets (lower, upper] with their counts,
// the underflow and the overflow (left out of the percentiles, as OpenTSDB
// leaves them out). The histograms of a group at one output timestamp
// (pctStamp: the point's own, its downsample bucket's start, or with 0all
// the query's end) are summed bucket by bucket (OpenTSDB's only histogram
// aggregation, SUM), then each percentile is SimplePercentile of the sum,
// and with showHistogramBuckets each bucket's count is a series of its own
// (histogram_pct_run.go).

// PctBucket is one finite bucket of a histogram and its count.
type PctBucket struct {
	Low, High float64
	Count     float64
}

// SimplePercentile is OpenTSDB 2.4's SimpleHistogram.percentile: p outside
// [1, 100] is -1; else the buckets are walked in order of their bounds,
// and the first whose running count reaches p percent of the total of all
// buckets answers with its midpoint, (Low+High)/2 computed as Java computes
// it from float bounds (in float32, then widened: 0.15000000596046448 for
// the bucket 0.1,0.2). No bucket reaching it
// (an empty histogram) answers 0. p is compared as OpenTSDB compares it,
// as a float widened to a double. bs must be sorted (SortPctBuckets).
func SimplePercentile(bs []PctBucket, p float64) float64 {
	p = float64(float32(p))
	if p < 1 || p > 100 {
		return -1
	}
	var total float64
	for _, b := range bs {
		total += b.Count
	}
	var running float64
	for _, b := range bs {
		running += b.Count
		if running*100/total >= p {
			// Java adds the float bounds in float arithmetic.
			return float64((float32(b.Low) + float32(b.High)) / 2)
		}
	}
	return 0
}

// SortPctBuckets sorts bs by Low, then High (OpenTSDB's bucket order).
func SortPctBuckets(bs []PctBucket) {
	slices.SortFunc(bs, func(a, b PctBucket) int {
		if c := cmp.Compare(a.Low, b.Low); c != 0 {
			return c
		}
		return cmp.Compare(a.High, b.High)
	})
}

// PercentileMetric is the name of a percentile's output series as OpenTSDB
// writes it: metric + "_pct_" + the percentile as Java prints a float
// ("50.0", "99.9").
func PercentileMetric(metric string, p float64) string {
	return metric + "_pct_" + JavaFloat(float32(p))
}

// BucketMetric is the name of a bucket's output series with
// showHistogramBuckets, as OpenTSDB 2.4's HistogramBucketDataPointsAdaptor
// writes it: metric + "_" + low + "_" + high, the bounds printed as Java
// prints a float ("m_0.0_10.0"); the underflow is metric + "_UNDERFLOW",
// the overflow metric + "_OVERFLOW".
func BucketMetric(metric string, b BucketKey) string {
	switch b.Kind {
	case Underflow:
		return metric + "_UNDERFLOW"
	case Overflow:
		return metric + "_OVERFLOW"
	}
	return metric + "_" + JavaFloat(float32(b.Low)) + "_" + JavaFloat(float32(b.High))
}

// JavaFloat formats f as Java's Float.toString does: NaN, Infinity,
// -Infinity; the shortest digits that read back as f, in plain notation
// with at least one digit after the point when 1e-3 <= |f| < 1e7 ("0.0",
// "-0.0", "10.0", "99.9"), else in computerized scientific notation
// ("1.0E7", "1.0E-4", "1.25E-5"). Go's shortest digits are Java's except
// for some subnormals, where Java keeps a second digit ("1.4E-45" for the
// smallest float, "1.0E-45" here).
func JavaFloat(f float32) string {
	switch {
	case f != f:
		return "NaN"
	case math.IsInf(float64(f), 1):
		return "Infinity"
	case math.IsInf(float64(f), -1):
		return "-Infinity"
	}
	a := math.Abs(float64(f))
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(float64(f), 'f', -1, 32)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(float64(f), 'e', -1, 32) // "1e+07", "1.25e-05"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
