package opentsdb

import (
	"net/http"
	"strings"

	"hourglass/internal/quote"
)

// RequestError is an input error of a whole request: the reply is Status
// (400 unless said otherwise) with OpenTSDB's error body, whose message and
// details are Message and Details. Handlers find it with errors.As and write
// it with AppendJSON.
type RequestError struct {
	Status  int    // HTTP status code of the reply
	Message string // OpenTSDB's message, e.g. "Missing parameter <code>start</code>"
	Details string // optional; omitted from the body when empty
}

func (e *RequestError) Error() string {
	if e.Details != "" {
		return e.Message + ": " + e.Details
	}
	return e.Message
}

// AppendJSON appends e as OpenTSDB's error body,
// {"error":{"code":N,"message":"...","details":"..."}}.
func (e *RequestError) AppendJSON(dst []byte) []byte {
	return AppendError(dst, e.Status, e.Message, e.Details)
}

func badRequest(msg string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Message: msg}
}

func badRequestDetails(msg, details string) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Message: msg, Details: details}
}

// Whole-body errors of /api/put, with OpenTSDB's messages. ParsePut returns
// these very values, so errors.Is works on them.
var (
	ErrMissingContent    = badRequest("Missing request content")
	ErrNotObjectOrArray  = badRequest("The JSON must start as an object or an array")
	ErrUnparseableJSON   = badRequest("Unable to parse the given JSON")
	ErrNoDataPoints      = badRequest("No datapoints found in content")
	ErrMissingSubQueries = badRequest("Missing sub queries")
)

// errMissingMessageContent is what OpenTSDB answers to an empty body on the
// JSON endpoints other than /api/put.
func errMissingMessageContent() *RequestError {
	return badRequestDetails("Missing message content",
		"Supply valid JSON formatted data in the body of your request")
}

func errUnparseable(details string) *RequestError {
	return badRequestDetails("Unable to parse the given JSON", details)
}

// MissingParameter is OpenTSDB's error for a required query-string parameter
// that is absent or empty: "Missing parameter <code>name</code>".
func MissingParameter(name string) *RequestError {
	return badRequest("Missing parameter <code>" + name + "</code>")
}

// PointError is the error of one data point of an /api/put body or one
// telnet put line; its neighbours are not affected.
type PointError struct {
	// Index is the point's position in the body, from 0 (0 when the error
	// comes from DataPoint.Validate).
	Index int
	// Message is OpenTSDB's message, e.g. "Invalid timestamp" or
	// `Invalid metric name ("a b"): illegal character:  `.
	Message string
	// Raw is the point's JSON exactly as sent. It aliases the body given to
	// the decoder: use it (or AppendDatapoint) before reusing that buffer.
	// It is nil for errors that do not come from a JSON body.
	Raw []byte
}

func (e *PointError) Error() string { return e.Message }

// LineError is the error of one telnet line. Error returns the exact reply
// line OpenTSDB sends, without the trailing newline, e.g.
// "put: illegal argument: invalid timestamp: 0".
type LineError struct {
	Reply string
}

func (e *LineError) Error() string { return e.Reply }

func lineErr(kind, msg string) *LineError {
	return &LineError{Reply: "put: " + kind + ": " + quote.Message(msg)}
}

// UnknownCommand returns OpenTSDB's telnet reply (without the newline) to a
// command it does not know: "unknown command: <cmd>.  Try `help'.".
func UnknownCommand(cmd string) string {
	return "unknown command: " + quote.String(cmd) + ".  Try `help'."
}

// HelpReply returns the telnet reply to "help" (without the newline):
// "available commands: " and each command followed by a space, in the order given.
func HelpReply(commands ...string) string {
	var b strings.Builder
	b.WriteString("available commands: ")
	for _, c := range commands {
		b.WriteString(c)
		b.WriteByte(' ')
	}
	return b.String()
}

// DropCachesReply is the telnet reply to "dropcaches", without the newline.
const DropCachesReply = "Caches dropped."
