package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"golang.org/x/crypto/bcrypt"
)

// These tests run the binary with -web.config.file (TLS and basic-auth
// users, Prometheus' format) and -auth.config.file (the users' scopes and
// bearer tokens) and talk to it as Prometheus and Grafana do.

// secureServer is a running hourglass with TLS and authentication.
type secureServer struct {
	*server
	https  string       // https://addr
	client *http.Client // trusts the server's certificate
	caFile string
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hourglass e2e"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	return certFile, keyFile
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func bcryptHash(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func sha256Hex(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

// startSecure starts hourglass with TLS, the users grafana (read), writer
// (write) and admin (admin), and the tokens <scope>-token of each scope.
func startSecure(t *testing.T, args ...string) *secureServer {
	t.Helper()
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	web := filepath.Join(dir, "web.yml")
	writeFile(t, web, "tls_server_config:\n  cert_file: cert.pem\n  key_file: "+filepath.Base(key)+"\n"+
		"basic_auth_users:\n  grafana: "+bcryptHash(t, "grafana-pw")+"\n  writer: "+bcryptHash(t, "writer-pw")+
		"\n  admin: "+bcryptHash(t, "admin-pw")+"\n")
	authFile := filepath.Join(dir, "auth.yml")
	writeFile(t, authFile, `users:
  grafana: [read]
  writer: [write]
  admin: [admin]
tokens:
  - {name: reader, sha256: `+sha256Hex("read-token")+`, scopes: [read]}
  - {name: writer, sha256: `+sha256Hex("write-token")+`, scopes: [write]}
  - {name: admin, bcrypt: "`+bcryptHash(t, "admin-token")+`", scopes: [admin]}
`)
	s := start(t, filepath.Join(dir, "data"), append([]string{"-web.config.file", web, "-auth.config.file", authFile}, args...)...)
	pool := x509.NewCertPool()
	pemBytes, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pemBytes)
	return &secureServer{server: s, https: "https://" + s.addr, caFile: cert,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// cred is how a request authenticates: nothing, a user, or a token.
type cred struct{ user, pass, token string }

func (s *secureServer) req(t *testing.T, method, path string, c cred, ctype, body string) (int, http.Header, string) {
	t.Helper()
	r, err := http.NewRequest(method, s.https+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	if c.user != "" {
		r.SetBasicAuth(c.user, c.pass)
	}
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := s.client.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestAuthScopesOverTLS(t *testing.T) {
	s := startSecure(t)
	now := time.Now().Unix()
	put := `{"metric":"auth.e2e","timestamp":` + itoa(now) + `,"value":1,"tags":{"host":"a"}}`
	type endpoint struct {
		scope, method, path, ctype, body string
	}
	eps := []endpoint{
		{"read", "GET", "/api/suggest?type=metrics", "", ""},
		{"read", "GET", "/api/v1/labels", "", ""},
		{"read", "GET", "/metrics", "", ""},
		{"write", "POST", "/api/put", "application/json", put},
		{"write", "GET", "/api/uid/assign?metric=auth.assigned{n}", "", ""},
		{"admin", "GET", "/api/dropcaches", "", ""},
	}
	creds := map[string][]cred{
		"read":  {{user: "grafana", pass: "grafana-pw"}, {token: "read-token"}},
		"write": {{user: "writer", pass: "writer-pw"}, {token: "write-token"}},
		"admin": {{user: "admin", pass: "admin-pw"}, {token: "admin-token"}},
	}
	wrong := map[string]string{"read": "write", "write": "admin", "admin": "read"}
	n := 0
	for _, ep := range eps {
		name := ep.method + " " + ep.path
		for _, bad := range []cred{{}, {user: "grafana", pass: "nope"}, {user: "nobody", pass: "x"}, {token: "no-such-token"}} {
			code, h, _ := s.req(t, ep.method, ep.path, bad, ep.ctype, ep.body)
			if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
				t.Errorf("%s with %+v: %d (WWW-Authenticate %q), want 401 with a challenge", name, bad, code, h.Get("WWW-Authenticate"))
			}
		}
		for _, c := range creds[wrong[ep.scope]] {
			if code, _, body := s.req(t, ep.method, ep.path, c, ep.ctype, ep.body); code != http.StatusForbidden {
				t.Errorf("%s with the %s scope (%+v): %d, want 403: %.200s", name, wrong[ep.scope], c, code, body)
			}
		}
		for _, c := range creds[ep.scope] {
			n++ // a fresh name for each uid/assign
			if code, _, body := s.req(t, ep.method, strings.ReplaceAll(ep.path, "{n}", itoa(int64(n))), c, ep.ctype, ep.body); code < 200 || code > 299 {
				t.Errorf("%s with the %s scope (%+v): %d, want 2xx: %.200s", name, ep.scope, c, code, body)
			}
		}
	}
	if code, _, _ := s.req(t, "GET", "/healthz", cred{}, "", ""); code != http.StatusOK {
		t.Errorf("/healthz without credentials: %d, want 200", code)
	}
	// Grafana's OpenTSDB and Prometheus data sources, with basic auth.
	g := cred{user: "grafana", pass: "grafana-pw"}
	code, _, body := s.req(t, "GET", "/api/query?start="+itoa(now-60)+"&m=sum:auth.e2e", g, "", "")
	if code != http.StatusOK || !strings.Contains(body, `"auth.e2e"`) {
		t.Errorf("Grafana's GET /api/query: %d %.300s", code, body)
	}
	form := url.Values{"query": {`{__name__="auth.e2e"}`}, "start": {itoa(now - 60)}, "end": {itoa(now + 60)}, "step": {"15"}}
	code, _, body = s.req(t, "POST", "/api/v1/query_range", g, "application/x-www-form-urlencoded", form.Encode())
	if code != http.StatusOK || !strings.Contains(body, `"status":"success"`) || !strings.Contains(body, `"host":"a"`) {
		t.Errorf("Grafana's POST /api/v1/query_range: %d %.300s", code, body)
	}
}

func itoa(n int64) string { return big.NewInt(n).String() }

func TestAuthPlainHTTPRefusedWithTLS(t *testing.T) {
	s := startSecure(t)
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("plain HTTP on the TLS port: %v (want a 400 and a close)", err)
	}
	if !strings.HasPrefix(string(reply), "HTTP/1.0 400") || strings.Contains(string(reply), "version") {
		t.Fatalf("plain HTTP on the TLS port answered %q, want Go's 400 and nothing else", reply)
	}
	// Through the ordinary client too: no 2xx, no 401.
	resp, err := client.Get(s.url + "/api/version")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain GET: %d, want 400 or an error", resp.StatusCode)
		}
	}
}

func TestAuthTelnetRefused(t *testing.T) {
	s := startSecure(t)
	c, err := tls.Dial("tcp", s.addr, s.client.Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "put auth.telnet "+itoa(time.Now().Unix())+" 1 host=a\n"); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.Contains(line, "cannot authenticate") {
		t.Fatalf("telnet with auth on: %q, want the refusal", line)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the refused telnet connection stays open")
	}
	if code, _, body := s.req(t, "GET", "/api/suggest?type=metrics&q=auth.telnet", cred{token: "read-token"}, "", ""); code != 200 || strings.Contains(body, "auth.telnet") {
		t.Fatalf("a refused telnet put was stored: %d %s", code, body)
	}
}

func TestAuthTelnetAllowedByFlag(t *testing.T) {
	s := startSecure(t, "-telnet.allow-unauthenticated")
	c, err := tls.Dial("tcp", s.addr, s.client.Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// The connection may write (put) but not run what needs admin over
	// HTTP (dropcaches): it cannot authenticate.
	put := "put auth.telnet.ok " + itoa(time.Now().Unix()) + " 1 host=a\n"
	if _, err := io.WriteString(c, put+"dropcaches\nversion\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "dropcaches: forbidden: authentication is on") {
		t.Fatalf("dropcaches over unauthenticated telnet: %q, want it refused", line)
	}
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "hourglass") {
		t.Fatalf("telnet over TLS with -telnet.allow-unauthenticated: %q", line)
	}
	// version commits the put before it answers.
	if code, _, body := s.req(t, "GET", "/api/suggest?type=metrics&q=auth.telnet", cred{token: "read-token"}, "", ""); code != 200 || !strings.Contains(body, "auth.telnet.ok") {
		t.Fatalf("the telnet put was not stored: %d %s", code, body)
	}
	if _, _, body := s.req(t, "GET", "/metrics", cred{token: "read-token"}, "", ""); !strings.Contains(body, `hourglass_telnet_rejected_total{kind="auth"} 1`) {
		t.Fatal("the refused dropcaches is not counted in hourglass_telnet_rejected_total{kind=\"auth\"}")
	}
}

// TestAuthTLSServesHTTP11: a client offering h2 and http/1.1 by ALPN gets
// http/1.1 (docs/security.md: HTTP/2 is not served), and its request works.
func TestAuthTLSServesHTTP11(t *testing.T) {
	s := startSecure(t)
	cfg := s.client.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	c, err := tls.Dial("tcp", s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Fatalf("ALPN negotiated %q, want http/1.1", p)
	}
	// Go's client with HTTP/2 on (ForceAttemptHTTP2) falls back to HTTP/1.1.
	tr := &http.Transport{TLSClientConfig: s.client.Transport.(*http.Transport).TLSClientConfig.Clone(), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(s.https + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 1 {
		t.Fatalf("GET /healthz with HTTP/2 offered: %d over %s, want 200 over HTTP/1.1", resp.StatusCode, resp.Proto)
	}
}

// TestAuthPrometheusRemoteWrite writes with Prometheus' own remote-write
// client, configured as remote_write with basic_auth and with authorization.
func TestAuthPrometheusRemoteWrite(t *testing.T) {
	s := startSecure(t)
	u, _ := url.Parse(s.https + "/api/v1/write")
	now := time.Now().UnixMilli()
	cases := []struct {
		name   string
		http   config_util.HTTPClientConfig
		metric string
		ok     bool
	}{
		{"basic_auth", config_util.HTTPClientConfig{BasicAuth: &config_util.BasicAuth{Username: "writer", Password: "writer-pw"}}, "rw_basic", true},
		{"authorization", config_util.HTTPClientConfig{Authorization: &config_util.Authorization{Type: "Bearer", Credentials: "write-token"}}, "rw_bearer", true},
		{"authorization with the read scope", config_util.HTTPClientConfig{Authorization: &config_util.Authorization{Type: "Bearer", Credentials: "read-token"}}, "rw_denied", false},
	}
	for _, c := range cases {
		c.http.TLSConfig = config_util.TLSConfig{CAFile: s.caFile}
		wc, err := remote.NewWriteClient(c.name, &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second), HTTPClientConfig: c.http})
		if err != nil {
			t.Fatal(err)
		}
		wr := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
			Labels:  []prompb.Label{{Name: "__name__", Value: c.metric}, {Name: "job", Value: "e2e"}},
			Samples: []prompb.Sample{{Value: 42, Timestamp: now}},
		}}}
		raw, err := wr.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, err = wc.Store(context.Background(), snappy.Encode(nil, raw), 0)
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "403")) {
			t.Errorf("%s: err %v, want a 403", c.name, err)
		}
		form := url.Values{"query": {c.metric}, "time": {itoa(now/1000 + 1)}}
		code, _, body := s.req(t, "POST", "/api/v1/query", cred{token: "read-token"}, "application/x-www-form-urlencoded", form.Encode())
		if stored := strings.Contains(body, `"42"`); code != 200 || stored != c.ok {
			t.Errorf("%s: reading back: %d %.300s (want stored=%v)", c.name, code, body, c.ok)
		}
	}
}

// TestAuthPprof: -debug.pprof serves net/http/pprof to the admin scope only.
func TestAuthPprof(t *testing.T) {
	s := startSecure(t, "-debug.pprof")
	if code, _, body := s.req(t, "GET", "/debug/pprof/goroutine?debug=1", cred{token: "admin-token"}, "", ""); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof as admin: %d %.200s", code, body)
	}
	if code, _, _ := s.req(t, "GET", "/debug/pprof/", cred{token: "read-token"}, "", ""); code != http.StatusForbidden {
		t.Fatalf("pprof as read: %d, want 403", code)
	}
}
