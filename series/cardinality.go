package series

import (
	"container/heap"
	"math"
	"sort"

	"hourglass/model"
)

// MetricLabel is the label name the metric has in Prometheus' terms, under
// which cardinality figures count metric names.
const MetricLabel = "__name__"

// Stat is one figure of a cardinality list: a name and its count (model.Stat).
type Stat = model.Stat

// CardinalityStats are the figures of Prometheus' /api/v1/status/tsdb,
// computed from the series index (model.CardinalityStats).
type CardinalityStats = model.CardinalityStats

// Cardinality returns the index's cardinality figures, each list cut to
// limit entries. It walks the postings of the index under its read lock,
// not the series one by one: its time is in the number of distinct label
// pairs per metric, and the memory it takes beyond its answer is one count
// per distinct label pair, less than what the index holds for them.
func (h *Head) Cardinality(limit int) CardinalityStats {
	st := h.index.cardinality(limit)
	st.ChunkCount, st.MinTime, st.MaxTime = h.headSpan()
	return st
}

func (ix *Index) cardinality(limit int) CardinalityStats {
	type pair struct{ name, value string }
	values := map[string]uint64{} // distinct values per label name
	memory := map[string]uint64{}
	metrics := newTopK(limit)
	ix.mu.RLock()
	size := len(ix.metrics)
	for _, mi := range ix.metrics {
		size += len(mi.postings)
	}
	pairs := make(map[pair]uint64, size) // at most this many: the map never grows
	st := CardinalityStats{NumSeries: uint64(ix.count)}
	for m, mi := range ix.metrics {
		n := uint64(len(mi.series))
		if n == 0 {
			continue
		}
		metrics.push(Stat{Name: m, Value: n})
		pairs[pair{MetricLabel, m}] += n
		values[MetricLabel]++
		memory[MetricLabel] += uint64(len(MetricLabel)+len(m)) * n
		for t, es := range mi.postings {
			if len(es) == 0 {
				continue
			}
			p := pair{t.Key, t.Value}
			if _, seen := pairs[p]; !seen {
				values[t.Key]++
			}
			pairs[p] += uint64(len(es))
			memory[t.Key] += uint64(len(t.Key)+len(t.Value)) * uint64(len(es))
		}
	}
	ix.mu.RUnlock()
	st.NumLabelPairs = len(pairs)
	st.SeriesCountByMetricName = metrics.sorted()
	top := newTopK(limit)
	for p, n := range pairs {
		if top.wants(n) { // the name is made only for a pair that may be kept
			top.push(Stat{Name: p.name + "=" + p.value, Value: n})
		}
	}
	st.SeriesCountByLabelValuePair = top.sorted()
	st.LabelValueCountByLabelName = topOf(values, limit)
	st.MemoryInBytesByLabelName = topOf(memory, limit)
	return st
}

// headSpan returns the chunks in the head and the oldest and newest of
// their points.
func (h *Head) headSpan() (chunks, minT, maxT int64) {
	minT, maxT = math.MaxInt64, math.MinInt64
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, s := range sh.m {
			s.mu.Lock()
			for _, c := range s.pending {
				chunks++
				if len(c.pts) > 0 {
					minT = min(minT, c.pts[0].T)
					maxT = max(maxT, c.pts[len(c.pts)-1].T)
				}
			}
			for _, c := range s.open {
				chunks++
				if lo, hi, ok := c.span(); ok {
					minT = min(minT, lo)
					maxT = max(maxT, hi)
				}
			}
			s.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	return chunks, minT, maxT
}

func topOf(m map[string]uint64, limit int) []Stat {
	top := newTopK(limit)
	for k, n := range m {
		top.push(Stat{Name: k, Value: n})
	}
	return top.sorted()
}

// topK keeps the limit largest stats pushed: a min-heap whose root is the
// one to drop next.
type topK struct {
	limit int
	h     statHeap
}

func newTopK(limit int) *topK { return &topK{limit: max(limit, 0)} }

// less orders stats by count, then by name descending, so that among equal
// counts the first names by name are kept.
func less(a, b Stat) bool {
	if a.Value != b.Value {
		return a.Value < b.Value
	}
	return a.Name > b.Name
}

// wants reports whether a stat of count n may be kept: the heap is not
// full, or n is at least its smallest count (a tie is settled by name).
func (t *topK) wants(n uint64) bool {
	return t.limit > 0 && (len(t.h) < t.limit || n >= t.h[0].Value)
}

func (t *topK) push(s Stat) {
	switch {
	case t.limit == 0:
	case len(t.h) < t.limit:
		heap.Push(&t.h, s)
	case less(t.h[0], s):
		t.h[0] = s
		heap.Fix(&t.h, 0)
	}
}

// sorted returns the stats kept, the largest first.
func (t *topK) sorted() []Stat {
	out := append([]Stat(nil), t.h...)
	sort.Slice(out, func(i, j int) bool { return less(out[j], out[i]) })
	return out
}

type statHeap []Stat

func (h statHeap) Len() int           { return len(h) }
func (h statHeap) Less(i, j int) bool { return less(h[i], h[j]) }
func (h statHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *statHeap) Push(x any)        { *h = append(*h, x.(Stat)) }
func (h *statHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
