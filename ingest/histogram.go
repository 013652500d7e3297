package ingest

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"

	"hourglass/series"
)

// HistBatch collects native histogram samples for one append, beside a
// Batch of points: it checks names and timestamps as the Batch does and
// shares its request's count of new series. Not safe for concurrent use.
type HistBatch struct {
	b         *Batch
	samples   []series.HistSample
	pos       []int
	errs      []error
	commit    []error
	n         int
	exemplars []series.ExemplarSample
}

// NewHistBatch returns an empty histogram batch sharing b's writer, name
// rule and request.
func (b *Batch) NewHistBatch() *HistBatch { return &HistBatch{b: b} }

// Len returns the number of samples added, rejected ones included.
func (hb *HistBatch) Len() int { return hb.n }

// Reset empties the batch.
func (hb *HistBatch) Reset() {
	clear(hb.samples)
	hb.samples, hb.pos, hb.errs, hb.n = hb.samples[:0], hb.pos[:0], hb.errs[:0], 0
}

// Add checks a histogram sample as Batch.Add checks a point and queues it;
// exactly one of h and fh must be set. tags may be sorted in place. It
// returns the sample's error if it is rejected now.
func (hb *HistBatch) Add(metric string, tags []series.Tag, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	i, err := hb.next(t)
	if err != nil {
		return err
	}
	b := hb.b
	if err := b.w.check(metric, tags); err != nil {
		hb.errs[i] = err
		return err
	}
	if err := b.checkNames(metric, tags); err != nil {
		hb.errs[i] = err
		return err
	}
	slices.SortFunc(tags, byKey)
	for j := 1; j < len(tags); j++ {
		if tags[j].Key == tags[j-1].Key {
			err := fmt.Errorf("%w: duplicate tag key %q", ErrInvalid, tags[j].Key)
			hb.errs[i] = err
			return err
		}
	}
	l := series.Labels(series.AppendLabels(nil, metric, tags))
	hb.samples = append(hb.samples, series.HistSample{Labels: l, T: t, H: h, FH: fh})
	hb.pos = append(hb.pos, i)
	return nil
}

// AddLabels queues a sample of a series known valid (LastLabels of a batch
// of the same Writer); only the timestamp is checked.
func (hb *HistBatch) AddLabels(l series.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	i, err := hb.next(t)
	if err != nil {
		return err
	}
	hb.samples = append(hb.samples, series.HistSample{Labels: l, T: t, H: h, FH: fh})
	hb.pos = append(hb.pos, i)
	return nil
}

// LastLabels returns the Labels of the last sample added, "" if it was rejected.
func (hb *HistBatch) LastLabels() series.Labels {
	if n := len(hb.pos); n > 0 && hb.pos[n-1] == hb.n-1 {
		return hb.samples[n-1].Labels
	}
	return ""
}

func (hb *HistBatch) next(t int64) (int, error) {
	i := hb.n
	hb.n++
	hb.errs = append(hb.errs, nil)
	if t < 0 || t > MaxTimestamp {
		err := fmt.Errorf("%w: timestamp %d ms is outside the range a row key holds (0 to %d ms, the year 2106)", ErrInvalid, t, MaxTimestamp)
		hb.errs[i] = err
		return i, err
	}
	return i, nil
}

// Commit appends the queued samples through the WAL. The returned error
// means none of them was stored; otherwise Errors says which failed.
func (hb *HistBatch) Commit(ctx context.Context) error {
	if len(hb.samples) == 0 {
		return nil
	}
	hb.commit = append(hb.commit[:0], make([]error, len(hb.samples))...)
	err := hb.b.w.head.AppendHistograms(ctx, hb.samples, hb.commit, &hb.b.req)
	defer clear(hb.commit)
	if err != nil {
		return err
	}
	for j, err := range hb.commit {
		if err != nil {
			hb.errs[hb.pos[j]] = err
		}
	}
	return nil
}

// Errors returns each sample's error (nil for stored ones), in the order added.
func (hb *HistBatch) Errors() []error { return hb.errs }

// AddExemplar queues an exemplar of the series l, which must be Labels a
// batch of the same Writer accepted (LastLabels). Its labels must not
// alias memory the caller reuses.
func (hb *HistBatch) AddExemplar(l series.Labels, labels []series.Tag, v float64, t int64) {
	hb.exemplars = append(hb.exemplars, series.ExemplarSample{Series: l, Exemplar: series.Exemplar{Labels: labels, Value: v, T: t}})
}

// CommitExemplars appends the queued exemplars through the WAL and returns
// how many were kept (see series.Head.AppendExemplars); the error means
// none was.
func (hb *HistBatch) CommitExemplars(ctx context.Context) (int, error) {
	if len(hb.exemplars) == 0 {
		return 0, nil
	}
	defer func() { clear(hb.exemplars); hb.exemplars = hb.exemplars[:0] }()
	return hb.b.w.head.AppendExemplars(ctx, hb.exemplars, &hb.b.req)
}
