package model

import (
	"fmt"

	"hourglass/internal/errclass"
)

// Kind is a UID name space (uid.Table): metric names, tag keys or tag values.
type Kind uint8

// The name spaces. Their values are part of the on-disk format.
const (
	KindMetric Kind = 0
	KindTagK   Kind = 1
	KindTagV   Kind = 2
)

// Kinds lists the name spaces.
var Kinds = []Kind{KindMetric, KindTagK, KindTagV}

// String returns OpenTSDB's name of the kind ("metrics", "tagk", "tagv").
func (k Kind) String() string {
	switch k {
	case KindMetric:
		return "metrics"
	case KindTagK:
		return "tagk"
	case KindTagV:
		return "tagv"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind accepts OpenTSDB's kind names: metric or metrics, tagk, tagv (any case).
func ParseKind(s string) (Kind, error) {
	switch s {
	case "metric", "metrics", "METRIC", "METRICS", "Metric":
		return KindMetric, nil
	case "tagk", "TAGK":
		return KindTagK, nil
	case "tagv", "TAGV":
		return KindTagV, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrBadKind, s)
}

// The errors of the UID tables (uid re-declares them). They are in the
// class errclass.ErrInvalid: they answer what a client asked for.
var (
	// ErrNoSuchName is returned by lookups of a name that has no UID.
	ErrNoSuchName = errclass.New(errclass.ErrInvalid, "no such name")
	// ErrNoSuchUID is returned by lookups of a UID that has no name.
	ErrNoSuchUID = errclass.New(errclass.ErrInvalid, "no such uid")
	// ErrFull is returned when every UID of a name space is assigned.
	ErrFull = errclass.New(errclass.ErrInvalid, "all unique IDs are already assigned")
	// ErrBadKind is returned for an unknown name space.
	ErrBadKind = errclass.New(errclass.ErrInvalid, "unknown uid type")
	// ErrExists is returned when renaming to a name that already has a UID.
	ErrExists = errclass.New(errclass.ErrInvalid, "name already exists")
)

// NoSuchNameError names the kind and the name that has no UID, in
// OpenTSDB's words: No such name for 'metrics': 'x'.
type NoSuchNameError struct {
	Kind Kind
	Name string
}

func (e *NoSuchNameError) Error() string {
	return fmt.Sprintf("No such name for '%s': '%s'", e.Kind, e.Name)
}

func (e *NoSuchNameError) Unwrap() error { return ErrNoSuchName }

// UIDHex is a UID or a TSUID as OpenTSDB prints it: upper-case hex.
func UIDHex(b []byte) string {
	const digits = "0123456789ABCDEF"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}
