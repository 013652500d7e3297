package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metricOf returns the value of an unlabelled metric in /metrics.
func (s *server) metricOf(name string) float64 {
	s.t.Helper()
	code, body := s.do("GET", "/metrics", "", nil)
	if code != 200 {
		s.t.Fatalf("/metrics: %d", code)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f
		}
	}
	s.t.Fatalf("no %s in /metrics", name)
	return 0
}

// lateHours is nSeries series of two past hours, a point a second: issue
// 11's case for one series. round changes the values.
func lateHours(base int64, nSeries, round int) []point {
	tags := make([]map[string]string, nSeries)
	for h := range tags {
		tags[h] = map[string]string{"host": fmt.Sprintf("h%03d", h)}
	}
	pts := make([]point, 0, 7200*nSeries)
	for i := int64(0); i < 7200; i++ {
		for h := 0; h < nSeries; h++ {
			var v any = i*100 + int64(round)
			if i%2 == 1 {
				v = float64(i) + float64(round)/8
			}
			pts = append(pts, point{metric: "late.resend", tags: tags[h], ts: base + i*1000, value: v})
		}
	}
	return pts
}

// TestLatePointsResent sends two past hours, sends them again, and stops
// the server: the second sending is written as few chunks as the first,
// SIGTERM returns quickly, and every point reads back with the values of
// the last sending after a restart. HOURGLASS_LATE_SERIES (default 4) sets
// the series; 278 of them are 2 M points a sending.
func TestLatePointsResent(t *testing.T) {
	nSeries := 4
	if v := os.Getenv("HOURGLASS_LATE_SERIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOURGLASS_LATE_SERIES=%q: want a positive number", v)
		}
		nSeries = n
	}
	s := start(t, t.TempDir(), "-late-grace", "2s")
	const hourMs = 3_600_000
	base := nowMs()/hourMs*hourMs - 4*hourMs // two whole hours, well past their grace
	end := base + 2*hourMs
	send := func(pts []point) time.Duration {
		t0 := time.Now()
		for i := 0; i < len(pts); i += 2000 {
			s.put(pts[i:min(i+2000, len(pts))])
		}
		return time.Since(t0)
	}
	sealedAt := func() float64 {
		// The late chunks are written once their -late-grace passes.
		deadline := time.Now().Add(45 * time.Second)
		for s.metricOf("hourglass_head_late_points") > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("late chunks still hold %v points after 45 s", s.metricOf("hourglass_head_late_points"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		return s.metricOf("hourglass_head_chunks_sealed_total")
	}
	first := lateHours(base, nSeries, 0)
	took := send(first)
	sealed1 := sealedAt()
	took2 := send(lateHours(base, nSeries, 1))
	sealed2 := sealedAt() - sealed1
	t.Logf("%d points a sending: first took %v and sealed %v chunks, second took %v and sealed %v", len(first), took, sealed1, took2, sealed2)
	// 7,200 points a series at 480 a chunk: 15 chunks a series each time.
	if sealed2 > 2*sealed1+float64(4*nSeries) {
		t.Fatalf("re-sending sealed %v chunks, sending %v", sealed2, sealed1)
	}
	// A third sending, stopped while its late chunks are in the head.
	last := lateHours(base, nSeries, 2)
	send(last)
	t.Logf("server peak RSS before SIGTERM: %s", peakRSS(s.cmd.Process.Pid))
	stopAt := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", s.waitErr, s.logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit within 60 s of SIGTERM with %d late points in the head:\n%s", len(last), s.logs.String())
	}
	s.cmd = nil
	t.Logf("SIGTERM with %d late points sent: exited after %v", len(last), time.Since(stopAt).Round(time.Millisecond))
	s.restart()
	s.checkExact("late.resend", base, end, last)
}

// peakRSS returns the VmHWM line of a process' /proc status (Linux), or
// why it cannot.
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
