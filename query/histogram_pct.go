package query

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/chunk"
)

// OpenTSDB 2.4 percentiles over histograms (/api/query's `percentiles`,
// issue 16). Histograms written through /api/histogram are stored as
// custom-bucket native histograms; here they are read back as OpenTSDB's
// SimpleHistogram: the finite buckets (lower, upper] with their counts, the
// underflow and overflow buckets left out as OpenTSDB leaves them out of
// its percentiles. The histograms of a group at one output timestamp (the
// point's own, or its downsample bucket's start) are summed bucket by
// bucket (OpenTSDB's only histogram aggregation, SUM), then each
// percentile is SimplePercentile of the sum.

// PctBucket is one finite bucket of a histogram and its count.
type PctBucket struct {
	Low, High float64
	Count     float64
}

// SimplePercentile is OpenTSDB 2.4's SimpleHistogram.percentile: p outside
// [1, 100] is -1; else the buckets are walked in order of their bounds,
// and the first whose running count reaches p percent of the total of all
// buckets answers with its midpoint, (Low+High)/2. No bucket reaching it
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
			return (b.Low + b.High) / 2
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
	s := strconv.FormatFloat(float64(float32(p)), 'f', -1, 32)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return metric + "_pct_" + s
}

// pctAcc sums histograms bucket by bucket.
type pctAcc map[[2]float64]float64

// add adds the finite buckets of one histogram sample.
func (a pctAcc) add(s histSample) {
	var fh *histogram.FloatHistogram
	switch {
	case s.fh != nil:
		fh = s.fh
	case s.h != nil:
		fh = s.h.ToFloat(nil)
	default:
		return
	}
	it := fh.PositiveBucketIterator()
	for it.Next() {
		b := it.At()
		if math.IsInf(b.Lower, 0) || math.IsInf(b.Upper, 0) {
			continue // the underflow or the overflow
		}
		a[[2]float64{b.Lower, b.Upper}] += b.Count
	}
}

func (a pctAcc) buckets() []PctBucket {
	out := make([]PctBucket, 0, len(a))
	for k, c := range a {
		out = append(out, PctBucket{Low: k[0], High: k[1], Count: c})
	}
	SortPctBuckets(out)
	return out
}

// RunPercentiles answers a request's percentiles over its series'
// histograms (numeric points are ignored, as in OpenTSDB): one Result per
// group and percentile, named by PercentileMetric, in the order of pcts.
// The aggregator must be sum or none, a downsample a fixed interval with
// sum (the caller checks). The histograms read are bounded as raw points
// are (-query-max-points, or -query-max-output-points without a
// downsample), the output by -query-max-output-points.
func (e *Engine) RunPercentiles(ctx context.Context, req Request, pcts []float64) ([]Result, error) {
	sel := req.Selector
	if req.Downsample != nil {
		sel.Start = scanStart(req)
	}
	entries := req.Entries
	if entries == nil {
		var err error
		if entries, err = e.selectEntries(sel); err != nil {
			return nil, err
		}
	} else if e.limits.MaxSeries > 0 && len(entries) > e.limits.MaxSeries {
		return nil, e.exceeded(&LimitError{What: "series", Limit: e.limits.MaxSeries, Flag: "-query-max-series", Need: int64(len(entries))})
	}
	lim := e.rawOutputLimit()
	if req.Downsample != nil {
		lim = e.rawLimit()
	}
	scs, err := e.scan(ctx, entries, sel.Start, sel.End, lim, nil, nil)
	if err != nil {
		return nil, err
	}
	n := 0
	for i := range scs {
		n += scs[i].histCount()
	}
	if lim.over(int64(n)) {
		return nil, e.exceeded(lim.err(int64(n)))
	}
	// Per series: its histograms by output timestamp.
	ss := make([]Series, len(entries))
	byTS := make([]map[int64]pctAcc, len(entries))
	for i, en := range entries {
		ss[i] = Series{Labels: en.Labels, TSUID: en.TSUID}
		smp, err := readHistSeries(&promSeries{cells: &scs[i], start: sel.Start, end: sel.End})
		if err != nil {
			return nil, err
		}
		for _, s := range smp {
			if s.kind == chunkenc.ValFloat {
				continue
			}
			t := s.t
			if req.Downsample != nil {
				t -= ((t % req.Downsample.Interval) + req.Downsample.Interval) % req.Downsample.Interval
			}
			if t < req.Start || t > req.End {
				continue
			}
			if byTS[i] == nil {
				byTS[i] = map[int64]pctAcc{}
			}
			if byTS[i][t] == nil {
				byTS[i][t] = pctAcc{}
			}
			byTS[i][t].add(s)
		}
	}
	groups, order := pctGroups(req, ss, byTS)
	return e.pctResults(ctx, req, pcts, ss, byTS, groups, order)
}

// pctGroups groups the series that have histograms by the request's
// group-by keys (each alone with the none aggregator), in key order.
func pctGroups(req Request, ss []Series, byTS []map[int64]pctAcc) (map[string][]int, []string) {
	groups := map[string][]int{}
	var order []string
	none := req.Aggregator == nil || req.Aggregator.IsNone()
	for i, s := range ss {
		if len(byTS[i]) == 0 {
			continue
		}
		var key strings.Builder
		if none {
			key.Write(s.TSUID)
		}
		for _, k := range req.GroupBy {
			v, _ := s.Labels.Get(k)
			key.WriteString(k + "\x00" + v + "\x00")
		}
		k := key.String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	slices.Sort(order)
	return groups, order
}

// pctResults sums each group's histograms per timestamp and writes one
// Result per group and percentile, within -query-max-output-points.
func (e *Engine) pctResults(ctx context.Context, req Request, pcts []float64, ss []Series, byTS []map[int64]pctAcc,
	groups map[string][]int, order []string) ([]Result, error) {
	out := make([]Result, 0, len(order)*len(pcts))
	outPoints := 0
	for _, k := range order {
		members := groups[k]
		sum := map[int64]pctAcc{}
		var tsuids [][]byte
		for _, i := range members {
			tsuids = append(tsuids, ss[i].TSUID)
			for t, acc := range byTS[i] {
				if sum[t] == nil {
					sum[t] = pctAcc{}
				}
				for b, c := range acc {
					sum[t][b] += c
				}
			}
		}
		ts := make([]int64, 0, len(sum))
		for t := range sum {
			ts = append(ts, t)
		}
		slices.Sort(ts)
		if outPoints += len(ts) * len(pcts); e.limits.MaxOutputPoints > 0 && outPoints > e.limits.MaxOutputPoints {
			return nil, e.exceeded(&LimitError{What: "output points", Limit: e.limits.MaxOutputPoints, Flag: "-query-max-output-points",
				Need: int64(outPoints), AtLeast: true, Why: "percentile points"})
		}
		slices.SortFunc(tsuids, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		tags, aggs := groupTags(ss, members)
		rs := make([]Result, len(pcts))
		for j, p := range pcts {
			rs[j] = Result{Metric: PercentileMetric(ss[members[0]].Labels.Metric(), p), Tags: tags, AggregateTags: aggs,
				TSUIDs: tsuids, Points: make([]chunk.Point, 0, len(ts))}
		}
		for _, t := range ts {
			bs := sum[t].buckets()
			for j, p := range pcts {
				rs[j].Points = append(rs[j].Points, chunk.Point{T: t, V: chunk.Float(SimplePercentile(bs, p))})
			}
		}
		out = append(out, rs...)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
