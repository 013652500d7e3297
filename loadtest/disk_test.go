package loadtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "store", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"wal/000001": 0, "store/000002.log": 1000, "store/deep/x.sst": 4321, "top": 7} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := DirBytes(dir)
	if err != nil || n != 5328 {
		t.Fatalf("DirBytes = %d, %v; want 5328", n, err)
	}
	if _, err := DirBytes(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("DirBytes of a missing directory: no error")
	}
}

// TestDiskSamplerPeak: a file that appears and goes while the sampler runs
// shows in the peak, not in the end figure.
func TestDiskSamplerPeak(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDiskSampler(dir, 5*time.Millisecond)
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		d.mu.Lock()
		seen := d.st.PeakBytes
		d.mu.Unlock()
		if seen >= 1<<20 {
			break
		}
		if i > 2000 {
			t.Fatal("the sampler never saw the big file in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	st := d.stop()
	if st.PeakBytes != 1<<20+100 || st.EndBytes != 100 || st.Samples < 2 || st.Error != "" {
		t.Fatalf("stats %+v: want peak %d, end 100, 2+ samples, no error", st, 1<<20+100)
	}
	if startDiskSampler("", time.Second).stop() != nil {
		t.Fatal("a sampler of no directory reported something")
	}
	bad := startDiskSampler(filepath.Join(dir, "missing"), time.Second).stop()
	if bad.Error == "" || bad.Samples != 0 {
		t.Fatalf("sampling a missing directory: %+v, want an error and no samples", bad)
	}
}

// TestSampleDiskUntilDead: sampling stops when the process is gone, and
// ProcAlive tells a running process from an exited one.
func TestSampleDiskUntilDead(t *testing.T) {
	if !ProcAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 42), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *DiskStats, 1)
	go func() {
		done <- SampleDisk(context.Background(), dir, 10*time.Millisecond, func() bool { return ProcAlive(cmd.Process.Pid) })
	}()
	var st *DiskStats
	select {
	case st = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SampleDisk still running 10s after its process exited (a zombie counted as alive?)")
	}
	if st.Samples < 2 || st.PeakBytes != 42 || st.EndBytes != 42 {
		t.Fatalf("stats %+v: want 2+ samples of 42 bytes", st)
	}
	_ = cmd.Wait()
	if ProcAlive(cmd.Process.Pid) {
		t.Fatal("an exited process is alive")
	}
}
