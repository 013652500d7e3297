// Package cputime reads the CPU time (user and system) the process has
// used, for the benchmarks that report figures per CPU-second beside the
// wall-clock ones: on a machine shared with other work, CPU time does not
// count the time spent waiting for a CPU. It imports nothing of hourglass.
package cputime

import "time"

// Used is Process's time, 0 where the platform cannot tell.
func Used() time.Duration {
	d, _ := Process()
	return d
}
