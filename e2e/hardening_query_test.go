package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 11's query rows: a query whose output would not fit is refused
// from its plan or as it runs, with a 4xx naming the limit, within
// seconds, the server alive, its RSS bounded and the data intact; a
// query past -query-timeout stops.

// vmHWM is the peak RSS of the process, from /proc/<pid>/status (0 where
// there is no /proc).
func vmHWM(t *testing.T, s *server) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	return 0
}

// timedCall is otsCall that also fails when the answer takes more than 20 s.
func timedCall(t *testing.T, s *server, method, path string, body []byte) (int, []byte) {
	t.Helper()
	began := time.Now()
	code, _, b := otsCall(t, s, method, path, body)
	if d := time.Since(began); d > 20*time.Second {
		t.Fatalf("%s %s took %v", method, path, d)
	}
	return code, b
}

// wantOTSLimit checks an OpenTSDB 413 that names the output limit.
func wantOTSLimit(t *testing.T, code int, body []byte, what string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || code != 413 || e.Error.Code != 413 ||
		!strings.Contains(e.Error.Message, "-query-max-output-points") || !strings.Contains(e.Error.Message, "output points") {
		t.Fatalf("%s: status %d, body %.400s; want 413 naming -query-max-output-points", what, code, body)
	}
	if len(body) > 1000 {
		t.Errorf("%s: error body of %d bytes", what, len(body))
	}
}

func TestHardeningQueryOutputLimit(t *testing.T) {
	// The binary's defaults, under a soft memory limit that a runaway
	// query would blow through (the GC then thrashes; VmHWM says so).
	t.Setenv("GOMEMLIMIT", "900MiB")
	s := start(t, t.TempDir())
	now := time.Now().Unix()
	otsPutOK(t, s, otsArr(otsDP("some.metric", now-3600, "1", "host", "a")))

	// The row: one point, a day of 1 ms buckets filled with 0.
	code, body := timedCall(t, s, "GET", "/api/query?start=1d-ago&m=sum:1ms-avg-zero:some.metric", nil)
	wantOTSLimit(t, code, body, "1ms-avg-zero")
	if !strings.Contains(string(body), "buckets of 1ms-avg-zero") {
		t.Errorf("the message does not give the numbers: %s", body)
	}
	// Every fill policy that emits empty buckets, every dialect form,
	// other aggregators, and calendar buckets.
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/query?start=1d-ago&m=avg:1ms-max-nan:some.metric", ""},
		{"GET", "/api/query?start=1d-ago&m=p99:1ms-p50-null:rate:some.metric", ""},
		{"GET", "/api/query?start=1d-ago&m=zimsum:1msc-count-zero:some.metric", ""},
		{"POST", "/api/query", `{"start":"1d-ago","queries":[{"metric":"some.metric","aggregator":"sum","downsample":"1ms-avg-zero"}]}`},
		{"POST", "/api/query", `{"start":"2d-ago","useCalendar":true,"timezone":"Europe/Paris","queries":[{"metric":"some.metric","aggregator":"dev","downsample":"10ms-sum-null"}]}`},
		{"POST", "/api/query?arrays=true", `{"start":"30d-ago","queries":[{"metric":"some.metric","aggregator":"mimmax","downsample":"100ms-last-nan","filters":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}]}]}`},
	} {
		var b []byte
		if tc.body != "" {
			b = []byte(tc.body)
		}
		code, body := timedCall(t, s, tc.method, tc.path, b)
		wantOTSLimit(t, code, body, tc.path+" "+tc.body)
	}
	// What fits answers: no fill, 0all over a year, a calendar day.
	for _, qs := range []string{
		"start=1d-ago&m=sum:1ms-avg:some.metric",
		"start=365d-ago&m=sum:0all-sum:some.metric",
		"start=1d-ago&m=sum:1hc-count-zero:some.metric",
	} {
		rs := otsQueryGET(t, s, qs)
		if len(rs) != 1 {
			t.Fatalf("%s: %d results", qs, len(rs))
		}
	}
	// PromQL: a day at a 1 ms step is Prometheus' own 400.
	end := strconv.FormatInt(now, 10)
	q := url.Values{"query": {`{__name__="some.metric"}`}, "start": {strconv.FormatInt(now-86400, 10)}, "end": {end}, "step": {"0.001"}}
	code, body = timedCall(t, s, "GET", "/api/v1/query_range?"+q.Encode(), nil)
	if code != 400 || !strings.Contains(string(body), `"errorType":"bad_data"`) || !strings.Contains(string(body), "11,000 points") {
		t.Fatalf("query_range at 1 ms: %d %s", code, body)
	}
	// /api/query/last answers one point a series.
	if code, body := timedCall(t, s, "GET", "/api/query/last?timeseries=some.metric", nil); code != 200 || !strings.Contains(string(body), `"value":"1"`) {
		t.Fatalf("last: %d %s", code, body)
	}
	// Alive, data intact, memory bounded, and the refusals counted.
	otsCheckPoints(t, "after the refusals", otsSingle(t, "", otsQueryGET(t, s, "start=1d-ago&m=sum:some.metric")).points(t), otsPts{now - 3600: 1})
	if hwm := vmHWM(t, s); hwm > 1<<30 {
		t.Errorf("peak RSS %d MiB, want under 1 GiB", hwm>>20)
	}
	_, metrics := s.do("GET", "/metrics", "", nil)
	if !strings.Contains(string(metrics), `hourglass_query_limit_exceeded_total{limit="output_points"} 7`) {
		t.Errorf("/metrics does not count the 7 refusals:\n%s", grepLines(metrics, "hourglass_query_limit_exceeded_total"))
	}
}

// grepLines returns the lines of b that contain s.
func grepLines(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Series that fit one by one but not together stop as they are
// downsampled; a PromQL range query's steps × series are checked before
// its samples are read.
func TestHardeningQueryOutputLimitRunning(t *testing.T) {
	s := start(t, t.TempDir(), "-query-max-output-points", "1000", "-allow-delete")
	var ps []string
	for h := range 3 {
		for i := range int64(30) {
			ps = append(ps, otsDP("run.m", otsT0+i*60, "1", "host", fmt.Sprint("h", h)))
		}
	}
	otsPutOK(t, s, otsArr(ps...))
	// 3 series × 600 filled one-second buckets: each fits, not together.
	qs := fmt.Sprintf("start=%d&end=%d&m=sum:1s-avg-zero:run.m", otsT0, otsT0+599)
	code, body := timedCall(t, s, "GET", "/api/query?"+qs, nil)
	wantOTSLimit(t, code, body, "3 series × 600 buckets")
	// One of them fits.
	rs := otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:1s-avg-zero:run.m{host=h0}", otsT0, otsT0+599))
	if n := len(otsSingle(t, "", rs).points(t)); n != 600 {
		t.Fatalf("one series: %d points", n)
	}
	// Raw points count too: 90 fit.
	otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:run.m", otsT0, otsT0+3600))
	// A delete reads the raw points it deletes: 1,100 in one request are
	// refused and stay; a quarter of them at a time go (a point the head
	// and the store both hold while it is flushed counts twice).
	var del []string
	for i := range int64(1100) {
		del = append(del, otsDP("del.m", otsT0+i, "1", "host", "a"))
	}
	otsPutOK(t, s, otsArr(del...))
	delQS := func(from, to int64) string {
		return fmt.Sprintf("/api/query?start=%d&end=%d&m=sum:del.m", from, to)
	}
	code, body = timedCall(t, s, "DELETE", delQS(otsT0, otsT0+1099), nil)
	wantOTSLimit(t, code, body, "delete of 1100 points")
	count := fmt.Sprintf("start=%d&end=%d&m=sum:0all-count:del.m", otsT0, otsT0+1099)
	otsCheckPoints(t, "after the refused delete", otsSingle(t, "", otsQueryGET(t, s, count)).points(t), otsPts{otsT0: 1100})
	for from := otsT0; from < otsT0+1100; from += 275 {
		if code, body := timedCall(t, s, "DELETE", delQS(from, from+274), nil); code != 200 {
			t.Fatalf("delete of 275 points: %d %.300s", code, body)
		}
	}
	if rs := otsQueryGET(t, s, count); len(rs) != 0 {
		t.Fatalf("after deleting the four quarters: %+v", rs)
	}
	// PromQL: 3 series × 601 steps.
	q := url.Values{"query": {`{__name__="run.m"}`}, "start": {strconv.FormatInt(otsT0, 10)}, "end": {strconv.FormatInt(otsT0+600, 10)}, "step": {"1"}}
	code, body = timedCall(t, s, "GET", "/api/v1/query_range?"+q.Encode(), nil)
	if code != 422 || !strings.Contains(string(body), `"errorType":"execution"`) || !strings.Contains(string(body), "-query-max-output-points") {
		t.Fatalf("query_range of 3 × 601: %d %s", code, body)
	}
	q.Set("step", "60")
	if code, body := timedCall(t, s, "GET", "/api/v1/query_range?"+q.Encode(), nil); code != 200 {
		t.Fatalf("query_range of 3 × 11: %d %s", code, body)
	}
}

// A query past -query-timeout stops: 408 in OpenTSDB's dialect, 503
// "timeout" in Prometheus'. The query would take seconds (millions of
// filled buckets, under the output limit); the timeout is 100 ms.
func TestHardeningQueryTimeout(t *testing.T) {
	s := start(t, t.TempDir(), "-query-timeout", "100ms")
	otsPutOK(t, s, otsArr(otsDP("slow.m", otsT0+1, "1", "host", "a"), otsDP("slow.m", otsT0+1, "2", "host", "b")))
	began := time.Now()
	qs := fmt.Sprintf("start=%d&end=%d&m=sum:1ms-avg-zero:slow.m", otsT0*1000, otsT0*1000+2_400_000-1)
	code, body := timedCall(t, s, "GET", "/api/query?"+qs, nil)
	if code != 408 || !strings.Contains(string(body), "timed out") {
		t.Fatalf("status %d, body %.300s; want 408", code, body)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the 408 took %v", d)
	}
	// PromQL: a query over many steps with a subquery at 1 ms resolution.
	q := url.Values{"query": {`sum_over_time(({__name__="slow.m"} * 2)[40m:1ms])`}, "time": {strconv.FormatInt(otsT0+2400, 10)}}
	code, body = timedCall(t, s, "GET", "/api/v1/query?"+q.Encode(), nil)
	if code != 503 || !strings.Contains(string(body), `"errorType":"timeout"`) {
		t.Fatalf("PromQL: status %d, body %.300s; want 503 timeout", code, body)
	}
	// Alive, and the timeouts counted.
	rs := otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:slow.m", otsT0, otsT0+60))
	otsCheckPoints(t, "after the timeouts", otsSingle(t, "", rs).points(t), otsPts{otsT0 + 1: 3})
	_, metrics := s.do("GET", "/metrics", "", nil)
	if !strings.Contains(string(metrics), `hourglass_query_limit_exceeded_total{limit="timeout"} 2`) {
		t.Errorf("/metrics does not count the 2 timeouts:\n%s", grepLines(metrics, "hourglass_query_limit_exceeded_total"))
	}
}
