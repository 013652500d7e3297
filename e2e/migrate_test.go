package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/util/teststorage"
)

// These tests run cmd/hourglass-migrate between two real hourglass
// processes (hourglass speaks both source APIs: OpenTSDB's /api/suggest and
// /api/query, and remote read), and from Prometheus' own remote-read
// handler, then compare what both sides hold.

// migrateBinary builds cmd/hourglass-migrate once per test run.
func migrateBinary(t *testing.T) string {
	t.Helper()
	return toolBinary(t, "hourglass-migrate")
}

// runMigrate runs the tool to completion and returns its exit code and stderr.
func runMigrate(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(migrateBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("hourglass-migrate %s did not finish in 2 minutes:\n%s", strings.Join(args, " "), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// migHour is the start of the data the tests write: a whole hour.
const migHour = int64(1_699_999_200_000)

// migWriteOpenTSDB writes 3 hours of points to s over /api/put: two metrics,
// three hosts, integers, floats, integers past 2^53, millisecond times.
// It returns the number of points.
func migWriteOpenTSDB(t *testing.T, s *server) int {
	t.Helper()
	n := 0
	for h := range 3 {
		var dps []string
		for i := range 360 { // every 30s for 3h
			ts := migHour + int64(i)*30_000
			host := fmt.Sprintf("h%d", h)
			dps = append(dps,
				otsDP("mig.int", ts, strconv.Itoa(i*(h+1)), "host", host),
				otsDP("mig.float", ts+int64(h)*7, strconv.FormatFloat(float64(i)*0.1+float64(h)/3, 'g', -1, 64), "host", host, "dc", "lga"))
			if i%60 == 0 {
				dps = append(dps, otsDP("mig.big", ts, strconv.FormatInt(1<<60+int64(i), 10), "host", host))
				n++
			}
			n += 2
		}
		otsPutOK(t, s, otsArr(dps...))
	}
	return n
}

// migOpenTSDBPoints reads every series of the metrics from s over /api/query
// (aggregator none) as series → timestamp → value text.
func migOpenTSDBPoints(t *testing.T, s *server, metrics ...string) (map[string]map[int64]string, int) {
	t.Helper()
	out := map[string]map[int64]string{}
	n := 0
	for _, m := range metrics {
		rs := otsQuery(t, s, "/api/query", map[string]any{
			"start": migHour, "end": migHour + 4*3600_000, "msResolution": true,
			"queries": []map[string]any{{"aggregator": "none", "metric": m}},
		})
		for _, r := range rs {
			k := r.Metric + fmt.Sprint(r.Tags)
			if out[k] != nil {
				t.Fatalf("series %s answered twice", k)
			}
			out[k] = r.points(t)
			n += len(out[k])
		}
	}
	return out, n
}

func migCompareOpenTSDB(t *testing.T, src, dst *server, want int) {
	t.Helper()
	metrics := []string{"mig.int", "mig.float", "mig.big"}
	a, na := migOpenTSDBPoints(t, src, metrics...)
	b, nb := migOpenTSDBPoints(t, dst, metrics...)
	if na != want || nb != want {
		t.Fatalf("points: %d at the source, %d at the destination, want %d on both", na, nb, want)
	}
	if len(a) != len(b) || len(a) != 9 {
		t.Fatalf("series: %d at the source, %d at the destination, want 9", len(a), len(b))
	}
	for k, pa := range a {
		pb := b[k]
		for ts, v := range pa {
			if pb[ts] != v {
				t.Fatalf("series %s at %d: source %s, destination %q", k, ts, v, pb[ts])
			}
		}
	}
}

func TestMigrateOpenTSDB(t *testing.T) {
	src := start(t, t.TempDir())
	dst := start(t, t.TempDir())
	want := migWriteOpenTSDB(t, src)
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"-from", "opentsdb", "-src", src.url, "-dst", dst.url + "/",
		"-start", strconv.FormatInt(migHour, 10), "-end", strconv.FormatInt(migHour+4*3600_000, 10),
		"-slice", "1h", "-state", state, "-batch", "500", "-verify"}

	// Stopped after two slices of four (the data fills three), then resumed.
	code, out := runMigrate(t, append(args, "-max-slices", "2")...)
	if code != 1 || !strings.Contains(out, "0 completed before, 2 to copy now") {
		t.Fatalf("first run: exit %d, want 1 (verify finds a slice missing)\n%s", code, out)
	}
	if !strings.Contains(out, "verify: slice") || !strings.Contains(out, "point counts differ in 1 of 4 slices") {
		t.Fatalf("a half-done migration verified without naming the slices that differ:\n%s", out)
	}
	code, out = runMigrate(t, args...)
	if code != 0 || !strings.Contains(out, "2 completed before, 2 to copy now") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, fmt.Sprintf("verify: 4 slices, %d points on both sides", want)) {
		t.Fatalf("verify did not count %d points on both sides:\n%s", want, out)
	}
	if !strings.Contains(out, "points/s") || !strings.Contains(out, "ETA") {
		t.Fatalf("no progress line on stderr:\n%s", out)
	}
	migCompareOpenTSDB(t, src, dst, want)

	// A third run has nothing to copy and only verifies.
	code, out = runMigrate(t, args...)
	if code != 0 || !strings.Contains(out, "4 completed before, 0 to copy now") || !strings.Contains(out, "copied 0 points") {
		t.Fatalf("third run: exit %d\n%s", code, out)
	}
	// A state file of other flags is refused.
	code, out = runMigrate(t, append(args[:len(args)-1:len(args)-1], "-slice", "30m")...)
	if code != 1 || !strings.Contains(out, "written by another run") {
		t.Fatalf("a state of other flags: exit %d\n%s", code, out)
	}
}

// TestMigrateKilledAndResumed kills the tool mid-run (held back by -rate),
// reruns it, and finds every point once at the destination.
func TestMigrateKilledAndResumed(t *testing.T) {
	src := start(t, t.TempDir())
	dst := start(t, t.TempDir())
	want := migWriteOpenTSDB(t, src)
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"-from", "opentsdb", "-src", src.url, "-dst", dst.url,
		"-start", strconv.FormatInt(migHour, 10), "-end", strconv.FormatInt(migHour+4*3600_000, 10),
		"-slice", "30m", "-state", state, "-batch", "100", "-concurrency", "1"}
	cmd := exec.Command(migrateBinary(t), append(args, "-rate", "1000")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(state)
		if bytes.Contains(b, []byte(`"done":[`)) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no slice completed in 60s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	code, out := runMigrate(t, append(args, "-verify")...)
	if code != 0 || strings.Contains(out, " 0 completed before") || strings.Contains(out, ", 0 to copy now") {
		t.Fatalf("rerun after kill: exit %d (want 0, some slices done before and some left)\nfirst run:\n%s\nrerun:\n%s", code, stderr.String(), out)
	}
	migCompareOpenTSDB(t, src, dst, want)
}

// TestMigrateRemoteRead copies what Prometheus' own remote-write sender
// wrote to one hourglass into another over remote read and remote write,
// and compares both sides with Prometheus' remote-read client, bit for bit.
func TestMigrateRemoteRead(t *testing.T) {
	src := start(t, t.TempDir())
	dst := start(t, t.TempDir())
	// Timestamps after the queue manager starts (it sends nothing older).
	base := time.Now().Add(time.Hour).Truncate(time.Hour).UnixMilli()
	d := newPromDataset(base)
	promSendWithPrometheus(t, src, d, remoteapi.WriteV1MessageType)
	end := base + 3600_000
	code, out := runMigrate(t, "-from", "remote-read", "-src", src.url+"/api/v1/read", "-dst", dst.url,
		"-start", strconv.FormatInt(base, 10), "-end", strconv.FormatInt(end, 10), "-slice", "2m",
		"-match", `{__name__=~"e2e_.+"}`, "-match", `{__name__=~"e2e.+"}`, "-verify")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("verify: 30 slices, %d points on both sides", d.samples())) {
		t.Fatalf("exit %d, want 0 and %d points verified:\n%s", code, d.samples(), out)
	}
	all := promMatcher(t, labels.MatchRegexp, "__name__", "e2e.+")
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		a := promRemoteRead(t, src, rt, base, end, all)
		b := promRemoteRead(t, dst, rt, base, end, all)
		if len(a) != len(d.series) || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s: source has %d series, want %d; destination differs:\nsource %v\ndestination %v", rt, len(a), len(d.series), a, b)
		}
	}
}

// TestMigrateFromPrometheus serves a Prometheus TSDB through Prometheus'
// own remote-read handler (storage/remote.NewReadHandler) and copies it into
// hourglass.
func TestMigrateFromPrometheus(t *testing.T) {
	st := teststorage.New(t)
	base := (time.Now().Add(-5*time.Hour).UnixMilli() / 3600_000) * 3600_000
	app := st.Appender(context.Background())
	type key struct {
		series string
		t      int64
	}
	want := map[key]uint64{}
	for s := range 20 {
		ls := labels.FromStrings("__name__", "prom_metric_"+strconv.Itoa(s%4), "instance", "i"+strconv.Itoa(s), "job", "node")
		for i := range 240 { // every 15s for an hour
			ts := base + int64(i)*15_000
			v := float64(s*1000+i) / 7
			if i == 100 {
				v = math.Inf(1)
			}
			if _, err := app.Append(0, ls, ts, v); err != nil {
				t.Fatal(err)
			}
			want[key{ls.String(), ts}] = math.Float64bits(v)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	h := remote.NewReadHandler(slog.New(slog.DiscardHandler), nil, st, func() config.Config { return config.DefaultConfig }, 0, 1, 1<<20)
	prom := httptest.NewServer(h)
	defer prom.Close()

	dst := start(t, t.TempDir())
	code, out := runMigrate(t, "-from", "remote-read", "-src", prom.URL+"/api/v1/read", "-dst", dst.url,
		"-start", strconv.FormatInt(base, 10), "-end", strconv.FormatInt(base+3600_000, 10), "-slice", "10m",
		"-match", `{job="node"}`, "-concurrency", "3", "-verify")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("verify: 6 slices, %d points on both sides", len(want))) {
		t.Fatalf("exit %d, want 0 and %d points verified:\n%s", code, len(want), out)
	}
	got := promRemoteRead(t, dst, prompb.ReadRequest_STREAMED_XOR_CHUNKS, base, base+3600_000, promMatcher(t, labels.MatchEqual, "job", "node"))
	n := 0
	for s, pts := range got {
		for _, p := range pts {
			k := key{s, int64(p[0])}
			if w, ok := want[k]; !ok || w != p[1] {
				t.Fatalf("series %s at %d: %x at the destination, want %x (present: %v)", s, p[0], p[1], w, ok)
			}
			n++
		}
	}
	if n != len(want) {
		t.Fatalf("%d samples at the destination, want %d", n, len(want))
	}
}

// TestMigrateWithAuthAndTLS copies between two hourglass processes that
// serve https and require credentials: a read-only user on the source, a
// write-only token on the destination.
func TestMigrateWithAuthAndTLS(t *testing.T) {
	src := startSecure(t)
	var dps []string
	for i := range 100 {
		dps = append(dps, otsDP("mig.tls", migHour/1000+int64(i)*60, strconv.Itoa(i), "host", "a"))
	}
	if code, _, b := src.req(t, "POST", "/api/put", cred{user: "writer", pass: "writer-pw"}, "application/json", otsArr(dps...)); code != 204 {
		t.Fatalf("put: %d %s", code, b)
	}
	times := []string{"-start", strconv.FormatInt(migHour, 10), "-end", strconv.FormatInt(migHour+2*3600_000, 10)}
	for _, from := range []string{"opentsdb", "remote-read"} {
		t.Run(from, func(t *testing.T) {
			dst := startSecure(t)
			args := append([]string{"-from", from, "-src", src.https, "-src-user", "grafana", "-src-password", "grafana-pw",
				"-src-ca-file", src.caFile, "-dst", dst.https, "-dst-ca-file", dst.caFile, "-retries", "0"}, times...)
			code, out := runMigrate(t, args...)
			if code != 1 || !strings.Contains(out, "slice [") || !strings.Contains(out, "401") {
				t.Fatalf("no destination credentials: exit %d, want 1 and a 401 naming the slice:\n%s", code, out)
			}
			args = append(args, "-dst-bearer-token", "write-token")
			code, out = runMigrate(t, append(args, "-verify")...)
			if code != 1 || !strings.Contains(out, "copied 100 points") || !strings.Contains(out, "verifying slice [") || !strings.Contains(out, "403") {
				t.Fatalf("a write-only token: exit %d, want 100 points copied, then verify refused (403, no read scope) naming the slice:\n%s", code, out)
			}
			q := `{"start":` + strconv.FormatInt(migHour, 10) + `,"end":` + strconv.FormatInt(migHour+2*3600_000, 10) +
				`,"queries":[{"aggregator":"none","metric":"mig.tls"}]}`
			code, _, body := dst.req(t, "POST", "/api/query", cred{user: "grafana", pass: "grafana-pw"}, "application/json", q)
			var rs []otsResult
			otsDecode(t, []byte(body), &rs)
			if code != 200 || len(rs) != 1 || len(rs[0].points(t)) != 100 {
				t.Fatalf("the destination answers %d with %d series, want 100 points: %s", code, len(rs), body)
			}
		})
	}
}
