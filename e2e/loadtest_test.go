package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hourglass/loadtest"
)

// loadtestBinary builds cmd/hourglass-loadtest once per test run.
func loadtestBinary(t *testing.T) string {
	t.Helper()
	return toolBinary(t, "hourglass-loadtest")
}

// runLoadtest runs the loadtest binary and returns its JSON report.
func runLoadtest(t *testing.T, args ...string) *loadtest.Report {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	args = append(args, "-quiet", "-json", out)
	cmd := exec.Command(loadtestBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hourglass-loadtest %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := loadtest.ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), r.Dialect) {
		t.Fatalf("the text report does not name the dialect %q:\n%s", r.Dialect, stdout.String())
	}
	return r
}

// hasEndpoint tells whether path is routed (anything but 404).
func (s *server) hasEndpoint(method, path, contentType string) bool {
	s.t.Helper()
	code, _ := s.do(method, path, contentType, nil)
	return code != 404
}

// TestLoadtestWritesWhatItSays runs the load generator against the real
// binary in every write dialect the server has, each over its own time range
// of the same series, then reads every series back with /api/query and
// checks it holds exactly the points the generator makes for that range and
// as many as the report says were accepted.
func TestLoadtestWritesWhatItSays(t *testing.T) {
	s := start(t, t.TempDir())
	const (
		series   = 60 // five hosts
		steps    = 40
		interval = 10 * time.Second
		churn    = 30.0 // a host lives 12 steps: series stop and start within each range
	)
	span := int64(steps) * interval.Milliseconds()
	base := (time.Now().Add(-3*time.Hour).UnixMilli() / 3_600_000) * 3_600_000
	dialects := []struct {
		name string
		have bool
	}{
		{loadtest.DialectPut, true},
		{loadtest.DialectTelnet, true},
		{loadtest.DialectRW1, s.hasEndpoint("POST", "/api/v1/write", "application/x-protobuf")},
		{loadtest.DialectRW2, s.hasEndpoint("POST", "/api/v1/write", "application/x-protobuf;proto=io.prometheus.write.v2.Request")},
	}
	for i, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			if !d.have {
				t.Skipf("the server has no /api/v1/write yet")
			}
			s.t = t
			startMs := base + int64(i)*(span+3_600_000) // disjoint ranges, an hour apart
			args := []string{"write", "-dialect", d.name, "-url", s.url, "-telnet-addr", s.addr,
				"-series", strconv.Itoa(series), "-steps", strconv.Itoa(steps), "-interval", interval.String(),
				"-start", strconv.FormatInt(startMs/1000, 10), "-churn", fmt.Sprint(churn), "-seed", "9",
				"-workers", "3", "-batch", "150", "-duration", "2m", "-pid", strconv.Itoa(s.cmd.Process.Pid)}
			r := runLoadtest(t, args...)
			g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 9, Series: series, Interval: interval,
				Start: time.UnixMilli(startMs), Steps: steps, Churn: churn})
			if err != nil {
				t.Fatal(err)
			}
			if r.Stopped != "data" || r.PointsSent != g.Points() || r.PointsAccepted != g.Points() ||
				r.PointsRejected != 0 || r.RequestErrors != 0 {
				t.Fatalf("report: stopped by %s, sent %d, accepted %d, rejected %d, failed requests %d, errors %v; want all %d accepted",
					r.Stopped, r.PointsSent, r.PointsAccepted, r.PointsRejected, r.RequestErrors, r.Errors, g.Points())
			}
			if r.Server == nil || r.Server.PID != s.cmd.Process.Pid || r.Server.PeakRSSBytes <= 0 {
				t.Fatalf("report has no server figures: %+v", r.Server)
			}
			if r.DistinctSeries <= series {
				t.Fatalf("%d distinct series with churn, want more than %d", r.DistinctSeries, series)
			}
			want := map[string]map[int64]loadtest.Value{}
			g.Each(func(p loadtest.Point) {
				k := p.S.Key()
				if want[k] == nil {
					want[k] = map[int64]loadtest.Value{}
				}
				want[k][p.T/1000] = p.V
			})
			if int64(len(want)) != r.DistinctSeries {
				t.Fatalf("report says %d distinct series, the generator made %d", r.DistinctSeries, len(want))
			}
			got := s.readBack(t, startMs, startMs+span)
			var total int64
			for k, dps := range got {
				total += int64(len(dps))
				w, ok := want[k]
				if !ok {
					t.Fatalf("/api/query returned series %s that was not written", k)
				}
				for ts, v := range dps {
					wv, ok := w[ts]
					if !ok {
						t.Fatalf("%s: point at %d was not written", k, ts)
					}
					if v.String() != wv.String() {
						t.Fatalf("%s at %d: read %s, wrote %s", k, ts, v, wv)
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("/api/query returned %d series, %d were written", len(got), len(want))
			}
			if total != r.PointsAccepted {
				t.Fatalf("/api/query returned %d points, the report says %d were accepted", total, r.PointsAccepted)
			}
		})
	}

	// The query mix over the last range written: every kind answers, and
	// finds data.
	s.t = t
	last := -1
	for i, d := range dialects {
		if d.have {
			last = i
		}
	}
	startMs := base + int64(last)*(span+3_600_000)
	for _, qd := range []struct {
		dialect, path string
	}{
		{loadtest.QueryOpenTSDB, "/api/query"},
		{loadtest.QueryProm, "/api/v1/query_range"},
	} {
		t.Run("query "+qd.dialect, func(t *testing.T) {
			s.t = t
			if !s.hasEndpoint("GET", qd.path, "") {
				t.Skipf("the server has no %s yet", qd.path)
			}
			r := runLoadtest(t, "query", "-query-dialect", qd.dialect, "-url", s.url,
				"-series", strconv.Itoa(series), "-steps", strconv.Itoa(steps), "-interval", interval.String(),
				"-start", strconv.FormatInt(startMs/1000, 10), "-churn", fmt.Sprint(churn), "-seed", "9",
				"-queries", "20", "-concurrency", "2", "-range", "5m", "-long-range", "2h", "-duration", "2m")
			if r.Stopped != "queries" || r.RequestErrors != 0 {
				t.Fatalf("stopped by %s with %d failed queries: %v", r.Stopped, r.RequestErrors, r.Errors)
			}
			for _, k := range loadtest.QueryKinds {
				q := r.Queries[k]
				if q == nil || q.Latency.Count != 4 || q.Errors != 0 {
					t.Fatalf("kind %s: %+v, want 4 queries without errors", k, q)
				}
				if q.Series < 1 || q.Points < 1 {
					t.Fatalf("kind %s found no data: %+v (example %s)", k, q, q.Example)
				}
			}
			if raw := r.Queries[loadtest.KindRaw]; raw.Series != 1 {
				t.Fatalf("raw query: %v series per answer, want 1 (example %s)", raw.Series, raw.Example)
			}
		})
	}
}

// readBack returns every series of every generator metric with points in
// [startMs, endMs], keyed as loadtest.SeriesKey, timestamps in seconds.
func (s *server) readBack(t *testing.T, startMs, endMs int64) map[string]map[int64]loadtest.Value {
	t.Helper()
	out := map[string]map[int64]loadtest.Value{}
	for _, m := range loadtest.Metrics {
		code, body := s.postJSON("/api/query", map[string]any{
			"start": startMs, "end": endMs,
			"queries": []any{map[string]any{"aggregator": "none", "metric": m.Name}},
		})
		if code != 200 {
			t.Fatalf("/api/query %s: %d %s", m.Name, code, body)
		}
		var res []struct {
			Metric string                     `json:"metric"`
			Tags   map[string]string          `json:"tags"`
			DPS    map[string]json.RawMessage `json:"dps"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatalf("/api/query %s: %v\n%s", m.Name, err, body)
		}
		for _, r := range res {
			k := loadtest.SeriesKey(r.Metric, r.Tags)
			if out[k] != nil {
				t.Fatalf("series %s returned twice", k)
			}
			dps := map[int64]loadtest.Value{}
			for ts, raw := range r.DPS {
				sec, err := strconv.ParseInt(ts, 10, 64)
				if err != nil {
					t.Fatalf("%s: timestamp %q", k, ts)
				}
				txt := string(raw)
				var v loadtest.Value
				if strings.ContainsAny(txt, ".eE") {
					f, err := strconv.ParseFloat(txt, 64)
					if err != nil {
						t.Fatalf("%s: value %s", k, txt)
					}
					v = loadtest.Value{Float: f, IsFloat: true}
				} else {
					n, err := strconv.ParseInt(txt, 10, 64)
					if err != nil {
						t.Fatalf("%s: value %s", k, txt)
					}
					v = loadtest.Value{Int: n}
				}
				dps[sec] = v
			}
			out[k] = dps
		}
	}
	return out
}
