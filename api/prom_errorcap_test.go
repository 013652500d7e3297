package api

import (
	"net/url"
	"strings"
	"testing"

	"hourglass/internal/quote"
)

// TestPromErrorQuotesBounded: a Prometheus error reply quotes at most about
// 1 KiB of message whatever the input (issue 11 item 1): a 1 MB PromQL
// expression with a syntax error sent as a POST form, a huge match[] and a
// huge bad label value.
func TestPromErrorQuotesBounded(t *testing.T) {
	ps := newPromServer(t, nil)
	huge := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name, path string
		form       url.Values
	}{
		{"bad query", "/api/v1/query", url.Values{"query": {"sum(" + huge}}},
		{"bad query_range", "/api/v1/query_range", url.Values{"query": {huge + ")"}, "start": {"0"}, "end": {"10"}, "step": {"1"}}},
		{"huge match", "/api/v1/series", url.Values{"match[]": {"{" + huge}}},
		{"bad label value", "/api/v1/series", url.Values{"match[]": {`{a=~"(` + huge + `"}`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ar := ps.api("POST", tc.path, tc.form)
			if code != 400 || ar.Status != "error" || ar.ErrorType != "bad_data" {
				t.Fatalf("%d %+v", code, ar.ErrorType)
			}
			if len(ar.Error) > quote.MaxMessage+64 || len(ar.Error) < 20 {
				t.Fatalf("error of %d bytes: %.300s", len(ar.Error), ar.Error)
			}
		})
	}
}
