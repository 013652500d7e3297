//go:build unix

package rollup

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used. The benchmarks
// report it per point beside the wall-clock figures: on a machine shared
// with other work it does not count time spent waiting for a CPU.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
