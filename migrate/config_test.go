package migrate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeOpenTSDB serves /api/suggest with the given metrics and /api/query
// with one point per metric at the query's start, answering status
// instead for the metric named fail.
func fakeOpenTSDB(t *testing.T, metrics []string, fail string, status int) (*httptest.Server, *atomic.Int64) {
	var queries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/suggest":
			json.NewEncoder(w).Encode(metrics)
		case "/api/query":
			queries.Add(1)
			var q struct {
				Start   int64
				Queries []struct{ Metric string }
			}
			if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			m := q.Queries[0].Metric
			if m == fail {
				w.WriteHeader(status)
				io.WriteString(w, `{"error":{"code":413,"message":"too many points"}}`)
				return
			}
			json.NewEncoder(w).Encode([]map[string]any{{"metric": m, "tags": map[string]string{"h": "a"}, "dps": map[string]int{jsonInt(q.Start): 1}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &queries
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func testConfig(src, dst string) *Config {
	return &Config{From: FromOpenTSDB, Src: src, Dst: dst, Start: 0, End: 3 * 3600_000, Slice: time.Hour,
		Concurrency: 1, Batch: 100, Timeout: 5 * time.Second, Retries: 2, SuggestMax: 100, Log: io.Discard}
}

func TestExecuteFailsNamingSlice(t *testing.T) {
	src, queries := fakeOpenTSDB(t, []string{"a", "b"}, "b", http.StatusRequestEntityTooLarge)
	var puts atomic.Int64
	dst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { puts.Add(1); w.WriteHeader(204) }))
	defer dst.Close()
	err := Execute(context.Background(), testConfig(src.URL, dst.URL))
	for _, want := range []string{"slice [1970-01-01T00:00:00Z, 1970-01-01T01:00:00Z)", "metric b", "413", "too many points"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Execute = %v, want an error with %q", err, want)
		}
	}
	if queries.Load() != 2 {
		t.Fatalf("%d queries, want 2 (a, then b once: a 4xx is not retried)", queries.Load())
	}
}

func TestExecuteSuggestCut(t *testing.T) {
	src, _ := fakeOpenTSDB(t, []string{"a", "b", "c"}, "", 0)
	c := testConfig(src.URL, "http://127.0.0.1:1")
	c.SuggestMax = 3
	err := Execute(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "raise -suggest-max") {
		t.Fatalf("Execute = %v, want the cut-short list refused", err)
	}
}

func TestExecuteRetriesDestination(t *testing.T) {
	src, _ := fakeOpenTSDB(t, []string{"a"}, "", 0)
	var puts atomic.Int64
	dst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if puts.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(204)
	}))
	defer dst.Close()
	var log strings.Builder
	c := testConfig(src.URL, dst.URL)
	c.Log = &log
	if err := Execute(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if puts.Load() != 4 || !strings.Contains(log.String(), "copied 3 points in 3 slices") {
		t.Fatalf("%d puts (want 4: one 429 retried, then one a slice); log:\n%s", puts.Load(), log.String())
	}
}

func TestExecuteInterrupted(t *testing.T) {
	src, _ := fakeOpenTSDB(t, []string{"a"}, "", 0)
	ctx, cancel := context.WithCancel(context.Background())
	dst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // as Ctrl-C during the first write
		w.WriteHeader(204)
	}))
	defer dst.Close()
	c := testConfig(src.URL, dst.URL)
	c.StatePath = t.TempDir() + "/state"
	err := Execute(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run the same command again") {
		t.Fatalf("Execute = %v, want the interruption explained", err)
	}
}
