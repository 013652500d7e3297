package api

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTelnetRejectLog: rejected telnet lines (a bad put, an unknown
// command, a line too long) are logged with route telnet, the command, the
// remote address and the message bounded by quote, and counted by kind in
// hourglass_telnet_rejected_total (issue 11 item 6).
func TestTelnetRejectLog(t *testing.T) {
	ps := newPromServer(t, nil)
	var logBuf lockedLog
	rl := ps.srv.rejects
	rl.log = slog.New(slog.NewTextHandler(&logBuf, nil))
	long := strings.Repeat("x", 4000)
	replies := ps.telnet(t, "put tel.bad notatime 1 host=a\n"+"frobnicate"+strings.Repeat("z", 900)+"\n"+"put "+long+"\n"+"exit\n")
	if n := strings.Count(replies, "\n"); n != 3 {
		t.Fatalf("%d reply lines, want 3: %q", n, replies)
	}
	logs := logBuf.String()
	for _, want := range []string{"route=telnet", "command=put", "kind=put", "kind=unknown", "kind=too_long",
		"remote=127.0.0.1:", "message=", `command="frobnicatezzz`, "bytes)"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Count(logs, "request rejected") != 3 || len(logs) > 3*2048 {
		t.Fatalf("want 3 bounded lines, got %d bytes:\n%s", len(logs), logs)
	}
	for _, k := range []string{"put", "unknown", "too_long"} {
		if got := testutil.ToFloat64(rl.telnet.WithLabelValues(k)); got != 1 {
			t.Fatalf("hourglass_telnet_rejected_total{kind=%q} = %v, want 1", k, got)
		}
	}
}

// telnet runs a telnet session on ps's server: it sends in (which should
// end with exit) and returns every reply until the server closes the
// connection, within 10 seconds.
func (ps *promServer) telnet(t *testing.T, in string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		ps.srv.serveTelnet(c, bufio.NewReader(c))
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	var replies bytes.Buffer
	_, _ = replies.ReadFrom(c)
	return replies.String()
}

// lockedLog is a bytes.Buffer safe for the server's goroutines to write.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTelnetSeriesCacheCounted: a telnet connection's cache of series is
// counted in hourglass_telnet_series_cache_total: a series' first line is
// a miss, its next lines hits (the series is not parsed again), a bad line
// neither.
func TestTelnetSeriesCacheCounted(t *testing.T) {
	ps := newPromServer(t, nil)
	in := "put tel.c 1700000000 1 host=a dc=x\n" + "put tel.c 1700000010 2 host=a dc=x\n" +
		"put tel.c 1700000020 3 host=b dc=x\n" + "put tel.c 1700000030 4 host=a dc=x\n" +
		"put tel.c notatime 4 host=a dc=x\n" + "exit\n"
	if replies := ps.telnet(t, in); strings.Count(replies, "\n") != 1 {
		t.Fatalf("want one reply (the bad line), got %q", replies)
	}
	c := ps.srv.cm.telnetCache
	for r, want := range map[string]float64{"hit": 2, "miss": 2, "reset": 0} {
		if got := testutil.ToFloat64(c.WithLabelValues(r)); got != want {
			t.Fatalf("hourglass_telnet_series_cache_total{result=%q} = %v, want %v", r, got, want)
		}
	}
}
