// Package auth authenticates and authorises hourglass's callers: HTTP basic
// auth with the bcrypt hashes of a Prometheus web configuration file (read
// with github.com/prometheus/exporter-toolkit), bearer tokens, and the scopes
// (read, write, admin) each credential holds. Both files are re-read when
// they change. It also builds the TLS configuration of that web
// configuration file. It knows nothing of hourglass's routes: the caller
// tells the middleware which scope a request needs.
package auth

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
)

// Scope is a set of permissions; a credential holds some, a route needs one.
type Scope uint8

// The scopes. Each is granted on its own: admin does not imply write or read.
const (
	// Read: queries, suggest, lookup, series, labels, the web page, /metrics.
	Read Scope = 1 << iota
	// Write: put, remote write, telnet, annotation and metadata writes, uid/assign.
	Write
	// Admin: delete, dropcaches, uid/rename, admin APIs, pprof.
	Admin
	// Any is needed by a path no route takes: any valid credential may learn it is not found.
	Any
	// Open needs no credential (/healthz).
	Open Scope = 0
)

// String names the scopes of s, comma-separated.
func (s Scope) String() string {
	if s == Open {
		return "open"
	}
	var names []string
	for _, n := range scopeNames {
		if s&n.s != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

var scopeNames = []struct {
	name string
	s    Scope
}{{"read", Read}, {"write", Write}, {"admin", Admin}, {"any", Any}}

// ParseScopes turns scope names into a Scope.
func ParseScopes(names []string) (Scope, error) {
	var s Scope
	for _, n := range names {
		found := false
		for _, sn := range scopeNames[:3] {
			if strings.EqualFold(strings.TrimSpace(n), sn.name) {
				s |= sn.s
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown scope %q (read, write or admin)", n)
		}
	}
	return s, nil
}

// DefaultUserScopes is what a basic-auth user of the web configuration who
// is not listed in the auth configuration's users may do.
const DefaultUserScopes = Read

// FileConfig is the auth configuration file (-auth.config.file):
//
//	users:            # scopes of the basic_auth_users of -web.config.file
//	  grafana: [read]
//	  ops: [read, write, admin]
//	tokens:           # bearer tokens (Authorization: Bearer <token>)
//	  - name: prometheus
//	    sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	    scopes: [write]
//	  - name: script
//	    bcrypt: $2y$10$...
//	    scopes: [read]
type FileConfig struct {
	Users  map[string][]string `yaml:"users"`
	Tokens []TokenConfig       `yaml:"tokens"`
}

// TokenConfig is one bearer token: its name (for logs), the hash of its
// secret (exactly one of SHA256, hex, or Bcrypt) and its scopes.
type TokenConfig struct {
	Name   string   `yaml:"name"`
	SHA256 string   `yaml:"sha256"`
	Bcrypt string   `yaml:"bcrypt"`
	Scopes []string `yaml:"scopes"`
}

type user struct {
	hash   []byte
	scopes Scope
}

type token struct {
	name   string
	sha    []byte // sha256 of the secret, or nil
	bcrypt []byte // bcrypt hash of the secret, or nil
	scopes Scope
}

// state is what both files say at one time.
type state struct {
	users   map[string]user
	tokens  []token
	headers map[string]string
	web     *web.Config // nil without -web.config.file
	tls     *tls.Config // nil when TLS is off
}

func (st *state) enabled() bool { return len(st.users) > 0 || len(st.tokens) > 0 }

// loadWeb reads a Prometheus web configuration file: validated by
// exporter-toolkit (users' bcrypt hashes, headers, TLS files), then parsed as
// it parses it, strictly and with its defaults.
func loadWeb(path string) (*web.Config, *tls.Config, error) {
	if err := web.Validate(path); err != nil {
		return nil, nil, fmt.Errorf("-web.config.file %s: %w", path, err)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-web.config.file: %w", err)
	}
	c := &web.Config{
		TLSConfig:  web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
		HTTPConfig: web.HTTPConfig{HTTP2: true},
	}
	if err := yaml.UnmarshalStrict(content, c); err != nil {
		return nil, nil, fmt.Errorf("-web.config.file %s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	if !c.TLSConfig.IsEnabled() {
		return c, nil, nil
	}
	tc, err := web.ConfigToTLSConfig(&c.TLSConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("-web.config.file %s: tls_server_config: %w", path, err)
	}
	// The line protocol shares the port, and connections are told apart
	// after the handshake: HTTP/1.1 only.
	tc.NextProtos = []string{"http/1.1"}
	return c, tc, nil
}

// loadAuth reads an auth configuration file.
func loadAuth(path string) (*FileConfig, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-auth.config.file: %w", err)
	}
	var fc FileConfig
	if err := yaml.UnmarshalStrict(content, &fc); err != nil {
		return nil, fmt.Errorf("-auth.config.file %s: %w", path, err)
	}
	return &fc, nil
}

// load reads both files (either may be "") into a state, or says what is wrong.
func load(webPath, authPath string) (*state, error) {
	st := &state{users: map[string]user{}}
	if webPath != "" {
		wc, tc, err := loadWeb(webPath)
		if err != nil {
			return nil, err
		}
		st.web, st.tls, st.headers = wc, tc, wc.HTTPConfig.Header
		for name, h := range wc.Users {
			st.users[name] = user{hash: []byte(h), scopes: DefaultUserScopes}
		}
	}
	if authPath == "" {
		return st, nil
	}
	fc, err := loadAuth(authPath)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(fc.Users))
	for n := range fc.Users {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		u, ok := st.users[n]
		if !ok {
			return nil, fmt.Errorf("-auth.config.file %s: users: %q has scopes but no password in basic_auth_users of -web.config.file", authPath, n)
		}
		if u.scopes, err = ParseScopes(fc.Users[n]); err != nil {
			return nil, fmt.Errorf("-auth.config.file %s: users: %q: %w", authPath, n, err)
		}
		st.users[n] = u
	}
	seen := map[string]bool{}
	for i, tcfg := range fc.Tokens {
		t, err := compileToken(tcfg)
		if err != nil {
			return nil, fmt.Errorf("-auth.config.file %s: tokens[%d] (%q): %w", authPath, i, tcfg.Name, err)
		}
		if seen[t.name] {
			return nil, fmt.Errorf("-auth.config.file %s: tokens[%d]: name %q used twice", authPath, i, t.name)
		}
		seen[t.name] = true
		st.tokens = append(st.tokens, t)
	}
	return st, nil
}

func compileToken(c TokenConfig) (token, error) {
	t := token{name: c.Name}
	if c.Name == "" {
		return t, errors.New("a token needs a name")
	}
	switch {
	case c.SHA256 != "" && c.Bcrypt != "":
		return t, errors.New("give sha256 or bcrypt, not both")
	case c.SHA256 != "":
		b, err := hex.DecodeString(strings.TrimSpace(c.SHA256))
		if err != nil || len(b) != sha256.Size {
			return t, errors.New("sha256 must be 64 hex digits (the SHA-256 of the token, e.g. from sha256sum)")
		}
		t.sha = b
	case c.Bcrypt != "":
		if _, err := bcrypt.Cost([]byte(c.Bcrypt)); err != nil {
			return t, fmt.Errorf("bcrypt: %w", err)
		}
		t.bcrypt = []byte(c.Bcrypt)
	default:
		return t, errors.New("a token needs sha256 or bcrypt (the hash of its secret)")
	}
	if len(c.Scopes) == 0 {
		return t, errors.New("a token needs scopes (read, write, admin)")
	}
	s, err := ParseScopes(c.Scopes)
	if err != nil {
		return t, err
	}
	t.scopes = s
	return t, nil
}
