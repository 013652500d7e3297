package api

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBodyDeadlineClearedAtEOF: once a body is read whole, the handler may
// take longer than -body-read-timeout without its context being cancelled
// (net/http's background read must not hit the body's deadline).
func TestBodyDeadlineClearedAtEOF(t *testing.T) {
	s := &Server{cfg: Config{Conn: ConnConfig{BodyReadTimeout: 100 * time.Millisecond, BodyMinRate: 1 << 20}}, cm: newConnMetrics(nil)}
	s.cfg.Conn.fill()
	result := make(chan error, 1)
	h := s.bodyDeadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			result <- err
			return
		}
		select {
		case <-r.Context().Done():
			result <- r.Context().Err()
		case <-time.After(400 * time.Millisecond):
			result <- nil
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	resp, err := http.Post("http://"+ln.Addr().String()+"/", "text/plain", strings.NewReader("some body"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("the handler's context after the body was read: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not finish")
	}
}
