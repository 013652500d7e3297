package prom

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"hourglass/internal/quote"
)

// ErrUnsupportedContentType is returned for a remote-write Content-Type
// that names no message this receiver reads; the edge answers 415.
var ErrUnsupportedContentType = errors.New("unsupported Content-Type")

// MalformedError says that a body is not a well-formed protobuf message of
// the kind expected. Nothing of such a body may be stored.
type MalformedError struct {
	What   string // the message, e.g. "prometheus.WriteRequest"
	Offset int    // byte offset in the decoded body
	Reason string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed %s at byte %d: %s", e.What, e.Offset, e.Reason)
}

// SeriesError says why one series of a write request is invalid.
type SeriesError struct {
	Index  int    // the series' position in the request, from 0
	Labels string // the series as sent, rendered {name="value", ...}
	Reason string
}

func (e *SeriesError) Error() string {
	return fmt.Sprintf("invalid series #%d %s: %s", e.Index, e.Labels, e.Reason)
}

// RequestError says what is wrong with a read request that is well formed
// but cannot be run (a bad matcher, too many queries).
type RequestError struct{ Reason string }

func (e *RequestError) Error() string { return e.Reason }

// maxRendered bounds the rendering of a series in an error message.
const maxRendered = 1024

// FormatLabels writes labels as Prometheus prints a label set, names that
// are not legacy identifiers quoted, values always quoted.
func FormatLabels(ls []Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if b.Len() > maxRendered {
			b.WriteString(", … (" + strconv.Itoa(len(ls)) + " labels)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if isLegacyName(l.Name) {
			b.WriteString(quote.String(l.Name))
		} else {
			b.WriteString(strconv.Quote(quote.String(l.Name)))
		}
		b.WriteByte('=')
		b.WriteString(strconv.Quote(quote.String(l.Value)))
	}
	b.WriteByte('}')
	return b.String()
}

func isLegacyName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
