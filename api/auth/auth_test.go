package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/bcrypt"
)

func hash(t testing.TB, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func sha(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

func write(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestAuth(t testing.TB) (*Authenticator, *prometheus.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	webPath := write(t, dir, "web.yml", "basic_auth_users:\n  reader: "+hash(t, "rpw")+"\n  writer: "+hash(t, "wpw")+"\n  plain: "+hash(t, "ppw")+"\n")
	authPath := write(t, dir, "auth.yml", `users:
  reader: [read]
  writer: [write, read]
tokens:
  - name: adm
    sha256: `+sha("admin-token")+`
    scopes: [admin]
  - name: bc
    bcrypt: `+hash(t, "bcrypt-token")+`
    scopes: [write]
`)
	reg := prometheus.NewRegistry()
	a, err := New(Options{WebConfigFile: webPath, AuthConfigFile: authPath, Registerer: reg, ReloadInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return a, reg, authPath
}

func TestMiddleware(t *testing.T) {
	a, _, _ := newTestAuth(t)
	need := map[string]Scope{"/r": Read, "/w": Write, "/a": Admin, "/open": Open}
	h := a.Middleware(func(r *http.Request) Scope { return need[r.URL.Path] }, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := need[r.URL.Path]; s != Open && !Has(r.Context(), s) {
			t.Errorf("%s: passed without the scope in the context", r.URL.Path)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	cases := []struct {
		name, path, user, pass, bearer string
		want                           int
	}{
		{"no credentials", "/r", "", "", "", 401},
		{"open needs none", "/open", "", "", "", 204},
		{"wrong password", "/r", "reader", "nope", "", 401},
		{"unknown user", "/r", "ghost", "rpw", "", 401},
		{"wrong token", "/a", "", "", "not-a-token", 401},
		{"wrong scope basic", "/w", "reader", "rpw", "", 403},
		{"wrong scope token", "/r", "", "", "admin-token", 403},
		{"default scope is read", "/r", "plain", "ppw", "", 204},
		{"default scope is only read", "/w", "plain", "ppw", "", 403},
		{"right basic", "/r", "reader", "rpw", "", 204},
		{"right basic write", "/w", "writer", "wpw", "", 204},
		{"right sha token", "/a", "", "", "admin-token", 204},
		{"right bcrypt token", "/w", "", "", "bcrypt-token", 204},
		{"right bcrypt token again (cached)", "/w", "", "", "bcrypt-token", 204},
		{"wrong bcrypt-like token", "/w", "", "", "bcrypt-tokeN", 401},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", c.path, nil)
		if c.user != "" {
			r.SetBasicAuth(c.user, c.pass)
		}
		if c.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+c.bearer)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: got %d, want %d (%s)", c.name, w.Code, c.want, w.Body.String())
		}
		if c.want == 401 && !strings.Contains(strings.Join(w.Header().Values("WWW-Authenticate"), ","), "Basic") {
			t.Errorf("%s: 401 without WWW-Authenticate: %v", c.name, w.Header())
		}
	}
}

func TestFailuresCounted(t *testing.T) {
	a, reg, _ := newTestAuth(t)
	h := a.Middleware(func(*http.Request) Scope { return Write }, nil, http.NotFoundHandler())
	r := httptest.NewRequest("GET", "/", nil)
	h.ServeHTTP(httptest.NewRecorder(), r)
	r = httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth("reader", "rpw")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if n := testutil.ToFloat64(a.failures.WithLabelValues(ReasonMissing)); n != 1 {
		t.Errorf("missing_credentials = %v, want 1", n)
	}
	if n := testutil.ToFloat64(a.failures.WithLabelValues(ReasonMissingScope)); n != 1 {
		t.Errorf("missing_scope = %v, want 1", n)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestReload(t *testing.T) {
	a, _, authPath := newTestAuth(t)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer new-token")
	if _, reason := a.Authenticate(r); reason != ReasonBadToken {
		t.Fatalf("before the change: %q", reason)
	}
	body := "tokens:\n  - name: n\n    sha256: " + sha("new-token") + "\n    scopes: [read]\n"
	if err := os.WriteFile(authPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// A modification time in the same tick as the first write is still told
	// apart by the size; wait out the reload interval.
	time.Sleep(5 * time.Millisecond)
	if id, reason := a.Authenticate(r); reason != "" || id.Name != "n" {
		t.Fatalf("after the change: %+v %q", id, reason)
	}
	// A broken file keeps the last good configuration.
	if err := os.WriteFile(authPath, []byte("tokens: [ {name: x, scopes: [nope]} ]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if id, reason := a.Authenticate(r); reason != "" || id.Name != "n" {
		t.Fatalf("after a broken change: %+v %q", id, reason)
	}
	if n := testutil.ToFloat64(a.reloads.WithLabelValues("failure")); n != 1 {
		t.Errorf("reload failures = %v", n)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	web := write(t, dir, "web.yml", "basic_auth_users:\n  u: "+hash(t, "x")+"\n")
	cases := map[string]struct{ web, auth, want string }{
		"bad bcrypt in web config":  {write(t, dir, "w2.yml", "basic_auth_users:\n  u: plain\n"), "", "-web.config.file"},
		"unknown key in web config": {write(t, dir, "w3.yml", "basic_auth_userz:\n  u: x\n"), "", "basic_auth_userz"},
		"scopes for no user":        {web, write(t, dir, "a1.yml", "users:\n  v: [read]\n"), `"v" has scopes but no password`},
		"unknown scope":             {web, write(t, dir, "a2.yml", "users:\n  u: [root]\n"), `unknown scope "root"`},
		"token without hash":        {"", write(t, dir, "a3.yml", "tokens:\n  - name: t\n    scopes: [read]\n"), "needs sha256 or bcrypt"},
		"token short sha":           {"", write(t, dir, "a4.yml", "tokens:\n  - name: t\n    sha256: abc\n    scopes: [read]\n"), "64 hex digits"},
		"token without scopes":      {"", write(t, dir, "a5.yml", "tokens:\n  - name: t\n    sha256: "+sha("x")+"\n"), "needs scopes"},
		"unknown key in auth":       {"", write(t, dir, "a6.yml", "token: []\n"), "token"},
		"missing tls cert":          {write(t, dir, "w4.yml", "tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n"), "", "nope.crt"},
	}
	for name, c := range cases {
		_, err := New(Options{WebConfigFile: c.web, AuthConfigFile: c.auth})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", name, err, c.want)
		}
	}
	a, err := New(Options{WebConfigFile: web})
	if err != nil || !a.Enabled() || a.TLSConfig() != nil {
		t.Fatalf("a web config with users only: %v enabled=%v", err, a != nil && a.Enabled())
	}
}

func TestOffAdmitsAll(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Options{WebConfigFile: write(t, dir, "web.yml", "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Middleware(func(*http.Request) Scope { return Admin }, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Has(r.Context(), Admin) {
			t.Error("auth off: the request does not hold admin")
		}
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || w.Header().Get("X-Frame-Options") != "deny" {
		t.Fatalf("got %d %v", w.Code, w.Header())
	}
}

// BenchmarkAuthenticate is the cost a request pays: a sha256 token, and a
// basic-auth user whose bcrypt comparison is remembered.
func BenchmarkAuthenticate(b *testing.B) {
	a, _, _ := newTestAuth(b)
	for _, c := range []struct{ name, user, pass, token string }{
		{"sha256-token", "", "", "admin-token"},
		{"basic-cached", "reader", "rpw", ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		} else {
			r.SetBasicAuth(c.user, c.pass)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, reason := a.Authenticate(r); reason != "" {
					b.Fatal(reason)
				}
			}
		})
	}
}

// TestReloadWebConfig: a user added to the web configuration file can log in
// once the file is re-read, with the default scope.
func TestReloadWebConfig(t *testing.T) {
	dir := t.TempDir()
	webPath := write(t, dir, "web.yml", "basic_auth_users:\n  a: "+hash(t, "apw")+"\n")
	a, err := New(Options{WebConfigFile: webPath, ReloadInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth("newcomer", "npw")
	if _, reason := a.Authenticate(r); reason != ReasonUnknownUser {
		t.Fatalf("before: %q", reason)
	}
	write(t, dir, "web.yml", "basic_auth_users:\n  a: "+hash(t, "apw")+"\n  newcomer: "+hash(t, "npw")+"\n")
	time.Sleep(5 * time.Millisecond)
	if id, reason := a.Authenticate(r); reason != "" || id.Scopes&DefaultUserScopes == 0 || id.Scopes&Write != 0 {
		t.Fatalf("after: %+v %q", id, reason)
	}
}
