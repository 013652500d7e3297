package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"

	"hourglass/api/auth"
)

// TestClusterRoutes: the peer protocol is mounted only with a Peer handler,
// needs admin, and the warnings middleware wraps the other routes.
func TestClusterRoutes(t *testing.T) {
	r := mux.NewRouter()
	(&Server{}).clusterRoutes(r) // a single node: nothing
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/peer/snapshot", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("the peer route on a single node: %d, want 404", rec.Code)
	}

	var scope auth.Scope
	wrapped := 0
	r = mux.NewRouter()
	r.HandleFunc("/api/query", func(http.ResponseWriter, *http.Request) {})
	s := &Server{deps: Deps{
		Peer: http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { scope = scopeOf(req) }),
		PeerMiddleware: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { wrapped++; next.ServeHTTP(w, req) })
		},
	}}
	s.clusterRoutes(r)
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/v1/peer/snapshot", nil))
	if scope != auth.Admin {
		t.Fatalf("the peer protocol needs %v, want admin", scope)
	}
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/query", nil))
	if wrapped != 2 {
		t.Fatalf("the middleware ran %d times for two requests", wrapped)
	}
}
