package query

import (
	"cmp"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/chunk"
	"hourglass/series"
)

// Native histograms on the read path (issue 16): a scan keeps a series'
// histogram cells apart from its point cells (the float readers never see
// them), takes the head's histogram samples beside its points, and the
// PromQL iterator of a series that has any merges both kinds in time order.

// histHead is what a head offers for histograms; *series.Head has it.
type histHead interface {
	HistSnapshot(l series.Labels, start, end int64) []chunk.HistPoint
}

// headHistograms takes the head's histogram samples of en into sc.
func (e *Engine) headHistograms(sc *seriesCells, l series.Labels, start, end int64) {
	if hh, ok := e.head.(histHead); ok {
		sc.headHist = hh.HistSnapshot(l, start, end)
	}
}

// histCount returns how many histogram samples sc holds (the cells'
// headers say), for the sample budget.
func (sc *seriesCells) histCount() int {
	n := len(sc.headHist)
	var it chunk.HistIterator
	for _, c := range sc.hist {
		if it.Reset(c.data, c.hour) == nil {
			n += it.Len()
		}
	}
	return n
}

// hasHist reports whether the series has histogram samples in the range.
func (sc *seriesCells) hasHist() bool { return len(sc.hist) > 0 || len(sc.headHist) > 0 }

// histSample is one sample of a series with histograms: a float, or an
// integer or float histogram.
type histSample struct {
	t    int64
	v    float64
	h    *histogram.Histogram
	fh   *histogram.FloatHistogram
	kind chunkenc.ValueType
}

// readHistSeries returns every sample of s in its range, floats and
// histograms, sorted by time, one per timestamp: the later cell wins, the
// head over the store, a histogram over a float of the same timestamp.
func readHistSeries(s *promSeries) ([]histSample, error) {
	sc := s.cells
	var out []histSample
	var p points
	p.reset(sc, s.start, s.end, nil)
	for p.next() {
		out = append(out, histSample{t: p.t, v: p.v.Float(), kind: chunkenc.ValFloat})
	}
	if p.err != nil {
		return nil, p.err
	}
	add := func(hp chunk.HistPoint) {
		if hp.T < s.start || hp.T > s.end {
			return
		}
		smp := histSample{t: hp.T, h: hp.H, fh: hp.FH, kind: chunkenc.ValHistogram}
		if hp.H == nil {
			smp.kind = chunkenc.ValFloatHistogram
		}
		out = append(out, smp)
	}
	for _, c := range sc.hist {
		pts, err := chunk.DecodeHistograms(nil, c.data, c.hour)
		if err != nil {
			return nil, err
		}
		for _, hp := range pts {
			add(hp)
		}
	}
	for _, hp := range sc.headHist {
		add(hp)
	}
	// Stable: among samples of one timestamp the last appended wins.
	slices.SortStableFunc(out, func(a, b histSample) int { return cmp.Compare(a.t, b.t) })
	k := 0
	for i := range out {
		if k > 0 && out[k-1].t == out[i].t {
			if out[i].kind == chunkenc.ValFloat && out[k-1].kind != chunkenc.ValFloat {
				continue // a histogram over a float
			}
			out[k-1] = out[i]
			continue
		}
		out[k] = out[i]
		k++
	}
	return out[:k], nil
}

// promHistIterator iterates the merged samples of a series with
// histograms. Generic over the timestamp type only for go vet's
// stdmethods check, as promIterator; used as promHistIterator[int64].
type promHistIterator[T ~int64] struct {
	samples []histSample
	i       int
	err     error
}

func newPromHistIterator(s *promSeries) chunkenc.Iterator {
	smp, err := readHistSeries(s)
	if err != nil {
		return &promHistIterator[int64]{i: 0, err: promql.ErrStorage{Err: corruptSeries(s.entry, err)}}
	}
	return &promHistIterator[int64]{samples: smp, i: -1}
}

func (it *promHistIterator[T]) cur() chunkenc.ValueType {
	if it.err != nil || it.i < 0 || it.i >= len(it.samples) {
		return chunkenc.ValNone
	}
	return it.samples[it.i].kind
}

// Next advances to the next sample.
func (it *promHistIterator[T]) Next() chunkenc.ValueType {
	if it.err != nil || it.i >= len(it.samples) {
		return chunkenc.ValNone
	}
	it.i++
	return it.cur()
}

// Seek advances to the first sample at t or later; it never moves back.
func (it *promHistIterator[T]) Seek(t T) chunkenc.ValueType {
	if it.err != nil {
		return chunkenc.ValNone
	}
	if it.i < 0 {
		it.i = 0
	}
	for it.i < len(it.samples) && it.samples[it.i].t < int64(t) {
		it.i++
	}
	return it.cur()
}

// At returns the current float sample.
func (it *promHistIterator[T]) At() (int64, float64) {
	s := &it.samples[it.i]
	return s.t, s.v
}

// AtHistogram returns the current integer histogram, copied into h when h
// is not nil.
func (it *promHistIterator[T]) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	s := &it.samples[it.i]
	if s.h == nil {
		return s.t, nil
	}
	if h == nil {
		return s.t, s.h.Copy()
	}
	s.h.CopyTo(h)
	return s.t, h
}

// AtFloatHistogram returns the current histogram as a float histogram,
// converted or copied into fh when fh is not nil.
func (it *promHistIterator[T]) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	s := &it.samples[it.i]
	switch {
	case s.h != nil:
		return s.t, s.h.ToFloat(fh)
	case s.fh == nil:
		return s.t, nil
	case fh == nil:
		return s.t, s.fh.Copy()
	}
	s.fh.CopyTo(fh)
	return s.t, fh
}

// AtT returns the current sample's timestamp.
func (it *promHistIterator[T]) AtT() int64 { return it.samples[it.i].t }

// AtST returns 0: no start timestamps are stored.
func (it *promHistIterator[T]) AtST() int64 { return 0 }

// Err returns the error that ended the iteration.
func (it *promHistIterator[T]) Err() error { return it.err }

// Exemplar is one exemplar of a series (series.Exemplar).
type Exemplar = series.Exemplar

// Exemplars returns the exemplars the head keeps for the series l in
// [start, end], oldest first (none when the head keeps none).
func (e *Engine) Exemplars(l series.Labels, start, end int64) []Exemplar {
	if eh, ok := e.head.(interface {
		Exemplars(l series.Labels, start, end int64) []series.Exemplar
	}); ok {
		return eh.Exemplars(l, start, end)
	}
	return nil
}
