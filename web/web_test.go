package web

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

func TestHandler(t *testing.T) {
	r := mux.NewRouter()
	Register(r)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the router's own 404", http.StatusNotFound)
	})
	get := func(method, path string, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w
	}
	for _, c := range []struct {
		name, method, path string
		code               int
		ctype, body        string
	}{
		{"page", "GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="/web/app.js">`},
		{"page by name", "GET", "/index.html", 200, "text/html; charset=utf-8", "<title>hourglass</title>"},
		{"script", "GET", "/web/app.js", 200, "text/javascript; charset=utf-8", "import { Chart"},
		{"chart", "GET", "/web/chart.js", 200, "text/javascript; charset=utf-8", "export class Chart"},
		{"style", "GET", "/web/style.css", 200, "text/css; charset=utf-8", "prefers-color-scheme: dark"},
		{"icon", "GET", "/web/icon.svg", 200, "image/svg+xml", "<svg"},
		{"head", "HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"unknown asset", "GET", "/web/nope.js", 404, "", "404 page not found"},
		{"a directory", "GET", "/web/", 404, "", "404 page not found"},
		{"not the page's", "GET", "/other", 404, "", "the router's own 404"},
		{"post", "POST", "/", 405, "", "method not allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := get(c.method, c.path)
			if w.Code != c.code {
				t.Fatalf("%s %s: %d, want %d", c.method, c.path, w.Code, c.code)
			}
			if c.ctype != "" && w.Header().Get("Content-Type") != c.ctype {
				t.Errorf("Content-Type %q, want %q", w.Header().Get("Content-Type"), c.ctype)
			}
			if !strings.Contains(w.Body.String(), c.body) {
				t.Errorf("body does not contain %q:\n%.300s", c.body, w.Body.String())
			}
		})
	}

	t.Run("revalidation", func(t *testing.T) {
		w := get("GET", "/web/app.js")
		etag := w.Header().Get("ETag")
		if etag == "" || w.Header().Get("Cache-Control") != "no-cache" {
			t.Fatalf("ETag %q, Cache-Control %q", etag, w.Header().Get("Cache-Control"))
		}
		if w := get("GET", "/web/app.js", "If-None-Match", etag); w.Code != http.StatusNotModified {
			t.Errorf("If-None-Match with the ETag: %d, want 304", w.Code)
		}
	})

	t.Run("security headers", func(t *testing.T) {
		w := get("GET", "/")
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("X-Content-Type-Options %q", w.Header().Get("X-Content-Type-Options"))
		}
	})

	t.Run("everything the page loads is served", func(t *testing.T) {
		// The page needs nothing from anywhere else: every URL in its HTML
		// and every module it imports is one of ours.
		seen := map[string]bool{}
		todo := []string{"/"}
		ref := regexp.MustCompile(`(?:src|href)="([^"]+)"|from '([^']+)'|import\('([^']+)'\)`)
		for len(todo) > 0 {
			p := todo[0]
			todo = todo[1:]
			if seen[p] {
				continue
			}
			seen[p] = true
			w := get("GET", p)
			if w.Code != 200 {
				t.Errorf("%s: %d", p, w.Code)
				continue
			}
			for _, m := range ref.FindAllStringSubmatch(w.Body.String(), -1) {
				u := m[1] + m[2] + m[3]
				if strings.HasPrefix(u, "./") {
					u = Prefix + strings.TrimPrefix(u, "./")
				}
				if !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") {
					t.Errorf("%s loads %q, which is not served by hourglass", p, u)
					continue
				}
				todo = append(todo, u)
			}
		}
		for _, want := range []string{"/web/app.js", "/web/chart.js", "/web/format.js", "/web/complete.js", "/web/style.css",
			"/web/state.js", "/web/controls.js", "/web/api.js", "/web/query.js", "/web/errors.js",
			"/web/table.js", "/web/status.js", "/web/start.js", "/web/cardinality.js"} {
			if !seen[want] {
				t.Errorf("%s is not reached from the page", want)
			}
		}
	})
}
