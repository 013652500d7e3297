package migrate

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	todo := Slices(0, 4*3600_000, 3600_000)
	p := NewProgress(todo, t0)
	if got := p.Line(t0); !strings.Contains(got, "slices 0/4 (0.0%)") || !strings.Contains(got, "ETA ?") {
		t.Fatalf("at the start: %q", got)
	}
	p.AddPoints(1_200_000)
	p.SliceDone(todo[0])
	got := p.Line(t0.Add(10 * time.Second))
	for _, want := range []string{"slices 1/4 (25.0%)", "points 1.20M", "120.00k points/s", "ETA 30s"} {
		if !strings.Contains(got, want) {
			t.Errorf("after a quarter in 10s: %q lacks %q", got, want)
		}
	}
	p.AddSkipped(7)
	for _, s := range todo[1:] {
		p.SliceDone(s)
	}
	if got := p.Line(t0.Add(20 * time.Second)); !strings.Contains(got, "ETA 0s") || !strings.Contains(got, "skipped 7") {
		t.Errorf("at the end: %q", got)
	}
}

func TestProgressReport(t *testing.T) {
	p := NewProgress(Slices(0, 10, 5), time.Unix(0, 0))
	var plain bytes.Buffer
	p.Report(&plain, time.Unix(1, 0), false)
	p.Report(&plain, time.Unix(2, 0), false)
	if n := strings.Count(plain.String(), "\n"); n != 2 || strings.Contains(plain.String(), "\r") {
		t.Fatalf("not a terminal: want two plain lines, got %q", plain.String())
	}
	var term bytes.Buffer
	p.AddSkipped(1_000_000) // a longer line, then a shorter one padded over it
	p.Report(&term, time.Unix(1, 0), true)
	long := term.Len()
	p.skipped.Store(0)
	p.Report(&term, time.Unix(2, 0), true)
	if strings.Contains(term.String(), "\n") || strings.Count(term.String(), "\r") != 2 {
		t.Fatalf("terminal: want two carriage-return lines, got %q", term.String())
	}
	if second := term.Len() - long; second != long {
		t.Fatalf("terminal: the shorter line is %d bytes, want it padded to %d to cover the longer", second, long)
	}
}

func TestProgressLoopStops(t *testing.T) {
	p := NewProgress(Slices(0, 10, 5), time.Now())
	var buf lockedWriter
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { p.Loop(&buf, false, time.Millisecond, stop); close(done) }()
	// Wait for a tick's line (a loaded machine may take a while to run the
	// goroutine), then stop: the stop writes one more.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(buf.String(), "\n"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Loop wrote no line in 10 s at 1ms")
		}
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Loop did not return after stop")
	}
	if n := strings.Count(buf.String(), "\n"); n < 2 {
		t.Fatalf("Loop wrote %d lines (a tick's, then the stop's), want 2 or more", n)
	}
}
