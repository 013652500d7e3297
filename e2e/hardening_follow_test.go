package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
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
