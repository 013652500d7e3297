package api

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hourglass/api/dialect"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// lyingSnappy is a snappy block whose header claims claim bytes, followed by
// a few bytes of nothing.
func lyingSnappy(claim uint64) []byte {
	return append(binary.AppendUvarint(nil, claim), 0, 0, 0, 0, 0)
}

func gzipBomb(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zero))
		_, _ = zw.Write(zero[:k])
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSnappyClaimNeverTrusted: a header's claim is refused past the limit
// (413, even past 4 GiB), and under it is refused when the compressed bytes
// cannot hold it, without allocating it, in remote write and remote read.
func TestSnappyClaimNeverTrusted(t *testing.T) {
	ps := newPromServer(t, nil)
	for _, tc := range []struct {
		name  string
		path  string
		claim uint64
		code  int
		has   string
	}{
		{"write 60 MiB claim, 5 bytes", "/api/v1/write", 60 << 20, 400, "more than 9 compressed bytes can hold"},
		{"write 4 GiB claim", "/api/v1/write", 4 << 30, 413, "decodes to 4294967296 bytes"},
		{"write 2^63 claim", "/api/v1/write", 1 << 63, 413, "more than the limit"},
		{"read 3 MiB claim, 5 bytes", "/api/v1/read", 3 << 20, 400, "compressed bytes can hold"},
		{"read 4 GiB claim", "/api/v1/read", 4 << 30, 413, "decodes to 4294967296 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r promReply
			n := allocated(func() { r = ps.do("POST", tc.path, promV1Headers, lyingSnappy(tc.claim)) })
			if r.code != tc.code || !strings.Contains(string(r.body), tc.has) {
				t.Fatalf("%d %q, want %d with %q", r.code, r.body, tc.code, tc.has)
			}
			if n > 1<<20 {
				t.Fatalf("%d bytes allocated for a body of 5 bytes claiming %d", n, tc.claim)
			}
		})
	}
}

// TestGzipBombCostsTheLimit: a gzip body that expands past the limit is 413
// having allocated about the limit, not what it expands to nor a doubling
// buffer's overshoot; the buffer does not go back to the pool.
func TestGzipBombCostsTheLimit(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.MaxDecodedBytes = 4 << 20 })
	bomb := gzipBomb(t, 32<<20)
	for _, path := range []string{"/api/query", "/api/search/lookup"} {
		var r promReply
		n := allocated(func() {
			r = ps.do("POST", path, map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}, bomb)
		})
		if r.code != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), "once decompressed") {
			t.Fatalf("%s: %d %q", path, r.code, r.body)
		}
		if n > 8<<20 {
			t.Fatalf("%s: %d bytes allocated for a limit of 4 MiB", path, n)
		}
		if got := ps.srv.decoding.used; got != 0 {
			t.Fatalf("%d bytes still reserved after the request", got)
		}
	}
	buf := dialect.GetBuf()
	buf.Grow(4<<20 + 1) // past the pool's largest (dialect.pooledBufMax)
	dialect.PutBuf(buf) // dropped: nothing to observe but that it does not panic
}

// TestReadGrowing reads bodies of every size around the chunk bounds intact.
func TestReadGrowing(t *testing.T) {
	b := newDecodeBudget(1<<30, prometheus.NewRegistry())
	for _, n := range []int{0, 1, firstChunk - 1, firstChunk, firstChunk + 1, 3*maxChunk + 17} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * 7)
		}
		for _, pooled := range []int{0, 100, 2 * firstChunk} {
			var buf bytes.Buffer
			buf.Grow(pooled)
			res := b.reservation()
			if err := readGrowing(io.LimitReader(bytes.NewReader(src), int64(n)), &buf, int64(n), dialect.ErrTooLargeAsSent, res); err != nil {
				t.Fatal(n, pooled, err)
			}
			if !bytes.Equal(buf.Bytes(), src) {
				t.Fatalf("%d bytes (pooled %d): read back differs", n, pooled)
			}
			res.release()
			err := readGrowing(bytes.NewReader(append(src, 1)), new(bytes.Buffer), int64(n), dialect.ErrTooLargeAsSent, b.reservation())
			if !errors.Is(err, dialect.ErrTooLargeAsSent) {
				t.Fatalf("%d+1 bytes over a limit of %d: %v", n, n, err)
			}
		}
	}
}

// TestDecodeBudget: past the budget a request is refused, unless alone.
func TestDecodeBudget(t *testing.T) {
	b := newDecodeBudget(100, prometheus.NewRegistry())
	alone := b.reservation()
	if !alone.grow(150) {
		t.Fatal("a request alone was refused")
	}
	other := b.reservation()
	if other.grow(1) {
		t.Fatal("a second request was admitted past the budget")
	}
	alone.release()
	if !other.grow(60) || b.reservation().grow(50) {
		t.Fatal("the budget was not given back")
	}
	if got := testutil.ToFloat64(b.refused); got != 2 {
		t.Fatalf("refused counter %v, want 2", got)
	}
	other.release()
	if b.used != 0 || testutil.ToFloat64(b.inUse) != 0 {
		t.Fatalf("used %d after every release", b.used)
	}
}

// TestDecodeBudgetSpent: with the budget held by others, OpenTSDB answers
// 503 and remote write 429, both with Retry-After.
func TestDecodeBudgetSpent(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.MaxDecodingBytes = 1 << 10 })
	held := ps.srv.decoding.reservation()
	held.grow(1 << 10)
	defer held.release()
	big := bytes.Repeat([]byte(" "), 64<<10)
	r := ps.do("POST", "/api/query", map[string]string{"Content-Type": "application/json"}, big)
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "-max-decoding-bytes") {
		t.Fatalf("OpenTSDB: %d %v %q", r.code, r.header, r.body)
	}
	r = ps.do("POST", "/api/put", map[string]string{"Content-Encoding": "gzip"}, gzipBomb(t, 10))
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("/api/put gzip: %d %v %q", r.code, r.header, r.body)
	}
	r = ps.do("POST", "/api/v1/write", promV1Headers, lyingSnappy(3))
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("remote write: %d %v %q", r.code, r.header, r.body)
	}
}

// TestRejectLog: a rejected request is logged with its route, status,
// remote address and message, and counted; past the rate, lines are
// dropped and their count goes out with the next line.
func TestRejectLog(t *testing.T) {
	ps := newPromServer(t, nil)
	var logBuf bytes.Buffer
	rl := ps.srv.rejects
	rl.log = slog.New(slog.NewTextHandler(&logBuf, nil))
	now := time.Unix(1700000000, 0)
	rl.limit.Now = func() time.Time { return now }

	r := ps.do("POST", "/api/put", nil, []byte(`{"metric":"`+strings.Repeat("m", 1<<20)+`","timestamp":1,"value":1,"tags":{"k":"v"}}`))
	if r.code != 400 || len(r.body) > 1024 {
		t.Fatalf("%d, %d bytes", r.code, len(r.body))
	}
	line := logBuf.String()
	for _, want := range []string{"request rejected", "route=put", "status=400", "remote=192.0.2.1", "message=", "One or more data points had errors"} {
		if !strings.Contains(line, want) {
			t.Fatalf("log line %q lacks %q", line, want)
		}
	}
	logBuf.Reset()
	for range 3 * rejectLogRate {
		ps.do("POST", "/api/v1/write", map[string]string{"Content-Type": "text/plain"}, nil)
	}
	if n := strings.Count(logBuf.String(), "request rejected"); n != rejectLogRate-1 {
		t.Fatalf("%d lines logged in one instant, want the %d tokens left", n, rejectLogRate-1)
	}
	now = now.Add(time.Second)
	logBuf.Reset()
	ps.do("GET", "/api/query?start=x", nil, nil)
	if !strings.Contains(logBuf.String(), "suppressed_before=21") {
		t.Fatalf("no count of the dropped lines: %q", logBuf.String())
	}
	if got := testutil.ToFloat64(rl.counter.WithLabelValues("prom_write", "415")); got != 3*rejectLogRate {
		t.Fatalf("rejected counter %v", got)
	}
}
