package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"hourglass/api/opentsdb"
	"hourglass/downsample"
	"hourglass/ingest"
	"hourglass/internal/quote"
	"hourglass/query"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// openTSDBRetryAfter is the Retry-After, in seconds, of an OpenTSDB 503 or
// 429 that sets none of its own (the decoding budget spent, the storage
// unavailable).
const openTSDBRetryAfter = "2"

// writeOpenTSDBError writes OpenTSDB's error body. The message and the
// details are bounded (quote.Message) whatever input they quote.
func writeOpenTSDBError(w http.ResponseWriter, code int, message, details string) {
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
	var nf *uid.NoSuchNameError
	var ua *downsample.UnknownAggregatorError
	var se *downsample.SpecError
	switch {
	case errors.As(err, &re):
		return re.Status, re.Message, re.Details
	case errors.As(err, &le):
		return http.StatusRequestEntityTooLarge, le.Error(), ""
	case errors.As(err, &nf):
		return http.StatusBadRequest, nf.Error(), ""
	case errors.As(err, &ua):
		return http.StatusBadRequest, ua.Error(), ""
	case errors.As(err, &se):
		return http.StatusBadRequest, se.Error(), ""
	case errors.Is(err, series.ErrDeleteUnfinished):
		// Durable, and finishing in the background: not a failure to retry.
		return http.StatusRequestTimeout, err.Error(), "the delete is in the write-ahead log and completes without the client"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusRequestTimeout, "Query timed out: it ran past the configured query timeout", ""
	case errors.Is(err, ingest.ErrInvalid):
		return http.StatusBadRequest, err.Error(), ""
	case errors.Is(err, uid.ErrFull), errors.Is(err, series.ErrOutOfRetention):
		return http.StatusBadRequest, err.Error(), ""
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, series.ErrClosed):
		return http.StatusServiceUnavailable, "Storage unavailable: " + err.Error(), "retry later"
	}
	return http.StatusInternalServerError, "Storage exception: " + err.Error(), ""
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, details := openTSDBStatus(err)
	if code >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeOpenTSDBError(w, code, msg, details)
}

// notFound answers a path no route took, as OpenTSDB's router would: an
// /api/ path in another case or with a trailing slash is routed again
// (OpenTSDB lower-cases route names and ignores empty path components),
// /api/v0/<x> is /api/<x>, a version above 1 is 501 and one that is not a
// number 400; anything else under /api is 404 "Endpoint not found".
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p != "/api" && !strings.HasPrefix(p, "/api/") {
		if strings.HasPrefix(strings.ToLower(p), "/api/") || strings.EqualFold(p, "/api") {
			s.reroute(w, r, strings.ToLower(p))
			return
		}
		http.NotFound(w, r)
		return
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) >= 2 {
		if v := parts[1]; len(v) > 1 && (v[0] == 'v' || v[0] == 'V') && v[1] >= '0' && v[1] <= '9' {
			n, err := strconv.Atoi(v[1:])
			switch {
			case err != nil:
				writeOpenTSDBError(w, http.StatusBadRequest, "Invalid API version format supplied",
					"API version ["+v[1:]+"] cannot be parsed to an integer")
				return
			case n > 1:
				writeOpenTSDBError(w, http.StatusNotImplemented, "Requested API version is greater than the max implemented",
					fmt.Sprintf("API version [%d] is greater than the max [1]", n))
				return
			case n == 0 && len(parts) > 2:
				s.reroute(w, r, "/api/"+strings.Join(parts[2:], "/"))
				return
			}
		}
	}
	if clean := "/" + strings.ToLower(strings.Join(nonEmptyParts(parts), "/")); clean != p {
		s.reroute(w, r, clean)
		return
	}
	writeOpenTSDBError(w, http.StatusNotFound, "Endpoint not found", "")
}

// reroute serves r again under path p if a route takes it, and answers
// "Endpoint not found" otherwise.
func (s *Server) reroute(w http.ResponseWriter, r *http.Request, p string) {
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = p, ""
	var m mux.RouteMatch
	if s.router.Match(r2, &m) && m.Handler != nil && m.MatchErr == nil {
		s.router.ServeHTTP(w, r2)
		return
	}
	writeOpenTSDBError(w, http.StatusNotFound, "Endpoint not found", "")
}

func nonEmptyParts(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeOpenTSDBError(w, http.StatusMethodNotAllowed, "Method not allowed",
		fmt.Sprintf("The HTTP method [%s] is not permitted for this endpoint", r.Method))
}

// allow wraps h so that other methods get OpenTSDB's 405.
func allow(h http.HandlerFunc, methods ...string) http.HandlerFunc {
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
