package downsample

import (
	"hourglass/internal/errclass"
	"strconv"
)

// Input errors. Callers map them to 400 responses; match them with errors.Is
// or errors.As.
var (
	// ErrUnknownAggregator is wrapped by every error that names an
	// aggregator that does not exist (see UnknownAggregatorError).
	ErrUnknownAggregator = errclass.New(errclass.ErrInvalid, "no such aggregation function")

	// ErrInvalidSpec is wrapped by every error from ParseSpec (see SpecError).
	ErrInvalidSpec = errclass.New(errclass.ErrInvalid, "invalid downsample spec")
)

// UnknownAggregatorError reports an aggregator name that Lookup does not know.
// Its message is OpenTSDB's own, "No such aggregation function: <name>",
// because clients match on it. It unwraps to ErrUnknownAggregator.
type UnknownAggregatorError struct {
	Name string
}

func (e *UnknownAggregatorError) Error() string {
	return "No such aggregation function: " + e.Name
}

// Unwrap returns ErrUnknownAggregator.
func (e *UnknownAggregatorError) Unwrap() error { return ErrUnknownAggregator }

// SpecError reports what was wrong with a downsample spec. It unwraps to
// ErrInvalidSpec and, when the cause was an unknown aggregator, to the
// *UnknownAggregatorError as well.
type SpecError struct {
	Spec   string // the spec as given
	Reason string // what was wrong, in lower case
	Err    error  // optional underlying error
}

func (e *SpecError) Error() string {
	return "invalid downsample spec " + strconv.Quote(e.Spec) + ": " + e.Reason
}

// Unwrap returns ErrInvalidSpec and the underlying error, if any.
func (e *SpecError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidSpec, e.Err}
	}
	return []error{ErrInvalidSpec}
}
