package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"hourglass/api/auth"
)

// TestEveryRouteHasScope walks the router: every route is in the one table
// of scopes, and a route that is not needs admin.
func TestEveryRouteHasScope(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Conn.DebugPprof = true })
	n := 0
	err := ps.srv.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			t.Errorf("a route without a path template: %v", err)
			return nil
		}
		n++
		if _, ok := routeScopes[tpl]; !ok {
			t.Errorf("route %s has no scope in routeScopes", tpl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 60 {
		t.Fatalf("walked %d routes, expected all of them (>60)", n)
	}
	// Fail closed: a route missing from the table needs admin.
	r := mux.NewRouter()
	var got auth.Scope
	r.HandleFunc("/not/in/the/table", func(_ http.ResponseWriter, r *http.Request) { got = scopeOf(r) })
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/not/in/the/table", nil))
	if got != auth.Admin {
		t.Fatalf("a route not in the table needs %v, want admin", got)
	}
}

func tokenSHA(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

func newAuthServer(t *testing.T, pprofOn bool) http.Handler {
	t.Helper()
	return newAuthServerWith(t, func(c *Config) { c.Conn.DebugPprof = pprofOn })
}

// newAuthServerWith is a server with the tokens <scope>-secret of each
// scope, delete allowed, and mod applied to its configuration.
func newAuthServerWith(t *testing.T, mod func(*Config)) http.Handler {
	t.Helper()
	p := filepath.Join(t.TempDir(), "auth.yml")
	body := "tokens:\n"
	for _, s := range []string{"read", "write", "admin"} {
		body += "  - {name: " + s + ", sha256: " + tokenSHA(s+"-secret") + ", scopes: [" + s + "]}\n"
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Options{AuthConfigFile: p})
	if err != nil {
		t.Fatal(err)
	}
	return newPromServer(t, func(c *Config) {
		c.Conn.Auth, c.AllowDelete = a, true
		mod(c)
	}).h
}

func TestRouteScopes(t *testing.T) {
	h := newAuthServer(t, true)
	cases := []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/healthz", "", "", 200},
		{"GET", "/api/version", "", "", 401},
		{"GET", "/api/version", "write", "", 403},
		{"GET", "/api/version", "read", "", 200},
		{"GET", "/metrics", "read", "", 200},
		{"GET", "/", "read", "", 200},
		{"POST", "/api/put", "read", `{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"}}`, 403},
		{"POST", "/api/put", "write", `{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"}}`, 204},
		{"GET", "/api/uid/assign?metric=x", "write", "", 200},
		{"GET", "/api/uid/assign?metric=y", "read", "", 403},
		{"GET", "/api/dropcaches", "write", "", 403},
		{"GET", "/api/dropcaches", "admin", "", 200},
		{"DELETE", "/api/query?start=1&m=sum:m", "read", "", 403},
		{"GET", "/api/query?start=1&m=sum:m&method_override=delete", "read", "", 403},
		{"POST", "/api/query", "read", `{"start":1,"delete":true,"queries":[{"aggregator":"sum","metric":"m"}]}`, 403},
		{"POST", "/api/v1/admin/tsdb/delete_series?match[]=m", "write", "", 403},
		{"GET", "/debug/pprof/", "read", "", 403},
		{"GET", "/debug/pprof/", "admin", "", 200},
		{"GET", "/no/such/path", "", "", 401},
		{"GET", "/no/such/path", "read", "", 404},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token+"-secret")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s as %q: %d, want %d: %.200s", c.method, c.path, c.token, w.Code, c.want, w.Body.String())
		}
	}
}

func TestPprofOff(t *testing.T) {
	h := newAuthServer(t, false)
	r := httptest.NewRequest("GET", "/debug/pprof/", nil)
	r.Header.Set("Authorization", "Bearer admin-secret")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNotFound {
		t.Fatalf("/debug/pprof/ without -debug.pprof: %d, want 404", w.Code)
	}
}

// TestDenyInDialect: a refusal is written as the route's dialect writes errors.
func TestDenyInDialect(t *testing.T) {
	h := newAuthServer(t, false)
	cases := []struct{ method, path, token, want string }{
		{"GET", "/api/version", "", `"error":{"code":401`},
		{"GET", "/api/dropcaches", "read", `"error":{"code":403`},
		{"GET", "/api/v1/labels", "", `{"status":"error","errorType":"unauthorized"`},
		{"GET", "/api/v1/query?query=up", "write", `{"status":"error","errorType":"forbidden"`},
		{"POST", "/api/v1/write", "read", "read lacks the write scope"},
		{"GET", "/metrics", "", "valid credentials needed"},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, nil)
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token+"-secret")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if !strings.Contains(w.Body.String(), c.want) || (w.Code != 401 && w.Code != 403) {
			t.Errorf("%s %s as %q: %d %q, want it to hold %q", c.method, c.path, c.token, w.Code, w.Body.String(), c.want)
		}
		if c.method == "POST" && strings.HasPrefix(w.Body.String(), "{") {
			t.Errorf("remote write refused with JSON: %q", w.Body.String())
		}
	}
}

// TestCORSPreflightWithAuth: with authentication on, a browser's CORS
// preflight (OPTIONS with Origin and Access-Control-Request-Method, no
// credentials) gets the OpenTSDB API's CORS policy, never a 401 and never
// its endpoint; any other request still needs credentials, and its 401
// carries the CORS headers of an allowed origin so the browser shows it.
func TestCORSPreflightWithAuth(t *testing.T) {
	const origin = "https://grafana.example"
	h := newAuthServerWith(t, func(c *Config) { c.CORSDomains = origin })
	off := newAuthServer(t, false) // -cors-domains ""
	cases := []struct {
		name      string
		h         http.Handler
		method    string
		path      string
		origin    string
		preflight bool
		want      int
		allowed   bool   // Access-Control-Allow-Origin: origin
		body      string // the reply holds it
	}{
		{"query preflight", h, "OPTIONS", "/api/query", origin, true, 200, true, ""},
		{"put preflight", h, "OPTIONS", "/api/put", origin, true, 200, true, ""},
		{"v1 suggest preflight", h, "OPTIONS", "/api/v1/suggest", origin, true, 200, true, ""},
		{"dropcaches preflight runs nothing", h, "OPTIONS", "/api/dropcaches", origin, true, 200, true, ""},
		{"other origin", h, "OPTIONS", "/api/query", "https://evil.example", true, 200, false, "CORS domain not allowed"},
		{"cors off", off, "OPTIONS", "/api/query", origin, true, 405, false, ""},
		{"prometheus route", h, "OPTIONS", "/api/v1/query_range", origin, true, 405, false, "OpenTSDB API only"},
		{"no such path", h, "OPTIONS", "/no/such", origin, true, 405, false, ""},
		{"OPTIONS without Access-Control-Request-Method", h, "OPTIONS", "/api/query", origin, false, 401, true, ""},
		{"GET with Origin", h, "GET", "/api/version", origin, false, 401, true, ""},
		{"GET from another origin", h, "GET", "/api/version", "https://evil.example", false, 401, false, ""},
		{"prometheus GET with Origin", h, "GET", "/api/v1/labels", origin, false, 401, false, ""},
		{"GET dropcaches with Origin", h, "GET", "/api/dropcaches", origin, false, 401, true, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, nil)
		r.Header.Set("Origin", c.origin)
		if c.preflight {
			r.Header.Set("Access-Control-Request-Method", "POST")
			r.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, r)
		got := w.Header().Get("Access-Control-Allow-Origin")
		if w.Code != c.want || (got == c.origin) != c.allowed || !strings.Contains(w.Body.String(), c.body) {
			t.Errorf("%s: %d, Access-Control-Allow-Origin %q, body %.200q; want %d, allowed %v, body with %q",
				c.name, w.Code, got, w.Body.String(), c.want, c.allowed, c.body)
		}
		if c.allowed && c.preflight && (w.Body.Len() != 0 || !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Authorization")) {
			t.Errorf("%s: an allowed preflight gets an empty body and the allowed headers: %q, %q", c.name, w.Body.String(), w.Header())
		}
	}
}
