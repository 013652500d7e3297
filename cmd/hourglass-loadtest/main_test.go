package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseStart(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		in    string
		steps int
		live  bool
		want  time.Time
		ok    bool
	}{
		{"default backfill ends now", "", 360, false, time.Date(2026, 1, 2, 2, 4, 0, 0, time.UTC), true},
		{"default live starts now", "", 360, true, time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), true},
		{"unix seconds", "1700000000", 1, false, time.Unix(1700000000, 0), true},
		{"unix milliseconds", "1700000000123", 1, false, time.UnixMilli(1700000000123), true},
		{"rfc3339", "2026-01-01T00:00:00Z", 1, false, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"relative", "-24h", 1, false, time.Date(2026, 1, 1, 3, 4, 0, 0, time.UTC), true},
		{"garbage", "yesterday", 1, false, time.Time{}, false},
		{"bad duration", "-1x", 1, false, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStart(tc.in, now, 10*time.Second, tc.steps, tc.live)
			if (err == nil) != tc.ok || !got.Equal(tc.want) {
				t.Fatalf("parseStart(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestRunRejects(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope"},
		{"write", "-dialect", "carrier-pigeon", "-url", "http://127.0.0.1:1"},
		{"write", "-confirm-url", "http://127.0.0.1:1/metrics"},
		{"write", "stray"},
		{"query", "-query-dialect", "sql"},
		{"table"},
		{"du", "-dir", "/"},
		{"du", "-pid", "1"},
		{"du", "-dir", "/nonexistent-hourglass-dir", "-pid", "1", "-max", "1s"},
	} {
		var out, errb bytes.Buffer
		if err := run(args, &out, &errb); err == nil {
			t.Errorf("run(%q) succeeded", strings.Join(args, " "))
		}
	}
}

// TestDu: du samples until the process is gone and prints the peak.
func TestDu(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 1234), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer cmd.Wait() //nolint:errcheck
	var out, errb bytes.Buffer
	js := filepath.Join(dir, "..", "du.json")
	if err := run([]string{"du", "-dir", dir, "-pid", strconv.Itoa(cmd.Process.Pid), "-every", "10ms", "-max", "20s", "-json", js}, &out, &errb); err != nil {
		t.Fatalf("du: %v (%s)", err, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "1234" {
		t.Fatalf("du printed %q, want 1234", got)
	}
	b, err := os.ReadFile(js)
	if err != nil || !strings.Contains(string(b), `"peak_bytes": 1234`) {
		t.Fatalf("du -json wrote %s (%v)", b, err)
	}
}
