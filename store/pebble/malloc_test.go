package pebble

import (
	"os"
	"testing"
)

// TestTrimmer: malloc is trimmed when the process's anonymous memory
// exceeds what the Go runtime and Pebble account for by more than the
// slack, and only then; unreadable figures trim nothing.
func TestTrimmer(t *testing.T) {
	anon := int64(500)
	trims := 0
	tr := &trimmer{slack: 64, anon: func() int64 { return anon },
		goMapped: func() int64 { return 300 }, counted: func() int64 { return 100 }, trim: func() { trims++ }}
	if !tr.check() || trims != 1 || tr.trims.Load() != 1 || tr.excess.Load() != 100 {
		t.Fatalf("excess 100 over a slack of 64: %d trims, excess %d; want one trim", trims, tr.excess.Load())
	}
	anon = 464 // excess 64: within the slack
	if tr.check() || trims != 1 || tr.excess.Load() != 64 {
		t.Fatalf("excess 64 within a slack of 64: %d trims, excess %d; want none", trims, tr.excess.Load())
	}
	anon = 0 // /proc unreadable
	if tr.check() || trims != 1 {
		t.Fatalf("unknown memory: %d trims, want none", trims)
	}
}

// TestTrimmerFigures: the process's figures the trimmer reads are there
// (Linux), and Go's is at least its heap in use.
func TestTrimmerFigures(t *testing.T) {
	if !mallocIsGlibc() {
		t.Skip("not glibc: no trimmer")
	}
	a, g := procAnon(), goMapped()
	if a <= 0 || g <= 0 {
		t.Fatalf("anonymous memory %d, Go's %d: want both positive", a, g)
	}
	s := openTest(t, t.TempDir(), testOptions())
	if s.trimmer == nil {
		t.Fatal("no trimmer with glibc")
	}
	if c := s.trimmer.counted(); c < 0 {
		t.Fatalf("Pebble's counted memory %d", c)
	}
}

// TestMallocMmapThreshold: once a store is open, C allocations of a
// block's size are mmap'd (freed, they leave nothing in an arena), small
// ones are not. glibc serves an allocation from free memory in an arena
// before it maps one, so of 512 blocks (16 MiB) at least half must be
// mapped: more than a test process's arenas have free.
func TestMallocMmapThreshold(t *testing.T) {
	if !mallocIsGlibc() {
		t.Skip("not glibc")
	}
	if _, set := os.LookupEnv("MALLOC_MMAP_THRESHOLD_"); set {
		t.Skip("MALLOC_MMAP_THRESHOLD_ set: left to glibc")
	}
	openTest(t, t.TempDir(), testOptions())
	const k = 512
	if got := allocMmapped(32<<10, k); got < k/2*(32<<10) {
		t.Fatalf("%d allocations of 32 KiB (data blocks): %d bytes mmap'd, want at least half of them", k, got)
	}
	if got := allocMmapped(1<<10, k); got >= k/2*(1<<10) {
		t.Fatalf("%d allocations of 1 KiB: %d bytes mmap'd, want few", k, got)
	}
}
