package chunk

import (
	"errors"
	"strconv"
)

// ErrInvalidPoints is wrapped by every error Append returns: the points
// break a precondition (count, order, hour), so the caller's input is wrong.
var ErrInvalidPoints = errors.New("chunk: invalid points")

// ErrCorrupt is wrapped by every *CorruptionError, so callers that do not
// need the offset can test errors.Is(err, chunk.ErrCorrupt).
var ErrCorrupt = errors.New("chunk: corrupt")

// CorruptionError reports a chunk that cannot be decoded: it is truncated,
// holds bits no encoder writes, or decodes to points outside the rules
// (timestamps not increasing or outside the hour).
type CorruptionError struct {
	Offset int    // byte offset in the chunk where decoding stopped
	Reason string // what was wrong, in lower case
}

func (e *CorruptionError) Error() string {
	return "chunk: corrupt at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns ErrCorrupt.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

func corrupt(off int, reason string) error {
	return &CorruptionError{Offset: off, Reason: reason}
}
