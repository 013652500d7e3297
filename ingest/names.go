package ingest

import (
	"fmt"

	"hourglass/model"
	"hourglass/series"
)

// NameRule is a dialect's rule for the characters of metric names, tag keys
// and tag values, on top of the limits every dialect shares (UTF-8, not
// empty, -max-name-len). A Batch applies the rule SetNameRule gives it.
type NameRule uint8

const (
	// AnyNames allows any UTF-8 (Prometheus' remote write; the zero value).
	AnyNames NameRule = iota
	// OpenTSDBNames allows ASCII letters and digits, "-_./:" and Unicode
	// letters, as OpenTSDB's Tags.validateString does.
	OpenTSDBNames
)

// Check returns "" if every character of s is allowed by the rule, else
// "illegal character: c" naming the first that is not, in OpenTSDB's words.
// It does not check emptiness or length (the shared limits do).
func (r NameRule) Check(s string) string {
	if r != OpenTSDBNames {
		return ""
	}
	return model.CheckOpenTSDBChars(s)
}

// SetNameRule makes the batch refuse, with ErrInvalid, the points whose
// names the rule does not allow. It holds until changed (Reset keeps it).
func (b *Batch) SetNameRule(r NameRule) { b.names = r }

// checkNames applies the batch's rule to a point's names.
func (b *Batch) checkNames(metric string, tags []series.Tag) error {
	if b.names == AnyNames {
		return nil
	}
	if msg := b.names.Check(metric); msg != "" {
		return fmt.Errorf("%w: metric name %q: %s", ErrInvalid, truncate(metric), msg)
	}
	for _, t := range tags {
		if msg := b.names.Check(t.Key); msg != "" {
			return fmt.Errorf("%w: tag key %q: %s", ErrInvalid, truncate(t.Key), msg)
		}
		if msg := b.names.Check(t.Value); msg != "" {
			return fmt.Errorf("%w: tag value %q: %s", ErrInvalid, truncate(t.Value), msg)
		}
	}
	return nil
}
