package loadtest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample", ms(7), 50, 7 * time.Millisecond},
		{"one sample p99", ms(7), 99, 7 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"median of five", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"p90 of ten", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{"p91 of ten rounds up", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 91, 10 * time.Millisecond},
		{"p100 is the max", ms(1, 5, 9), 100, 9 * time.Millisecond},
		{"p1 of a hundred", hundred, 1, time.Millisecond},
		{"p99 of a hundred", hundred, 99, 99 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Fatalf("Percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	// 1..1000 ms in a random order: p50 500, p90 900, p99 990, max 1000.
	d := make([]time.Duration, 1000)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	s := Summarize(d)
	want := Summary{Count: 1000, Mean: 500.5, P50: 500, P90: 900, P99: 990, Max: 1000}
	if s != want {
		t.Fatalf("Summarize = %+v, want %+v", s, want)
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatalf("Summarize(nil) = %+v", Summarize(nil))
	}
	var l Latencies
	for _, x := range []int{30, 10, 20} {
		l.Add(time.Duration(x) * time.Microsecond)
	}
	if s := l.Summary(); s.Count != 3 || s.P50 != 0.02 || s.Max != 0.03 {
		t.Fatalf("Latencies.Summary = %+v, want 3 samples, p50 0.02ms, max 0.03ms", s)
	}
	l.Add(time.Second)
	if s, next := l.Since(3); s.Count != 1 || s.Max != 1000 || next != 4 {
		t.Fatalf("Since(3) = %+v, %d; want one sample of 1000ms, 4", s, next)
	}
}

func TestErrorLogBounded(t *testing.T) {
	var e errorLog
	for i := range 50 {
		e.add(strings.Repeat("x", i%20+1))
		e.add("same")
	}
	l := e.list()
	if len(l) != maxErrors+1 {
		t.Fatalf("%d entries, want %d and one for the rest", len(l), maxErrors+1)
	}
	var total int64
	for _, c := range l {
		total += c.Count
		if c.Message == "same" && c.Count != 50 {
			t.Fatalf("same counted %d times, want 50", c.Count)
		}
	}
	if total != 100 {
		t.Fatalf("counts add to %d, want 100", total)
	}
}

func TestReportRoundTripAndText(t *testing.T) {
	r := &Report{
		Label: "hg", Mode: "write", Dialect: DialectPut, Target: "http://127.0.0.1:1", Stopped: "data",
		Seconds: 2, Series: 10, PointsSent: 100, PointsAccepted: 90, PointsRejected: 10, PointsPerSec: 45,
		Latency: Summary{Count: 2, P50: 1, P90: 2, P99: 2, Max: 2},
		Server:  &ServerStats{PID: 9, CPUSeconds: 1.5, CPUSecondsPerMillionPoints: 16666, PeakRSSBytes: 50e6},
		Errors:  []ErrorCount{{"HTTP 400: bad", 1}},
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.PointsAccepted != 90 || back.Server == nil || back.Server.PeakRSSBytes != 50e6 || back.Latency != r.Latency {
		t.Fatalf("round trip lost something: %+v", back)
	}
	buf.Reset()
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"accepted 90, rejected 10", "p50 1.00ms", "peak RSS 50.0 MB", "error ×1: HTTP 400: bad"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *Report) {
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("w.json", &Report{Mode: "write", PointsSent: 2_000_000, PointsAccepted: 2_000_000, PointsPerSec: 1_234_567.4,
		Server: &ServerStats{CPUSecondsPerMillionPoints: 0.7, PeakRSSBytes: 265e6}})
	write("q.json", &Report{Mode: "query", Dialect: QueryProm, Server: &ServerStats{PeakRSSBytes: 900e6}, Queries: map[string]*QueryStats{
		KindRaw:  {Latency: Summary{Count: 10, P50: 1.234, P90: 12.34}},
		KindLong: {Latency: Summary{Count: 3, P50: 150, P90: 170}, Errors: 3},
	}})
	runs := filepath.Join(dir, "runs.tsv")
	if err := os.WriteFile(runs, []byte("# comment\nvm\tprom-rw1\tw.json\tq.json\t3000000\nhg\ttelnet\tw.json\t-\t-\nhg\tprom-rw2\tw.json\t-\t-\t5000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want header, rule and three rows:\n%s", len(lines), b.String())
	}
	if want := "| hg | prom-rw2 | 1,234,567 | 2,000,000 / 2,000,000 | 0.70 | 265 | 2.50 / — |"; !strings.HasPrefix(lines[4], want) {
		t.Fatalf("row with the sixth column (peak while running)\n%s\nwant it to start\n%s", lines[4], want)
	}
	for _, want := range []string{"| vm | prom-rw1 | 1,234,567 | 2,000,000 / 2,000,000 | 0.70 | 265 / 900 | — / 1.50 | PromQL | — | 1.23 / 12.3 | — | — | — | failed (3) |"} {
		if lines[2] != want {
			t.Fatalf("row\n%s\nwant\n%s", lines[2], want)
		}
	}
	if !strings.HasPrefix(lines[3], "| hg | telnet | 1,234,567 |") || !strings.HasSuffix(lines[3], "| 0.70 | 265 | — | — | — | — | — | — | — | — |") {
		t.Fatalf("row without query or disk: %s", lines[3])
	}
	if err := os.WriteFile(runs, []byte("vm\tprom-rw1\tw.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRuns(runs); err == nil {
		t.Fatal("a line of three columns was accepted")
	}
}
