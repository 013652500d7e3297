package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestHardeningPromErrorBounded: the real binary answers a 1 MB bad PromQL
// expression (a POST form) and a huge match[] with a Prometheus bad_data
// error whose message is at most about 1 KiB (issue 11 item 1).
func TestHardeningPromErrorBounded(t *testing.T) {
	s := start(t, t.TempDir())
	huge := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name, path string
		form       url.Values
	}{
		{"1 MB bad query", "/api/v1/query", url.Values{"query": {"sum(" + huge}}},
		{"huge match[]", "/api/v1/series", url.Values{"match[]": {`{a=~"(` + huge + `"}`}}},
	} {
		c, body := s.do("POST", tc.path, "application/x-www-form-urlencoded", []byte(tc.form.Encode()))
		var r struct{ Status, ErrorType, Error string }
		if err := json.Unmarshal(body, &r); err != nil || c != http.StatusBadRequest || r.ErrorType != "bad_data" {
			t.Fatalf("%s: %d %v %.300s", tc.name, c, err, body)
		}
		if len(r.Error) > 1100 || len(body) > 1300 {
			t.Fatalf("%s: a reply of %d bytes, message %d: %.300s", tc.name, len(body), len(r.Error), r.Error)
		}
	}
}

// TestHardeningTelnetRejectsLogged: the real binary logs (route telnet,
// the command, the remote address, the message) and counts rejected telnet
// lines (issue 11 item 6).
func TestHardeningTelnetRejectsLogged(t *testing.T) {
	s := start(t, t.TempDir())
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	in := "put tel.logged notatime 1 host=a\nfrobnicate\nput " + strings.Repeat("x", 5000) + "\nexit\n"
	if _, err := c.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	var replies bytes.Buffer
	_, _ = replies.ReadFrom(c)
	for i := 0; i < 100 && strings.Count(s.logs.String(), "route=telnet") < 3; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	logs := s.logs.String()
	for _, want := range []string{"request rejected", "route=telnet", "command=put", "command=frobnicate", "kind=too_long",
		"remote=127.0.0.1:", "Invalid character", "unknown command: frobnicate"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the server's log lacks %q:\n%.3000s", want, logs)
		}
	}
	_, metrics := s.do("GET", "/metrics", "", nil)
	for _, want := range []string{`hourglass_telnet_rejected_total{kind="put"} 1`, `hourglass_telnet_rejected_total{kind="unknown"} 1`, `hourglass_telnet_rejected_total{kind="too_long"} 1`} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(metrics, "telnet_rejected"))
		}
	}
}
