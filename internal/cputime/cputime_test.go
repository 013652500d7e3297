package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessGrows: after a spin of CPU work the process's CPU time has
// grown, by no more than the wall-clock time the spin took on each CPU.
func TestProcessGrows(t *testing.T) {
	d0, ok := Process()
	if !ok {
		t.Skip("the platform does not tell the process's CPU time")
	}
	start := time.Now()
	x := 0
	for i := 0; time.Since(start) < 50*time.Millisecond && i < 1<<30; i++ {
		x += i
	}
	wall := time.Since(start)
	d1, _ := Process()
	if d1 <= d0 {
		t.Fatalf("CPU time did not grow over a %v spin: %v then %v (x=%d)", wall, d0, d1, x)
	}
	// Other goroutines (the GC, the test runner) may run meanwhile, on any CPU.
	if lim := wall*time.Duration(runtime.NumCPU()) + 50*time.Millisecond; d1-d0 > lim {
		t.Fatalf("CPU time grew %v over a %v spin, more than %v", d1-d0, wall, lim)
	}
	if Used() < d1 {
		t.Fatalf("Used() %v is behind Process() %v", Used(), d1)
	}
}
