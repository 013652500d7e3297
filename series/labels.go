package series

import "hourglass/model"

// Tag is one tag (OpenTSDB) or label (Prometheus) of a series (model.Tag).
type Tag = model.Tag

// Labels names a series: its metric and tags in one canonical string
// (model.Labels).
type Labels = model.Labels

// ErrBadLabels is returned when decoding bytes that are not a Labels encoding.
var ErrBadLabels = model.ErrBadLabels

// MakeLabels returns the Labels of metric and tags (model.MakeLabels).
func MakeLabels(metric string, tags []Tag) Labels { return model.MakeLabels(metric, tags) }

// AppendLabels appends the Labels encoding of metric and tags to dst (model.AppendLabels).
func AppendLabels(dst []byte, metric string, tags []Tag) []byte {
	return model.AppendLabels(dst, metric, tags)
}
