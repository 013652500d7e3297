package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// /api/put's extras and the telnet commands, against the running binary.
func TestOpenTSDBPutAndTelnet(t *testing.T) {
	// Small windows, so that a body of a few hundred points is streamed,
	// and a cap on a streamed body.
	s := start(t, t.TempDir(), "-put-stream-bytes", "4096", "-put-max-bytes", "400000", "-put-max-errors", "5")

	count := func(t *testing.T, metric string) int {
		t.Helper()
		rs := otsQuery(t, s, "/api/query", fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"metric":%q,"aggregator":"sum","downsample":"0all-count"}]}`, otsT0, otsT0+86400, metric))
		if len(rs) == 0 {
			return 0
		}
		p := otsSingle(t, "count", rs).points(t)
		var n float64
		fmt.Sscan(p[otsT0], &n)
		return int(n)
	}

	t.Run("sync and sync_timeout", func(t *testing.T) {
		code, _, b := otsCall(t, s, "POST", "/api/put?sync&summary", []byte(otsArr(otsDP("sync.m", otsT0, "1", "host", "a"))))
		if code != 200 || string(b) != `{"success":1,"failed":0}` {
			t.Fatalf("sync: %d %s", code, b)
		}
		code, _, b = otsCall(t, s, "POST", "/api/put?sync_timeout=60000&summary", []byte(otsArr(otsDP("sync.m", otsT0+1, "2", "host", "a"))))
		if code != 200 || string(b) != `{"success":1,"failed":0,"timeouts":0}` {
			t.Fatalf("sync_timeout: %d %s", code, b)
		}
		code, _, _ = otsCall(t, s, "POST", "/api/put?sync", []byte(otsArr(otsDP("sync.m", otsT0+2, "3", "host", "a"))))
		if code != 204 {
			t.Fatalf("sync without summary: %d", code)
		}
		otsWantError(t, s, 400, "POST", "/api/put?sync_timeout=soon", otsArr(otsDP("sync.m", otsT0, "1", "host", "a")), "sync_timeout")
		if n := count(t, "sync.m"); n != 3 {
			t.Fatalf("sync.m has %d points", n)
		}
	})

	t.Run("gzip and chunked bodies", func(t *testing.T) {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write([]byte(otsArr(otsDP("gz.m", otsT0, "1", "host", "a"), otsDP("gz.m", otsT0+1, "2", "host", "a"))))
		zw.Close()
		code, _, b := otsCall(t, s, "POST", "/api/put?summary", zb.Bytes(), "Content-Encoding: gzip")
		if code != 200 || string(b) != `{"success":2,"failed":0}` {
			t.Fatalf("gzip: %d %s", code, b)
		}
		// Chunked transfer encoding (OpenTSDB refuses it by default).
		body := otsArr(otsDP("chunked.m", otsT0, "1", "host", "a"))
		req, _ := http.NewRequest("POST", s.url+"/api/put?summary", io.MultiReader(strings.NewReader(body)))
		req.ContentLength = -1
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(rb) != `{"success":1,"failed":0}` {
			t.Fatalf("chunked: %d %s", resp.StatusCode, rb)
		}
		otsWantError(t, s, 400, "POST", "/api/put", []byte("\x1f\x8bnot gzip"), "")
		if code, _, _ := otsCall(t, s, "POST", "/api/put", []byte("not gzip"), "Content-Encoding: gzip"); code != 400 {
			t.Fatalf("bad gzip: %d", code)
		}
	})

	t.Run("a streamed body", func(t *testing.T) {
		// 1500 points, about 100 KB: many 4 KiB windows. Points 3, 700 and
		// 1400 are bad; their neighbours are stored.
		var items []string
		for i := 0; i < 1500; i++ {
			switch i {
			case 3, 700, 1400:
				items = append(items, otsDP("stream.m", otsT0+int64(i), `"x"`, "host", "a"))
			default:
				items = append(items, otsDP("stream.m", otsT0+int64(i), fmt.Sprint(i), "host", "a"))
			}
		}
		code, _, b := otsCall(t, s, "POST", "/api/put?details", []byte(otsArr(items...)))
		if code != 400 || !strings.Contains(string(b), `"success":1497,"failed":3`) {
			t.Fatalf("streamed put: %d %s", code, b)
		}
		var rep struct {
			Errors []struct {
				Datapoint map[string]any
				Error     string
			}
		}
		otsDecode(t, b, &rep)
		if len(rep.Errors) != 3 || rep.Errors[1].Datapoint["timestamp"] != otsNum(int(otsT0)+700) || rep.Errors[2].Datapoint["timestamp"] != otsNum(int(otsT0)+1400) {
			t.Fatalf("errors of a streamed put: %s", b)
		}
		if n := count(t, "stream.m"); n != 1497 {
			t.Fatalf("stream.m has %d points, want 1497", n)
		}
		// Malformed after a few windows: what came before is stored, and
		// the reply says so.
		items = items[:0]
		for i := 0; i < 300; i++ {
			items = append(items, otsDP("stream2.m", otsT0+int64(i), "1", "host", "a"))
		}
		body := "[" + strings.Join(items, ",") + `,{"metric":"stream2.m" "oops"}]`
		code, _, b = otsCall(t, s, "POST", "/api/put", []byte(body))
		if code != 400 || !strings.Contains(string(b), "Unable to parse the given JSON") || !strings.Contains(string(b), "stored") {
			t.Fatalf("malformed stream: %d %s", code, b)
		}
		if n := count(t, "stream2.m"); n == 0 || n >= 300 {
			t.Fatalf("stream2.m has %d points: the windows before the bad one are stored, not the bad one", n)
		}
		// More than -put-max-bytes decoded: 413.
		items = items[:0]
		for i := 0; i < 7000; i++ {
			items = append(items, otsDP("stream3.m", otsT0+int64(i), "1", "host", "a"))
		}
		code, _, b = otsCall(t, s, "POST", "/api/put", []byte(otsArr(items...)))
		if code != 413 {
			t.Fatalf("a body over -put-max-bytes: %d %s", code, b)
		}
		// More errors than -put-max-errors: the counts stay exact.
		items = items[:0]
		for i := 0; i < 20; i++ {
			items = append(items, otsDP("stream4.m", otsT0+int64(i), "null", "host", "a"))
		}
		code, _, b = otsCall(t, s, "POST", "/api/put?details", []byte(otsArr(items...)))
		otsDecode(t, b, &rep)
		if code != 400 || !strings.Contains(string(b), `"success":0,"failed":20`) || len(rep.Errors) != 5 {
			t.Fatalf("capped details: %d %s", code, b)
		}
	})

	t.Run("put errors", func(t *testing.T) {
		otsWantError(t, s, 400, "POST", "/api/put", "", "Missing request content")
		otsWantError(t, s, 400, "POST", "/api/put", "42", "The JSON must start as an object or an array")
		otsWantError(t, s, 400, "POST", "/api/put", "[{", "Unable to parse the given JSON")
		otsWantError(t, s, 400, "POST", "/api/put", otsArr(otsDP("e.m", 0, "1", "host", "a")), "One or more data points had errors")
		otsWantError(t, s, 405, "GET", "/api/put", nil, "Method not allowed")
		code, _, b := otsCall(t, s, "POST", "/api/put?details", []byte(otsArr(otsDP("e.m", otsT0, "1", "host", "a"), otsDP("e.m", otsT0, "1"), otsDP("e!m", otsT0, "1", "host", "a"))))
		if code != 400 || !strings.Contains(string(b), "Missing tags") || !strings.Contains(string(b), "illegal character") || !strings.Contains(string(b), `"success":1,"failed":2`) {
			t.Fatalf("details: %d %s", code, b)
		}
	})

	t.Run("telnet", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", s.addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(c)
		send := func(lines ...string) {
			t.Helper()
			if _, err := c.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		line := func() string {
			t.Helper()
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reading a reply: %v after %q", err, l)
			}
			return strings.TrimRight(l, "\n")
		}
		// Puts are silent; errors answer one line each, in order.
		send("put tel.m 1699999200 1 host=a",
			"put tel.m 1699999201500 2.5 host=a",
			"put tel.m 1699999202.250 3 host=a",
			"put tel.m",
			"put tel.m 0 1 host=a",
			"put tel.m 1699999203 1 host",
			"put tel.m 1699999203 abc host=a",
			"put tel!m 1699999203 1 host=a",
			"put tel.m notatime 1 host=a",
			"bogus",
			"version")
		for _, expect := range []string{
			"put: illegal argument: not enough arguments (need least 4, got 1)",
			"put: illegal argument: invalid timestamp: 0",
			"put: illegal argument: invalid tag: host",
			"put: invalid value: ",
			"put: illegal argument: Invalid metric name (\"tel!m\"): illegal character: !",
			"put: invalid value: Invalid character 'n' in notatime",
			"unknown command: bogus.  Try `help'.",
			"hourglass ",
		} {
			if got := line(); !strings.HasPrefix(got, expect) {
				t.Fatalf("telnet reply %q, want %q", got, expect)
			}
		}
		line() // the version's second line
		send("help")
		if got := line(); got != "available commands: stats dropcaches version exit help put rollup histogram " {
			t.Fatalf("help: %q", got)
		}
		send("dropcaches")
		if got := line(); got != "Caches dropped." {
			t.Fatalf("dropcaches: %q", got)
		}
		send("stats", "version")
		stats := 0
		for {
			l := line()
			if strings.HasPrefix(l, "hourglass ") {
				break
			}
			if f := strings.Fields(l); len(f) < 4 || !strings.Contains(l, "host=") {
				t.Fatalf("stats line %q", l)
			}
			stats++
		}
		line()
		if stats < 5 {
			t.Fatalf("%d stats lines", stats)
		}
		// A line longer than 1 KiB is refused; the connection goes on.
		send("put tel.m 1699999204 1 host="+strings.Repeat("x", 1100), "version")
		if got := line(); !strings.Contains(got, "line longer than 1024 bytes") {
			t.Fatalf("long line: %q", got)
		}
		line()
		line()
		send("exit")
		if _, err := r.ReadString('\n'); err != io.EOF {
			t.Fatalf("after exit: %v", err)
		}
		// The three good puts, at s, ms and s.ms.
		rs := otsQuery(t, s, "/api/query", fmt.Sprintf(`{"start":%d,"end":%d,"msResolution":true,"queries":[{"metric":"tel.m","aggregator":"sum"}]}`, otsT0, otsT0+60))
		otsCheckPoints(t, "telnet puts", otsSingle(t, "", rs).points(t), otsPts{otsT0 * 1000: 1, otsT0*1000 + 1500: 2.5, otsT0*1000 + 2250: 3})
	})
}
