package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Helpers of the OpenTSDB dialect's tests. They take the test's own t, so
// subtests can share one server.

// call sends a request with headers given as "Key: value" strings and
// returns the reply.
func otsCall(t *testing.T, s *server, method, path string, body []byte, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// want sends a request and fails unless the status is code; it returns the body.
func otsWant(t *testing.T, s *server, code int, method, path string, body any) []byte {
	t.Helper()
	var b []byte
	switch x := body.(type) {
	case nil:
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		var err error
		if b, err = json.Marshal(x); err != nil {
			t.Fatal(err)
		}
	}
	got, _, resp := otsCall(t, s, method, path, b)
	if got != code {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, path, got, code, resp)
	}
	return resp
}

// decode unmarshals JSON with numbers kept as json.Number.
func otsDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// wantError checks an OpenTSDB error reply: status code, and a message that
// contains msg.
func otsWantError(t *testing.T, s *server, code int, method, path string, body any, msg string) {
	t.Helper()
	resp := otsWant(t, s, code, method, path, body)
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Details string `json:"details"`
		} `json:"error"`
	}
	otsDecode(t, resp, &e)
	if e.Error.Code != code || !strings.Contains(e.Error.Message, msg) {
		t.Fatalf("%s %s: error %+v, want code %d and a message with %q", method, path, e.Error, code, msg)
	}
}

// result is one element of an /api/query reply.
type otsResult struct {
	Metric            string            `json:"metric"`
	Tags              map[string]string `json:"tags"`
	AggregateTags     []string          `json:"aggregateTags"`
	DPS               json.RawMessage   `json:"dps"`
	TSUIDs            []string          `json:"tsuids"`
	Query             map[string]any    `json:"query"`
	Annotations       []map[string]any  `json:"annotations"`
	GlobalAnnotations []map[string]any  `json:"globalAnnotations"`
	Stats             map[string]any    `json:"stats"`
	StatsSummary      map[string]any    `json:"statsSummary"`
}

// points returns dps as timestamp → value text, from the object or the
// array form; null is "null".
func (r otsResult) points(t *testing.T) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	if len(r.DPS) == 0 {
		return out
	}
	if r.DPS[0] == '[' {
		var otsArr [][]json.RawMessage
		otsDecode(t, r.DPS, &otsArr)
		for _, p := range otsArr {
			ts, err := strconv.ParseInt(string(p[0]), 10, 64)
			if err != nil {
				t.Fatalf("timestamp %s: %v", p[0], err)
			}
			out[ts] = strings.Trim(string(p[1]), `"`)
		}
		return out
	}
	var m map[string]json.RawMessage
	otsDecode(t, r.DPS, &m)
	for k, v := range m {
		ts, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			t.Fatalf("timestamp %s: %v", k, err)
		}
		out[ts] = strings.Trim(string(v), `"`)
	}
	return out
}

// query posts a query body (a map or a string) and returns the results.
func otsQuery(t *testing.T, s *server, path string, body any) []otsResult {
	t.Helper()
	resp := otsWant(t, s, 200, "POST", path, body)
	var rs []otsResult
	otsDecode(t, resp, &rs)
	return rs
}

// queryGET runs an /api/query GET with the given query string.
func otsQueryGET(t *testing.T, s *server, qs string) []otsResult {
	t.Helper()
	resp := otsWant(t, s, 200, "GET", "/api/query?"+qs, nil)
	var rs []otsResult
	otsDecode(t, resp, &rs)
	return rs
}

// pts is an expected series: seconds (or ms) → value.
type otsPts map[int64]float64

// checkPoints compares returned points with expected values: the same
// timestamps, each value within 1e-9 (relative) of the expected one; NaN
// expects "NaN", and a key of nullAt expects null.
func otsCheckPoints(t *testing.T, what string, got map[int64]string, exp otsPts) {
	t.Helper()
	if len(got) != len(exp) {
		t.Fatalf("%s: got %d points %v, want %d: %v", what, len(got), got, len(exp), exp)
	}
	for ts, v := range exp {
		g, ok := got[ts]
		if !ok {
			t.Fatalf("%s: no point at %d; got %v", what, ts, got)
		}
		if math.IsNaN(v) {
			if g != "NaN" {
				t.Fatalf("%s at %d: got %s, want NaN", what, ts, g)
			}
			continue
		}
		f, err := strconv.ParseFloat(g, 64)
		if err != nil {
			t.Fatalf("%s at %d: value %q is not a number", what, ts, g)
		}
		if math.Abs(f-v) > 1e-9*math.Max(1, math.Abs(v)) {
			t.Fatalf("%s at %d: got %s, want %v (all: %v)", what, ts, g, v, got)
		}
	}
}

// single asserts one result and returns it.
func otsSingle(t *testing.T, what string, rs []otsResult) otsResult {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("%s: %d results, want 1: %+v", what, len(rs), rs)
	}
	return rs[0]
}

// putOK writes points through /api/put and requires every one stored.
func otsPutOK(t *testing.T, s *server, body string) {
	t.Helper()
	resp := otsWant(t, s, 200, "POST", "/api/put?summary", body)
	var sum struct{ Success, Failed int }
	otsDecode(t, resp, &sum)
	if sum.Failed != 0 {
		t.Fatalf("put: %s", resp)
	}
}

// dp renders one point of an /api/put body.
func otsDP(metric string, ts int64, value string, tags ...string) string {
	var tb strings.Builder
	tb.WriteByte('{')
	for i := 0; i+1 < len(tags); i += 2 {
		if i > 0 {
			tb.WriteByte(',')
		}
		fmt.Fprintf(&tb, "%q:%q", tags[i], tags[i+1])
	}
	tb.WriteByte('}')
	return fmt.Sprintf(`{"metric":%q,"timestamp":%d,"value":%s,"tags":%s}`, metric, ts, value, tb.String())
}

func otsArr(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

// sortedKeys returns a map's keys, sorted.
func otsSortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
