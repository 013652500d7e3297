package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRollupAPI writes rollup points as an OpenTSDB 2.4 rollup job does,
// through /api/rollup and the telnet rollup command, restarts the server,
// and reads them back through /api/query with rollupUsage
// ROLLUP_NOFALLBACK; bad points get OpenTSDB's replies.
func TestRollupAPI(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "-rollup.intervals", "1h")
	const t0 = 1_699_999_200 // an hour boundary, seconds
	code, body := s.postJSON("/api/rollup?details", []map[string]any{
		{"metric": "job.m", "timestamp": t0, "value": 10, "tags": map[string]string{"dc": "a"}, "interval": "1h", "aggregator": "SUM"},
		{"metric": "job.m", "timestamp": t0 + 3600, "value": 2.5, "tags": map[string]string{"dc": "a"}, "interval": "1h", "aggregator": "sum"},
		{"metric": "job.m", "timestamp": t0, "value": 4, "tags": map[string]string{"dc": "a"}, "interval": "1h", "aggregator": "COUNT"},
		{"metric": "job.m", "timestamp": t0, "value": 9, "tags": map[string]string{"dc": "a"}, "interval": "1h", "aggregator": "max"},
		{"metric": "job.m", "timestamp": t0, "value": 1, "tags": map[string]string{"dc": "a"}, "interval": "10m", "aggregator": "sum"},
		{"metric": "job.m", "timestamp": t0, "value": 1, "tags": map[string]string{"dc": "a"}, "interval": "1h", "aggregator": "avg"},
		{"metric": "job.m", "timestamp": t0, "value": 1, "tags": map[string]string{"dc": "a"}, "interval": "1h"},
	})
	if code != 400 {
		t.Fatalf("/api/rollup?details: %d %s", code, body)
	}
	var rep struct {
		Success, Failed int
		Errors          []struct{ Error string }
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Success != 4 || rep.Failed != 3 || len(rep.Errors) != 3 ||
		!strings.Contains(rep.Errors[0].Error, "no such rollup") || !strings.Contains(rep.Errors[1].Error, "no such rollup aggregator") ||
		!strings.Contains(rep.Errors[2].Error, "Missing aggregator") {
		t.Fatalf("reply %s", body)
	}
	// Telnet: a rollup, a pre-aggregated rollup, and a malformed line.
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("rollup 1h-sum job.m 1700006400 5 dc=a\nrollup 1h-sum:sum job.m 1699999200 100 dc=b\nrollup 1h-sum job.m 1700006400 5\nversion\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "rollup: illegal argument: not enough arguments") {
		t.Fatalf("telnet reply %q, %v", line, err)
	}
	if line, err = br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "hourglass") {
		t.Fatalf("telnet: %q after the bad line, want the version (the good lines answer nothing); %v", line, err)
	}
	c.Close()
	if n := metricValue(t, s, "hourglass_rollup_cells_written_total"); n < 6 {
		t.Fatalf("rollup cells written: %v, want at least 6", n)
	}
	s.stop()
	s.restart()

	query := func(ds, tags string) map[string]float64 {
		t.Helper()
		code, body := s.postJSON("/api/query", map[string]any{
			"start": t0, "end": t0 + 3*3600, "rollupUsage": "ROLLUP_NOFALLBACK",
			"queries": []map[string]any{{"metric": "job.m", "aggregator": "sum", "downsample": ds, "tags": map[string]string{"dc": tags}}},
		})
		if code != 200 {
			t.Fatalf("/api/query %s: %d %s", ds, code, body)
		}
		var res []struct{ DPS map[string]float64 }
		if err := json.Unmarshal(body, &res); err != nil || len(res) != 1 {
			t.Fatalf("/api/query %s: %s (%v)", ds, body, err)
		}
		return res[0].DPS
	}
	if got := query("1h-sum", "a"); len(got) != 3 || got["1699999200"] != 10 || got["1700002800"] != 2.5 || got["1700006400"] != 5 {
		t.Fatalf("1h-sum from /api/rollup: %v", got)
	}
	if got := query("1h-max", "a"); len(got) != 1 || got["1699999200"] != 9 {
		t.Fatalf("1h-max from /api/rollup: %v", got)
	}
	if got := query("1h-avg", "a"); len(got) != 1 || got["1699999200"] != 2.5 {
		t.Fatalf("1h-avg (sum / count) from /api/rollup: %v", got)
	}
	// The pre-aggregate is the series with _aggregate=SUM.
	code, body = s.postJSON("/api/query", map[string]any{
		"start": t0, "end": t0 + 3600, "rollupUsage": "ROLLUP_NOFALLBACK",
		"queries": []map[string]any{{"metric": "job.m", "aggregator": "sum", "downsample": "1h-sum", "tags": map[string]string{"dc": "b", "_aggregate": "SUM"}}},
	})
	if code != 200 || !strings.Contains(string(body), `"1699999200":100`) {
		t.Fatalf("the pre-aggregated rollup: %d %s", code, body)
	}
}
