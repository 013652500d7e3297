// Package errclass holds the two classes an error of hourglass can belong
// to, so that a handler answers any error with one function:
//
//   - ErrInvalid: the client's input is wrong (a 4xx; retrying the same
//     request fails the same way);
//   - ErrUnavailable: the storage cannot serve the request now (a 5xx;
//     the client should retry later).
//
// The sentinel errors of uid, series, store and ingest are made with New,
// which gives each its class while keeping its own identity and message:
// errors.Is(err, series.ErrSeriesLimit) and errors.Is(err, ErrInvalid)
// both hold for a refused series. An error in neither class is a fault of
// the server (a 500).
package errclass

import "errors"

var (
	// ErrInvalid is the class of errors in the client's input.
	ErrInvalid = errors.New("invalid input")
	// ErrUnavailable is the class of errors of storage that cannot serve
	// the request now; the request may succeed when retried.
	ErrUnavailable = errors.New("unavailable")
)

// Class is the class of an error, as Of reports it.
type Class int

const (
	// Internal is an error in neither class: a fault of the server.
	Internal Class = iota
	// Invalid is an error that wraps ErrInvalid.
	Invalid
	// Unavailable is an error that wraps ErrUnavailable.
	Unavailable
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Invalid:
		return "invalid"
	case Unavailable:
		return "unavailable"
	}
	return "internal"
}

// Of returns the class of err. An error that wraps both classes is
// Invalid: retrying it would fail the same way.
func Of(err error) Class {
	switch {
	case err == nil:
		return Internal
	case errors.Is(err, ErrInvalid):
		return Invalid
	case errors.Is(err, ErrUnavailable):
		return Unavailable
	}
	return Internal
}

// IsInvalid reports whether err is in the class ErrInvalid.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }

// IsUnavailable reports whether err is in the class ErrUnavailable.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// sentinel is an error with its own message and identity that belongs to
// a class.
type sentinel struct {
	msg   string
	class error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.class }

// New returns a new sentinel error with the message msg in class, which
// must be ErrInvalid or ErrUnavailable. Each call returns a distinct
// error, as errors.New does.
func New(class error, msg string) error {
	if class != ErrInvalid && class != ErrUnavailable {
		panic("errclass: New with a class that is neither ErrInvalid nor ErrUnavailable")
	}
	return &sentinel{msg: msg, class: class}
}

// wrapped puts an existing error in a class, keeping its message and
// everything it wraps.
type wrapped struct {
	err   error
	class error
}

func (e *wrapped) Error() string   { return e.err.Error() }
func (e *wrapped) Unwrap() []error { return []error{e.err, e.class} }

// AsInvalid returns err in the class ErrInvalid, with err's message;
// errors.Is and errors.As still find everything err wraps. A nil err
// stays nil.
func AsInvalid(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{err: err, class: ErrInvalid}
}

// AsUnavailable returns err in the class ErrUnavailable, as AsInvalid
// does for ErrInvalid.
func AsUnavailable(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{err: err, class: ErrUnavailable}
}
