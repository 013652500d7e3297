package e2e

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// stalledQuery sends GET path to s and never reads the reply: a reply
// larger than the sockets' buffers keeps its handler writing, and so
// holding its query slot, until the connection is closed.
func stalledQuery(t *testing.T, s *server, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, s.addr); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLightLane: with both of -query-max-concurrent's slots held by heavy
// queries that cannot end (their clients read nothing of their 1.2 million
// buckets), light queries of both dialects answer at once from the light
// lane, while heavy ones wait in the queue and are refused past
// -query-queue-timeout, as before.
func TestLightLane(t *testing.T) {
	s := start(t, t.TempDir(), "-query-queue-timeout", "1s")
	base := worstBase()
	var pts []string
	for i := range 10 {
		pts = append(pts, otsDP("q.metric", base+10+int64(i)*60, fmt.Sprint(i), "host", "a"))
	}
	otsPutOK(t, s, otsArr(pts...))
	heavy := fmt.Sprintf("/api/query?start=%d&end=%d&m=sum:1ms-avg-zero:q.metric", base, base+1200)
	for range 2 {
		stalledQuery(t, s, heavy)
	}
	// Both heavy slots held, for as long as the test runs.
	for s.metricOf("hourglass_query_queue_running") != 2 {
		time.Sleep(10 * time.Millisecond)
	}
	end := base + 3600
	promLight := "/api/v1/query_range?" + url.Values{"query": {`{__name__="q.metric",host="a"}`},
		"start": {fmt.Sprint(base)}, "end": {fmt.Sprint(end)}, "step": {"60"}}.Encode()
	otsLight := fmt.Sprintf("/api/query?start=%d&end=%d&m=none:q.metric%%7Bhost=a%%7D", base, end)
	promHeavy := "/api/v1/query?" + url.Values{"query": {`max_over_time({__name__="q.metric"}[1h:1s])`}, "time": {fmt.Sprint(end)}}.Encode()
	for _, c := range []struct {
		path, want string
	}{
		{promLight, `"values":[[`},
		{otsLight, `"dps":{"` + fmt.Sprint(base+10) + `":0`},
	} {
		code, _, body, err := rawGet(s, c.path)
		if err != nil || code != 200 || !strings.Contains(string(body), c.want) {
			t.Fatalf("light %s: %d %v %.300s", c.path, code, err, body)
		}
	}
	if n := metricValue(t, s, `hourglass_query_admitted_total{lane="light"}`); n != 2 {
		t.Fatalf("light queries admitted: %v", n)
	}
	for _, p := range []string{heavy, promHeavy} {
		code, h, body, err := rawGet(s, p)
		if err != nil || code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(body), "-query-max-concurrent") {
			t.Fatalf("heavy %s: %d %v %.300s", p, code, err, body)
		}
	}
	if n := s.metricOf("hourglass_query_queue_timeouts_total"); n != 2 {
		t.Fatalf("heavy queries refused: %v", n)
	}
	if n := s.metricOf("hourglass_query_queue_running"); n != 2 {
		t.Fatalf("heavy running %v: the stalled queries ended", n)
	}
}
