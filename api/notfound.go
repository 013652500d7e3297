package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"hourglass/api/opentsdbhttp"
)

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
				opentsdbhttp.WriteError(w, http.StatusBadRequest, "Invalid API version format supplied",
					"API version ["+v[1:]+"] cannot be parsed to an integer")
				return
			case n > 1:
				opentsdbhttp.WriteError(w, http.StatusNotImplemented, "Requested API version is greater than the max implemented",
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
	opentsdbhttp.WriteError(w, http.StatusNotFound, "Endpoint not found", "")
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
	opentsdbhttp.WriteError(w, http.StatusNotFound, "Endpoint not found", "")
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
