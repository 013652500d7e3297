package pebble

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPebbleLogBounded: a flood of background errors (Pebble retrying a
// failing flush in a loop) writes at most pebbleLogRate lines in an
// instant, every error is counted on /metrics, and the next line after
// the wait says how many were dropped; both databases share the limit.
func TestPebbleLogBounded(t *testing.T) {
	s := openTest(t, t.TempDir(), testOptions())
	var buf bytes.Buffer
	now := time.Unix(1700000000, 0)
	plog := newPebbleLog(slog.New(slog.NewTextHandler(&buf, nil)))
	plog.limit.Now = func() time.Time { return now }
	s.log = plog
	main, data := plog.eventListener(), plog.with("db", dataSubdir).eventListener()
	for i := range 10000 {
		l := main
		if i%2 == 1 {
			l = data
		}
		l.BackgroundError(errors.New("open /gone/000042.sst: no such file or directory"))
	}
	plog.Errorf("a failed %s", "compaction")
	if n := strings.Count(buf.String(), "\n"); n != pebbleLogRate {
		t.Fatalf("%d lines in one instant, want %d:\n%s", n, pebbleLogRate, buf.String())
	}
	reg := prometheus.NewRegistry()
	s.RegisterMetrics(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "hourglass_store_errors_total" {
			counted = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if counted != 10001 {
		t.Fatalf("hourglass_store_errors_total %v, want 10001", counted)
	}
	buf.Reset()
	now = now.Add(time.Second)
	data.BackgroundError(errors.New("again"))
	line := buf.String()
	if !strings.Contains(line, "suppressed_before=9991") || !strings.Contains(line, "db=data") {
		t.Fatalf("the line after the wait: %q", line)
	}
}
