package migrate

import (
	"context"
	"slices"
	"strings"
)

// Label is one name=value pair of a series; the metric name is the label
// __name__, as in Prometheus.
type Label struct {
	Name, Value string
}

// MetricLabel is the name of the label holding the metric name.
const MetricLabel = "__name__"

// Point is one sample. Raw, when set, is the value as the source wrote it
// (an OpenTSDB JSON number such as 42 or 42.5, or "NaN"), so that integers
// stay integers and floats keep every bit on the way through /api/put.
type Point struct {
	T   int64 // Unix milliseconds
	V   float64
	Raw string
}

// Series is what a source hands over for one series in one slice: its
// labels, sorted by name, and points in [slice start, slice end). Skipped
// counts samples the source found but cannot pass on (native histograms).
type Series struct {
	Labels  []Label
	Points  []Point
	Skipped int
}

// Metric is the value of the __name__ label.
func (s *Series) Metric() string {
	for _, l := range s.Labels {
		if l.Name == MetricLabel {
			return l.Value
		}
	}
	return ""
}

// key identifies the series by its labels.
func (s *Series) key() string {
	var b strings.Builder
	for _, l := range s.Labels {
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

func sortLabels(ls []Label) {
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
}

// Source streams the series of one slice: Read calls fn for each, with
// points in [s.Start, s.End) only; fn may keep nothing of the Series after
// it returns. A series may come in several parts (several calls).
type Source interface {
	Read(ctx context.Context, s Slice, fn func(*Series) error) error
}

// Sink writes series to the destination in batches. A Sink is used by one
// worker at a time; Flush writes what is buffered and returns once the
// destination has acknowledged it.
type Sink interface {
	Write(ctx context.Context, s *Series) error
	Flush(ctx context.Context) error
}
