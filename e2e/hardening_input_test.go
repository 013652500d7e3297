package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile bodies of issue 11 against the real binary, on defaults: each
// answered with a 4xx, small, the server alive, its peak RSS well under
// 1 GiB, the rejection in its log, and the data written before intact.

// hwmKiB is the server's peak resident set (VmHWM), in KiB.
func hwmKiB(t *testing.T, s *server) int64 {
	t.Helper()
	v := peakRSS(s.cmd.Process.Pid)
	n, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("VmHWM %q: %v", v, err)
	}
	return n
}

// gzipBombE2E is a gzip body of members members, each 64 MiB of zeros
// compressed (about 65 KB): 21 members are the 1.37 MB body that
// expands to 1.3 GiB.
func gzipBombE2E(t *testing.T, members int) []byte {
	t.Helper()
	var one bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 64 {
		_, _ = zw.Write(zero)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(one.Bytes(), members)
}

func TestHardeningInput(t *testing.T) {
	s := start(t, t.TempDir())
	const base = int64(1700000000)
	var pts []string
	want := otsPts{}
	for i := range 20 {
		pts = append(pts, otsDP("hard.keep", base+int64(i)*10, strconv.Itoa(i), "host", "a"))
		want[base+int64(i)*10] = float64(i)
	}
	otsPutOK(t, s, otsArr(pts...))
	intact := func(t *testing.T) {
		t.Helper()
		rs := otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:hard.keep", base, base+1000))
		otsCheckPoints(t, "hard.keep", otsSingle(t, "hard.keep", rs).points(t), want)
		if code, _ := s.do("GET", "/healthz", "", nil); code != 200 {
			t.Fatalf("healthz %d", code)
		}
	}
	limitKiB := int64(1 << 20) // 1 GiB
	if raceEnabled {
		limitKiB *= 3 // the race detector's shadow memory
	}

	t.Run("gzip bomb x4 to /api/query", func(t *testing.T) {
		bomb := gzipBombE2E(t, 21)
		var wg sync.WaitGroup
		codes := make([]int, 4)
		bodies := make([][]byte, 4)
		for i := range codes {
			wg.Go(func() {
				codes[i], _, bodies[i] = otsCall(t, s, "POST", "/api/query", bomb, "Content-Encoding: gzip")
			})
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusRequestEntityTooLarge || !strings.Contains(string(bodies[i]), "once decompressed") {
				t.Fatalf("request %d: %d %s", i, c, bodies[i])
			}
		}
		hwm := hwmKiB(t, s)
		t.Logf("peak RSS after 4 gzip bombs of %d bytes at once: %d KiB", len(bomb), hwm)
		if hwm > limitKiB*3/4 {
			t.Fatalf("peak RSS %d KiB after 4 gzip bombs", hwm)
		}
		intact(t)
	})

	t.Run("lying snappy header", func(t *testing.T) {
		lie := func(claim uint64) []byte { return append(binary.AppendUvarint(nil, claim), 0, 0, 0, 0, 0) }
		hdr := []string{"Content-Type: application/x-protobuf", "Content-Encoding: snappy", "X-Prometheus-Remote-Write-Version: 0.1.0"}
		before := hwmKiB(t, s)
		var wg sync.WaitGroup
		codes := make([]int, 32)
		for i := range codes {
			wg.Go(func() { codes[i], _, _ = otsCall(t, s, "POST", "/api/v1/write", lie(60<<20), hdr...) })
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusBadRequest {
				t.Fatalf("request %d claiming 60 MiB in 5 bytes: %d", i, c)
			}
		}
		grew := hwmKiB(t, s) - before
		t.Logf("peak RSS grew by %d KiB for 32 bodies of 5 bytes claiming 60 MiB", grew)
		if grew > 64<<10 {
			t.Fatalf("peak RSS grew by %d KiB for 32 bodies of 5 bytes", grew)
		}
		if c, _, b := otsCall(t, s, "POST", "/api/v1/write", lie(4<<30), hdr...); c != http.StatusRequestEntityTooLarge {
			t.Fatalf("a 4 GiB claim: %d %s", c, b)
		}
		if c, _, b := otsCall(t, s, "POST", "/api/v1/read", lie(4<<30), "Content-Encoding: snappy"); c != http.StatusRequestEntityTooLarge {
			t.Fatalf("remote read, a 4 GiB claim: %d %s", c, b)
		}
		intact(t)
	})

	t.Run("80,000 tags", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"metric":"hard.tags","timestamp":1700000000,"value":1,"tags":{`)
		for i := range 80000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":"v%d"`, i, i)
		}
		b.WriteString("}}")
		c, _, reply := otsCall(t, s, "POST", "/api/put?details", []byte(b.String()))
		if c != http.StatusBadRequest || !strings.Contains(string(reply), "Too many tags: 80000") || len(reply) > 16<<10 {
			t.Fatalf("%d, %d bytes: %.300s", c, len(reply), reply)
		}
		intact(t)
	})

	t.Run("replies quote little", func(t *testing.T) {
		big := strings.Repeat("m", 1<<20)
		var tags strings.Builder
		for i := range 10000 {
			if i > 0 {
				tags.WriteByte(',')
			}
			fmt.Fprintf(&tags, `"tag%05d":"value%05d"`, i, i)
		}
		for _, tc := range []struct{ name, path, body string }{
			{"1 MB metric name", "/api/put", otsDP(big, base, "1", "host", "a")},
			{"1 MB metric name, details", "/api/put?details", otsDP(big, base, "1", "host", "a")},
			{"10,000 tags", "/api/put", `{"metric":"m","timestamp":1700000000,"value":1,"tags":{` + tags.String() + `}}`},
			{"10,000 tags, details", "/api/put?details", `{"metric":"m","timestamp":1700000000,"value":1,"tags":{` + tags.String() + `}}`},
			{"1 MB metric in a query", "/api/query", `{"start":1700000000,"queries":[{"aggregator":"sum","metric":"` + big + `"}]}`},
		} {
			c, _, reply := otsCall(t, s, "POST", tc.path, []byte(tc.body))
			if c != http.StatusBadRequest || len(reply) > 8<<10 {
				t.Fatalf("%s: %d, %d bytes: %.300s", tc.name, c, len(reply), reply)
			}
		}
		intact(t)
	})

	t.Run("rejections are logged", func(t *testing.T) {
		time.Sleep(1100 * time.Millisecond) // the log's rate limit refills (10 lines a second)
		otsCall(t, s, "POST", "/api/put?details", []byte(`{"metric":"hard.logged","timestamp":0,"value":1,"tags":{"k":"v"}}`))
		// The line is written once the reply has gone: wait for it, a bounded while.
		for i := 0; i < 100 && !strings.Contains(s.logs.String(), "hard.logged"); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		logs := s.logs.String()
		for _, want := range []string{"request rejected", "route=put", "status=400", "remote=127.0.0.1:", "status=413",
			"Invalid timestamp", "hard.logged", "request body once decompressed is larger than the limit"} {
			if !strings.Contains(logs, want) {
				t.Fatalf("the server's log lacks %q:\n%.3000s", want, logs)
			}
		}
		c, metrics := s.do("GET", "/metrics", "", nil)
		if c != 200 || !bytes.Contains(metrics, []byte(`hourglass_requests_rejected_total{code="413",route="query"} 4`)) {
			t.Fatalf("/metrics lacks the rejected count:\n%s", grepLines(metrics, "rejected"))
		}
		intact(t)
	})
}
