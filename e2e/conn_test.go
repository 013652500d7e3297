package e2e

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricValue reads one sample of /metrics, by its name and labels as printed.
func metricValue(t *testing.T, s *server, series string) float64 {
	t.Helper()
	code, body := s.do("GET", "/metrics", "", nil)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return 0
}

// TestConnSlowBodyCut sends a body at 1 byte per 100 ms: with
// -body-read-timeout 1s and -body-min-rate 1000 it is cut within seconds,
// where sending all of it would take 100 s.
func TestConnSlowBodyCut(t *testing.T) {
	s := start(t, t.TempDir(), "-body-read-timeout", "1s", "-body-min-rate", "1000")
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	closed := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(c)
		closed <- string(b)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 1000; i++ {
		select {
		case reply := <-closed:
			took := time.Since(begin)
			if took > 5*time.Second {
				t.Fatalf("the slow body was cut after %s, want within 5 s", took)
			}
			if !strings.HasPrefix(reply, "HTTP/1.1 4") && reply != "" {
				t.Fatalf("the slow body got %q, want a 4xx or a close", reply)
			}
			if n := metricValue(t, s, `hourglass_connection_timeouts_total{kind="body"}`); n < 1 {
				t.Fatalf("body timeouts counted: %v", n)
			}
			return
		case <-tick.C:
			_, _ = c.Write([]byte{'['})
		}
		if time.Since(begin) > 10*time.Second {
			break
		}
	}
	t.Fatalf("the body sent at 1 byte per 100 ms was not cut in %s", time.Since(begin))
}

// TestConnTelnetIdleClosed leaves a telnet connection idle past -telnet-idle-timeout.
func TestConnTelnetIdleClosed(t *testing.T) {
	s := start(t, t.TempDir(), "-telnet-idle-timeout", "500ms")
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "version\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "hourglass") {
		t.Fatalf("version: %q %v", line, err)
	}
	begin := time.Now()
	_, _ = io.ReadAll(br) // returns when the server closes
	if took := time.Since(begin); took > 5*time.Second || took < 400*time.Millisecond {
		t.Fatalf("the idle telnet connection was closed after %s, want about 500 ms", took)
	}
	if n := metricValue(t, s, `hourglass_connection_timeouts_total{kind="telnet_idle"}`); n != 1 {
		t.Fatalf("telnet idle timeouts counted: %v, want 1", n)
	}
}

// TestConnCap opens -max-connections connections; the next is closed at
// once, and one more fits once one of them is closed.
func TestConnCap(t *testing.T) {
	s := start(t, t.TempDir(), "-max-connections", "3")
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	telnet := func() (net.Conn, *bufio.Reader, error) {
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, "version\n")
		br := bufio.NewReader(c)
		if _, err := br.ReadString('\n'); err != nil {
			c.Close()
			return nil, nil, err
		}
		return c, br, nil
	}
	for i := 0; i < 3; i++ {
		c, _, err := telnet()
		if err != nil {
			t.Fatalf("connection %d of 3: %v", i+1, err)
		}
		open = append(open, c)
	}
	if c, _, err := telnet(); err == nil {
		c.Close()
		t.Fatal("a 4th connection was served with -max-connections 3")
	}
	open[0].Close()
	open = open[1:]
	// The server sees the close soon; a bounded wait for the place.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, _, err := telnet()
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection fits after one closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range open {
		c.Close()
	}
	open = nil
	// /metrics itself needs a place: wait (bounded) for the telnet ones to go.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, _, err := tryDo("GET", s.url, "/metrics", "", nil)
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics still refused 10 s after every connection closed: %d %v", code, err)
		}
	}
	if n := metricValue(t, s, `hourglass_connections_rejected_total{reason="max_connections"}`); n < 1 {
		t.Fatalf("rejected connections counted: %v", n)
	}
}

// TestConnHeaderAndIdleTimeouts: a request line never finished is cut after
// -http-read-header-timeout, an idle keep-alive connection after -http-idle-timeout.
func TestConnHeaderAndIdleTimeouts(t *testing.T) {
	s := start(t, t.TempDir(), "-http-read-header-timeout", "500ms", "-http-idle-timeout", "500ms")
	waitClosed := func(what string, c net.Conn) {
		t.Helper()
		begin := time.Now()
		_, _ = io.ReadAll(c)
		if took := time.Since(begin); took > 5*time.Second {
			t.Fatalf("%s closed after %s, want about 500 ms", what, took)
		}
	}
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(c, "GET /api/version HTTP/1.1\r\nHost: x\r\n") // no end of headers
	waitClosed("a connection with unfinished headers", c)

	k, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	_ = k.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(k, "GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(k)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("a request: %q %v", line, err)
	}
	begin := time.Now()
	_, _ = io.ReadAll(br) // the rest of the reply, then the close
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("an idle keep-alive connection closed after %s, want about 500 ms", took)
	}
	if n := metricValue(t, s, `hourglass_connection_timeouts_total{kind="header"}`); n < 1 {
		t.Errorf("header timeouts counted: %v", n)
	}
	if n := metricValue(t, s, `hourglass_connection_timeouts_total{kind="idle"}`); n < 1 {
		t.Errorf("idle timeouts counted: %v", n)
	}
}
