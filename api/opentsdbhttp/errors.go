package opentsdbhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"hourglass/api/opentsdb"
	"hourglass/internal/errclass"
	"hourglass/internal/quote"
	"hourglass/model"
	"hourglass/query"
)

// openTSDBRetryAfter is the Retry-After, in seconds, of an OpenTSDB 503 or
// 429 that sets none of its own (the decoding budget spent, the storage
// unavailable).
const openTSDBRetryAfter = "2"

// WriteError writes OpenTSDB's error body. The message and the
// details are bounded (quote.Message) whatever input they quote.
func WriteError(w http.ResponseWriter, code int, message, details string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if (code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", openTSDBRetryAfter)
	}
	w.WriteHeader(code)
	_, _ = w.Write(opentsdb.AppendError(nil, code, quote.Message(message), quote.Message(details)))
}

// openTSDBStatus maps an error to the status and message OpenTSDB would use:
// input errors are 4xx, storage errors 5xx so clients retry.
func openTSDBStatus(err error) (int, string, string) {
	var re *opentsdb.RequestError
	var le *query.LimitError
	var pe *query.PlanError
	var qe *query.QueueError
	switch {
	case errors.As(err, &qe):
		return http.StatusServiceUnavailable, qe.Error(), "retry later"
	case errors.As(err, &re):
		return re.Status, re.Message, re.Details
	case errors.As(err, &pe):
		return http.StatusBadRequest, pe.Message, pe.Details
	case errors.As(err, &le):
		return http.StatusRequestEntityTooLarge, le.Error(), ""
	case errors.Is(err, model.ErrDeleteUnfinished):
		// Durable, and finishing in the background: not a failure to retry.
		return http.StatusRequestTimeout, err.Error(), "the delete is in the write-ahead log and completes without the client"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusRequestTimeout, "Query timed out: it ran past the configured query timeout", ""
	case errors.Is(err, context.Canceled):
		// The client went away: nothing failed on our side. 499, as
		// Prometheus' API answers a canceled query.
		return statusClientClosed, "Request canceled by the client", ""
	}
	switch errclass.Of(err) {
	case errclass.Invalid:
		return http.StatusBadRequest, err.Error(), ""
	case errclass.Unavailable:
		return http.StatusServiceUnavailable, "Storage unavailable: " + err.Error(), "retry later"
	}
	return http.StatusInternalServerError, "Storage exception: " + err.Error(), ""
}

func (s *core) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, details := openTSDBStatus(err)
	if code >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	WriteError(w, code, msg, details)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	WriteError(w, http.StatusMethodNotAllowed, "Method not allowed",
		fmt.Sprintf("The HTTP method [%s] is not permitted for this endpoint", r.Method))
}

// Allow wraps h so that other methods get OpenTSDB's 405.
func Allow(h http.HandlerFunc, methods ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, m := range methods {
			if r.Method == m {
				h(w, r)
				return
			}
		}
		methodNotAllowed(w, r)
	}
}

// statusClientClosed is the status of a request its client canceled (nginx's
// and Prometheus' 499): a 4xx, so it is not counted as a storage failure.
const statusClientClosed = 499
