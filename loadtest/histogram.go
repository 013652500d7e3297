package loadtest

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// The histogram mix: with GenConfig.Histograms > 0 every host also has that
// many native histogram series, latency histograms as a Prometheus client
// exposes them (schema 3, 16 populated buckets around the series' typical
// latency, counts growing as a counter). Only the remote-write dialects
// carry them.

// histogramSchema is the schema of the generated histograms: bucket
// boundaries grow by 2^(1/8).
const histogramSchema = 3

// histogramBuckets is the number of populated buckets of a series.
const histogramBuckets = 16

// HistogramMetric is the name of histogram metric k of a host.
func HistogramMetric(k int) string {
	if k == 0 {
		return "http_request_duration_seconds"
	}
	return fmt.Sprintf("http_request_duration_seconds_%d", k)
}

// histState is a histogram slot's state: the cumulative count of each
// bucket, the sum, and where the buckets start.
type histState struct {
	offset int32 // index of the first bucket
	counts [histogramBuckets]int64
	sum    float64
	rate   int64 // mean observations per step
}

// resetHistogram starts a histogram series: a typical latency between about
// 1ms and 1s (bucket index -80..0 at schema 3), a request rate, and a first
// cumulative state as if the series had run for a while.
func (sl *slot) resetHistogram() {
	h := &sl.hist
	*h = histState{
		offset: -80 + int32(sl.rng.IntN(80)) - histogramBuckets/2,
		rate:   50 + sl.rng.Int64N(500),
	}
	steps := 4 + sl.rng.Int64N(1000)
	for range 4 { // four growths stand in for the steps before the first
		sl.growHistogram(steps / 4)
	}
}

// advanceHistogram adds one step's observations.
func (sl *slot) advanceHistogram() { sl.growHistogram(1) }

// growHistogram adds about steps × rate observations, spread over the
// buckets in a bell shape with noise.
func (sl *slot) growHistogram(steps int64) {
	h := &sl.hist
	n := max(0, steps*h.rate+sl.rng.Int64N(h.rate+1)-h.rate/2)
	// Weights 1,2,..,8,8,..,2,1 (sum 72): a triangle around the middle.
	for i := range histogramBuckets {
		w := int64(min(i, histogramBuckets-1-i) + 1)
		add := n * w / 72
		if add > 0 {
			add += sl.rng.Int64N(add/4+1) - add/8
		}
		add = max(0, add)
		h.counts[i] += add
		// Observations in bucket index b lie in (2^((b-1)/8), 2^(b/8)]: count
		// them at the bucket's geometric middle.
		b := float64(h.offset) + float64(i)
		h.sum += float64(add) * math.Exp2((b-0.5)/float64(int(1)<<histogramSchema))
	}
}

// histogram returns the state as a native histogram (a new one each call).
func (h *histState) histogram() *histogram.Histogram {
	out := &histogram.Histogram{
		CounterResetHint: histogram.UnknownCounterReset,
		Schema:           histogramSchema,
		ZeroThreshold:    1e-128,
		Sum:              h.sum,
		PositiveSpans:    []histogram.Span{{Offset: h.offset, Length: histogramBuckets}},
		PositiveBuckets:  make([]int64, histogramBuckets),
	}
	var prev int64
	for i, c := range h.counts {
		out.Count += uint64(c)
		out.PositiveBuckets[i] = c - prev // delta encoded, as the wire has them
		prev = c
	}
	return out
}
