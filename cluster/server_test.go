package cluster

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/internal/warnings"
)

func TestHandlerRefuses(t *testing.T) {
	n := New(nil, &fakeHead{}, nil, Options{WriterID: 1, MaxBodyBytes: 64, Registerer: prometheus.NewRegistry()})
	srv := httptest.NewServer(n.Handler())
	defer srv.Close()
	for _, c := range []struct {
		path string
		body []byte
		code int
		msg  string
	}{
		{PathSnapshot, []byte("nonsense"), 400, "not a HGS1 body"},
		{PathDelete, []byte("HGD1\x00"), 400, "malformed peer message"},
		{PathSnapshot, bytes.Repeat([]byte("x"), 65), 413, "-peer.max-body-bytes"},
	} {
		resp, err := http.Post(srv.URL+c.path, ContentType, bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s %q: %d %s; want %d %q", c.path, c.body, resp.StatusCode, b, c.code, c.msg)
		}
	}
}

func TestMiddlewareWarningHeader(t *testing.T) {
	n := New(nil, &fakeHead{}, nil, Options{WriterID: 1, Registerer: prometheus.NewRegistry()})
	h := n.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		warnings.Add(r.Context(), "node 2 did not answer")
		warnings.Add(r.Context(), "node 2 did not answer") // once
		warnings.Add(r.Context(), "node 3 is down")
		w.WriteHeader(200)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/query", nil))
	if got := rec.Header().Values(WarningHeader); len(got) != 2 || got[0] != "node 2 did not answer" {
		t.Fatalf("headers: %q", got)
	}
	if got := warnings.From(context.Background()); got != nil {
		t.Fatalf("a context without a gatherer: %q", got)
	}
}

func TestHandlerBusy(t *testing.T) {
	n := New(nil, &fakeHead{}, nil, Options{WriterID: 1, MaxConcurrent: 1, Registerer: prometheus.NewRegistry()})
	n.sem <- struct{}{} // one request being served: the bound
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // its caller's timeout has passed
	req := httptest.NewRequest("POST", PathSnapshot, bytes.NewReader(AppendSnapshotRequest(nil, &SnapshotRequest{}))).WithContext(ctx)
	rec := httptest.NewRecorder()
	n.Handler().ServeHTTP(rec, req)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "-peer.max-concurrent") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	<-n.sem
	rec = httptest.NewRecorder()
	n.Handler().ServeHTTP(rec, httptest.NewRequest("POST", PathSnapshot, bytes.NewReader(AppendSnapshotRequest(nil, &SnapshotRequest{}))))
	if rec.Code != 200 {
		t.Fatalf("with room: %d %s", rec.Code, rec.Body)
	}
}
