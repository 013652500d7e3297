// Package ingest is the dialect-independent part of the write path: it
// checks the limits every dialect shares, turns decoded points into head
// samples and appends them as one batch, reporting each point's fate.
package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"hourglass/chunk"
	"hourglass/internal/errclass"
	"hourglass/internal/quote"
	"hourglass/series"
)

// Limits every write must respect. They are configurable; zero means the default.
type Limits struct {
	MaxTags    int // tags per series; default 32
	MaxNameLen int // bytes of a metric, tag key or tag value; default 256
}

// DefaultLimits returns the default of every limit: what a zero field
// stands for.
func DefaultLimits() Limits { return Limits{MaxTags: 32, MaxNameLen: 256} }

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxTags <= 0 {
		l.MaxTags = d.MaxTags
	}
	if l.MaxNameLen <= 0 {
		l.MaxNameLen = d.MaxNameLen
	}
	return l
}

// MaxTimestamp is the latest timestamp (ms) a row key can hold: its base
// hour is stored as 32-bit seconds.
const MaxTimestamp = int64(1<<32-1)*1000 + 999

// ErrInvalid wraps every error that rejects a point for what it is; the edge
// maps it to 400 (it is in the class errclass.ErrInvalid). Other errors are
// the storage's and map to 5xx.
var ErrInvalid = errclass.New(errclass.ErrInvalid, "invalid point")

// Writer appends batches of points to a head. It is safe for concurrent use.
type Writer struct {
	head   *series.Head
	limits Limits
}

// NewWriter returns a writer to head.
func NewWriter(head *series.Head, limits Limits) *Writer {
	return &Writer{head: head, limits: limits.withDefaults()}
}

// Limits returns the limits in force.
func (w *Writer) Limits() Limits { return w.limits }

// Batch collects points for one append. Not safe for concurrent use; reuse it with Reset.
type Batch struct {
	w       *Writer
	samples []series.Sample
	pos     []int // index of each sample in the caller's numbering
	errs    []error
	late    []error // errors found by Commit
	commit  []error // Commit's scratch, one per sample
	buf     []byte
	n       int
	req     series.Request // the new series of the request, for its limit
	names   NameRule       // the dialect's character rule (names.go)
}

// NewBatch returns an empty batch.
func (w *Writer) NewBatch() *Batch { return &Batch{w: w} }

// NewRequest empties the batch for a new request: Reset, and the count of
// new series that -max-new-series-per-request bounds starts again.
func (b *Batch) NewRequest() {
	b.Reset()
	b.req.Reset()
}

// NewSeries returns how many series the batch's request has created.
func (b *Batch) NewSeries() int { return b.req.Created() }

// Reset empties the batch for reuse within one request: the count of new
// series goes on (see NewRequest).
func (b *Batch) Reset() {
	clear(b.samples) // drop the references to Labels a caller may have let go
	clear(b.errs)
	clear(b.late)
	b.samples, b.pos, b.errs, b.late, b.n = b.samples[:0], b.pos[:0], b.errs[:0], b.late[:0], 0
}

// Len returns the number of points added, rejected ones included.
func (b *Batch) Len() int { return b.n }

// next numbers a new point and checks its timestamp.
func (b *Batch) next(t int64) (int, error) {
	i := b.n
	b.n++
	b.errs = append(b.errs, nil)
	if t < 0 || t > MaxTimestamp {
		err := fmt.Errorf("%w: timestamp %d ms is outside the range a row key holds (0 to %d ms, the year 2106)", ErrInvalid, t, MaxTimestamp)
		b.errs[i] = err
		return i, err
	}
	return i, nil
}

// Add checks a point against the shared limits and queues it. It returns the
// point's error, if it is rejected now; the point keeps its number in Errors
// either way. tags may be sorted in place.
func (b *Batch) Add(metric string, tags []series.Tag, t int64, v chunk.Value) error {
	i, err := b.next(t)
	if err != nil {
		return err
	}
	if err := b.w.check(metric, tags); err != nil {
		b.errs[i] = err
		return err
	}
	if err := b.checkNames(metric, tags); err != nil {
		b.errs[i] = err
		return err
	}
	// Sorted here, AppendLabels finds them sorted: no sort.Slice, whose
	// reflection allocates.
	if !slices.IsSortedFunc(tags, byKey) {
		slices.SortFunc(tags, byKey)
	}
	b.buf = series.AppendLabels(b.buf[:0], metric, tags)
	for j := 1; j < len(tags); j++ {
		if tags[j].Key == tags[j-1].Key {
			err := fmt.Errorf("%w: duplicate tag key %q", ErrInvalid, tags[j].Key)
			b.errs[i] = err
			return err
		}
	}
	b.samples = append(b.samples, series.Sample{Labels: series.Labels(b.buf), T: t, V: v})
	b.pos = append(b.pos, i)
	return nil
}

// AddLabels queues a point of the series l, which must be Labels that a
// batch of the same Writer gave for an accepted point (see LastLabels): a
// series known to pass the checks, named the way Add names it. Only the
// timestamp is checked. A dialect that remembers its series uses it to look
// a series up once per point, not twice.
func (b *Batch) AddLabels(l series.Labels, t int64, v chunk.Value) error {
	return b.AddHinted(l, nil, t, v)
}

// Known is what a dialect's decoder remembers beside a series it has seen
// (its SetRef): the Labels the batch gave the series' last accepted point
// and the head's hint for them. AddKnown queues a point of it.
type Known struct {
	Labels series.Labels
	Hint   series.Hint
}

// AddKnown is AddLabels for a remembered series: its points skip the
// checks and the head's lookup too.
func (b *Batch) AddKnown(k *Known, t int64, v chunk.Value) error {
	return b.AddHinted(k.Labels, &k.Hint, t, v)
}

// AddHinted is AddLabels with a series.Hint the caller keeps for the series
// l: its points then skip the head's lookup of l.
func (b *Batch) AddHinted(l series.Labels, hint *series.Hint, t int64, v chunk.Value) error {
	i, err := b.next(t)
	if err != nil {
		return err
	}
	b.samples = append(b.samples, series.Sample{Labels: l, T: t, V: v, Hint: hint})
	b.pos = append(b.pos, i)
	return nil
}

// LastLabels returns the Labels of the last point added, "" if it was rejected.
func (b *Batch) LastLabels() series.Labels {
	if n := len(b.pos); n > 0 && b.pos[n-1] == b.n-1 {
		return b.samples[n-1].Labels
	}
	return ""
}

func byKey(a, b series.Tag) int { return strings.Compare(a.Key, b.Key) }

// Reject records an error for a point that was not added (a decoding error).
func (b *Batch) Reject(err error) {
	b.errs = append(b.errs, err)
	b.n++
}

func (w *Writer) check(metric string, tags []series.Tag) error {
	if metric == "" {
		return fmt.Errorf("%w: empty metric name", ErrInvalid)
	}
	if len(metric) > w.limits.MaxNameLen {
		return fmt.Errorf("%w: metric name of %d bytes is longer than the limit of %d", ErrInvalid, len(metric), w.limits.MaxNameLen)
	}
	if !utf8.ValidString(metric) {
		return fmt.Errorf("%w: metric name %q is not valid UTF-8", ErrInvalid, truncate(metric))
	}
	if len(tags) > w.limits.MaxTags {
		return fmt.Errorf("%w: %d tags, more than the limit of %d", ErrInvalid, len(tags), w.limits.MaxTags)
	}
	for _, t := range tags {
		if len(t.Key) > w.limits.MaxNameLen || len(t.Value) > w.limits.MaxNameLen {
			return fmt.Errorf("%w: tag %q of more than %d bytes", ErrInvalid, truncate(t.Key+"="+t.Value), w.limits.MaxNameLen)
		}
		if t.Key == "" || t.Value == "" {
			return fmt.Errorf("%w: tag %q has an empty key or value", ErrInvalid, truncate(t.Key+"="+t.Value))
		}
		if !utf8.ValidString(t.Key) || !utf8.ValidString(t.Value) {
			return fmt.Errorf("%w: tag %q is not valid UTF-8", ErrInvalid, truncate(t.Key+"="+t.Value))
		}
	}
	return nil
}

func truncate(s string) string { return quote.String(s) }

// Commit appends the queued points. The returned error means none of them
// was stored (the WAL failed); otherwise Errors says which points failed.
func (b *Batch) Commit(ctx context.Context) error {
	if len(b.samples) == 0 {
		return nil
	}
	b.commit = append(b.commit[:0], make([]error, len(b.samples))...)
	errs := b.commit
	err := b.w.head.AppendRequest(ctx, b.samples, errs, &b.req)
	defer clear(errs)
	if err != nil {
		return err
	}
	for j, err := range errs {
		if err != nil {
			b.errs[b.pos[j]] = err
			b.late = append(b.late, err)
		}
	}
	return nil
}

// CommitErrors returns the errors Commit found, for points that passed Add
// (a full UID space, a new series over a series limit: errors.Is
// series.ErrSeriesLimit), in order.
func (b *Batch) CommitErrors() []error { return b.late }

// Errors returns each point's error (nil for stored points), in the order added.
func (b *Batch) Errors() []error { return b.errs }

// Failed returns how many points were rejected.
func (b *Batch) Failed() int {
	n := 0
	for _, e := range b.errs {
		if e != nil {
			n++
		}
	}
	return n
}
