package query

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/chunk"
)

// BucketKind tells an OpenTSDB bucket's kind, in OpenTSDB's order.
type BucketKind uint8

// The kinds of BucketKey, in the order OpenTSDB lists them.
const (
	Underflow BucketKind = iota
	Regular
	Overflow
)

// BucketKey names one bucket of an OpenTSDB histogram: the underflow, a
// regular bucket (Low, High], or the overflow.
type BucketKey struct {
	Kind      BucketKind
	Low, High float64 // Regular only
}

// compareBucketKeys is OpenTSDB's HistogramBucket order: the underflow,
// the regular buckets by Low then High, the overflow.
func compareBucketKeys(a, b BucketKey) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Low, b.Low); c != 0 {
		return c
	}
	return cmp.Compare(a.High, b.High)
}

// pctAcc sums histograms bucket by bucket, as OpenTSDB's SimpleHistogram
// aggregates them (SUM): a histogram's bucket with a -Inf lower bound is
// its underflow, one with a +Inf upper bound its overflow (how
// /api/histogram's buckets are stored, api/opentsdb's Native), every other
// positive bucket a regular one. A bucket present with count 0 is kept
// (OpenTSDB lists it with showHistogramBuckets); a gap between the
// buckets sent is not stored as a bucket and is not listed.
type pctAcc map[BucketKey]float64

// add adds the buckets of one histogram sample.
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
	a[BucketKey{Kind: Underflow}] += 0
	a[BucketKey{Kind: Overflow}] += 0
	it := fh.PositiveBucketIterator()
	for it.Next() {
		b := it.At()
		switch {
		case math.IsInf(b.Lower, -1):
			a[BucketKey{Kind: Underflow}] += b.Count
		case math.IsInf(b.Upper, 1):
			a[BucketKey{Kind: Overflow}] += b.Count
		default:
			a[BucketKey{Kind: Regular, Low: b.Lower, High: b.Upper}] += b.Count
		}
	}
}

// merge adds o into a.
func (a pctAcc) merge(o pctAcc) {
	for k, c := range o {
		a[k] += c
	}
}

// keys returns a's buckets in OpenTSDB's order.
func (a pctAcc) keys() []BucketKey {
	ks := make([]BucketKey, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compareBucketKeys)
	return ks
}

// buckets returns a's regular buckets, sorted, for SimplePercentile (the
// underflow and the overflow never count in OpenTSDB's percentiles).
func (a pctAcc) buckets() []PctBucket {
	out := make([]PctBucket, 0, len(a))
	for k, c := range a {
		if k.Kind == Regular {
			out = append(out, PctBucket{Low: k.Low, High: k.High, Count: c})
		}
	}
	SortPctBuckets(out)
	return out
}

// HistogramQuery says what a sub-query over histograms answers: its
// percentiles (sorted), and with ShowBuckets each bucket's count.
type HistogramQuery struct {
	Percentiles []float64
	ShowBuckets bool
}

// pctStamp returns the output timestamp of a histogram at t and whether it
// is in the output: its own timestamp in [Start, End] without a
// downsample; its bucket's start in [Start, End] with a fixed or calendar
// interval (in req.Location); with 0all the query's end, for a histogram
// in [Start, End), as OpenTSDB 2.4's HistogramDownsampler stamps its one
// interval (getIntervalTimestamp and clone: query_end, where the numeric
// Downsampler stamps the start).
func pctStamp(req Request, t int64) (int64, bool) {
	d := req.Downsample
	switch {
	case d == nil:
		return t, t >= req.Start && t <= req.End
	case d.All:
		return req.End, t >= req.Start && t < req.End
	}
	s := d.BucketStart(t, req.Location)
	return s, s >= req.Start && s <= req.End
}

// RunPercentiles answers a request over its series' histograms (numeric
// points are ignored, as in OpenTSDB): per group, one Result per
// percentile, named by PercentileMetric, in the order of hq.Percentiles,
// then with hq.ShowBuckets one Result per bucket of the group's first
// histogram, named by BucketMetric, in OpenTSDB's bucket order, its
// counts as integers (0 where a later histogram lacks the bucket). The
// aggregator must be sum or none, a downsample sum (the caller checks).
// The histograms read are bounded as raw points are (-query-max-points,
// or -query-max-output-points without a downsample), the output by
// -query-max-output-points.
func (e *Engine) RunPercentiles(ctx context.Context, req Request, hq HistogramQuery) ([]Result, error) {
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
			t, ok := pctStamp(req, s.t)
			if !ok {
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
	return e.pctResults(ctx, hq, ss, byTS, groups, order)
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

// pctResults sums each group's histograms per timestamp and writes its
// Results (percentiles, then buckets), within -query-max-output-points.
func (e *Engine) pctResults(ctx context.Context, hq HistogramQuery, ss []Series, byTS []map[int64]pctAcc,
	groups map[string][]int, order []string) ([]Result, error) {
	out := make([]Result, 0, len(order)*len(hq.Percentiles))
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
				sum[t].merge(acc)
			}
		}
		ts := make([]int64, 0, len(sum))
		for t := range sum {
			ts = append(ts, t)
		}
		slices.Sort(ts)
		var keys []BucketKey
		if hq.ShowBuckets {
			keys = sum[ts[0]].keys() // OpenTSDB lists the first histogram's buckets
		}
		if outPoints += len(ts) * (len(hq.Percentiles) + len(keys)); e.limits.MaxOutputPoints > 0 && outPoints > e.limits.MaxOutputPoints {
			return nil, e.exceeded(&LimitError{What: "output points", Limit: e.limits.MaxOutputPoints, Flag: "-query-max-output-points",
				Need: int64(outPoints), AtLeast: true, Why: "percentile and bucket points"})
		}
		slices.SortFunc(tsuids, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		tags, aggs := groupTags(ss, members)
		metric := ss[members[0]].Labels.Metric()
		rs := make([]Result, len(hq.Percentiles)+len(keys))
		for j := range rs {
			name := ""
			if j < len(hq.Percentiles) {
				name = PercentileMetric(metric, hq.Percentiles[j])
			} else {
				name = BucketMetric(metric, keys[j-len(hq.Percentiles)])
			}
			rs[j] = Result{Metric: name, Tags: tags, AggregateTags: aggs, TSUIDs: tsuids, Points: make([]chunk.Point, 0, len(ts))}
		}
		for _, t := range ts {
			bs := sum[t].buckets()
			for j, p := range hq.Percentiles {
				rs[j].Points = append(rs[j].Points, chunk.Point{T: t, V: chunk.Float(SimplePercentile(bs, p))})
			}
			for j, key := range keys {
				r := &rs[len(hq.Percentiles)+j]
				r.Points = append(r.Points, chunk.Point{T: t, V: countValue(sum[t][key])})
			}
		}
		out = append(out, rs...)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// countValue is a bucket's count as OpenTSDB writes it, an integer (a
// float histogram's count that is not whole stays a float).
func countValue(c float64) chunk.Value {
	if c == math.Trunc(c) && math.Abs(c) < 1<<63 {
		return chunk.Int(int64(c))
	}
	return chunk.Float(c)
}
