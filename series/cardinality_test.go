package series_test

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"testing"

	"hourglass/chunk"
	"hourglass/series"
)

// bruteCardinality computes the figures series by series.
func bruteCardinality(ls []series.Labels, limit int) series.CardinalityStats {
	metrics := map[string]uint64{}
	pairs := map[string]uint64{}
	values := map[string]map[string]bool{}
	memory := map[string]uint64{}
	add := func(k, v string) {
		pairs[k+"="+v]++
		if values[k] == nil {
			values[k] = map[string]bool{}
		}
		values[k][v] = true
		memory[k] += uint64(len(k) + len(v))
	}
	for _, l := range ls {
		metrics[l.Metric()]++
		add(series.MetricLabel, l.Metric())
		l.Range(func(k, v string) bool { add(k, v); return true })
	}
	counts := map[string]uint64{}
	for k, vs := range values {
		counts[k] = uint64(len(vs))
	}
	top := func(m map[string]uint64) []series.Stat {
		var out []series.Stat
		for k, n := range m {
			out = append(out, series.Stat{Name: k, Value: n})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Value != out[j].Value {
				return out[i].Value > out[j].Value
			}
			return out[i].Name < out[j].Name
		})
		return out[:min(limit, len(out))]
	}
	return series.CardinalityStats{
		NumSeries: uint64(len(ls)), NumLabelPairs: len(pairs),
		SeriesCountByMetricName: top(metrics), LabelValueCountByLabelName: top(counts),
		MemoryInBytesByLabelName: top(memory), SeriesCountByLabelValuePair: top(pairs),
	}
}

// TestCardinalityMatchesTheSeriesWritten: the figures from the index's
// postings equal those counted series by series, with shared tag pairs
// across metrics, for every limit.
func TestCardinalityMatchesTheSeriesWritten(t *testing.T) {
	e := openEnv(t, t.TempDir(), nil)
	defer e.close()
	empty := e.head.Cardinality(10)
	if empty.NumSeries != 0 || empty.ChunkCount != 0 || empty.MinTime != math.MaxInt64 || empty.MaxTime != math.MinInt64 {
		t.Errorf("empty head: %+v", empty)
	}
	var ls []series.Labels
	var ss []series.Sample
	for m := range 4 {
		for i := range 3 + m*7 {
			tags := []series.Tag{{Key: "host", Value: fmt.Sprintf("h%d", i)}, {Key: "dc", Value: fmt.Sprintf("dc%d", i%3)}}
			if m == 3 {
				tags = append(tags, series.Tag{Key: "id", Value: fmt.Sprintf("id-%03d", i)})
			}
			l := series.MakeLabels(fmt.Sprintf("metric.%d", m), tags)
			ls = append(ls, l)
			ss = append(ss, series.Sample{Labels: l, T: t0 + int64(i)*1000, V: chunk.Int(int64(i))})
		}
	}
	e.append(ss...)
	for _, limit := range []int{1, 3, 10, 1000} {
		got := e.head.Cardinality(limit)
		want := bruteCardinality(ls, limit)
		if got.ChunkCount != int64(len(ls)) || got.MinTime != t0 || got.MaxTime != t0+int64(23)*1000 {
			t.Errorf("limit %d: head span %d chunks, [%d, %d]", limit, got.ChunkCount, got.MinTime, got.MaxTime)
		}
		got.ChunkCount, got.MinTime, got.MaxTime = 0, 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("limit %d:\n got %+v\nwant %+v", limit, got, want)
		}
	}
}
