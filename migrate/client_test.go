package migrate

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedWriter is a bytes sink safe for concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// recordSleeps makes c record its waits instead of sleeping.
func recordSleeps(c *Client) *[]time.Duration {
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	return &waits
}

func TestClientRetries(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		switch calls {
		case 1:
			w.Header().Set("Retry-After", "7")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, "got "+string(b))
		}
	}))
	defer srv.Close()
	c := mustClient(t, Auth{}, 5*time.Second, 3)
	waits := recordSleeps(c)
	var got string
	err := c.Do(context.Background(), "POST", srv.URL, nil, []byte("body"), func(r *http.Response) error {
		b, err := io.ReadAll(r.Body)
		got = string(b)
		return err
	})
	if err != nil || got != "got body" {
		t.Fatalf("Do = %q, %v; want the body sent again after retries", got, err)
	}
	if len(*waits) != 2 || (*waits)[0] != 7*time.Second || (*waits)[1] != time.Second {
		t.Fatalf("waits = %v, want [7s (Retry-After) 1s (backoff doubled)]", *waits)
	}
}

func TestClientGivesUp(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer srv.Close()
	c := mustClient(t, Auth{}, 5*time.Second, 2)
	recordSleeps(c)
	err := c.Do(context.Background(), "GET", srv.URL, nil, nil, func(*http.Response) error { return nil })
	if err == nil || calls != 3 || !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "502") {
		t.Fatalf("after %d calls: %v; want 3 calls and an error naming 502", calls, err)
	}
}

func TestClientFailsOn4xx(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":400,"message":"`+strings.Repeat("x", 5000)+`"}}`)
	}))
	defer srv.Close()
	c := mustClient(t, Auth{}, 5*time.Second, 5)
	recordSleeps(c)
	err := c.Do(context.Background(), "GET", srv.URL, nil, nil, func(*http.Response) error { return nil })
	if calls != 1 || !IsClientError(err) {
		t.Fatalf("after %d calls: %v; want one call and a client error", calls, err)
	}
	if len(err.Error()) > 1000 {
		t.Fatalf("the error quotes %d bytes of the body, want at most a few hundred", len(err.Error()))
	}
}

func TestClientAuth(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	for _, a := range []Auth{{User: "u", Password: "p"}, {BearerToken: "tok"}, {}} {
		c := mustClient(t, a, 5*time.Second, 0)
		if err := c.Do(context.Background(), "GET", srv.URL, nil, nil, func(*http.Response) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Basic dTpw", "Bearer tok", ""}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Authorization headers = %q, want %q", got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "junk": 0, "-1": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func mustClient(t *testing.T, a Auth, timeout time.Duration, retries int) *Client {
	t.Helper()
	c, err := NewClient(a, timeout, retries)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
