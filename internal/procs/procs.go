// Package procs says how many goroutines a query may keep computing at
// once: the CPUs the process may use, which the server may set below
// GOMAXPROCS when it gives the Go runtime spare processors for the network
// (cmd/hourglass, -gomaxprocs-extra).
package procs

import (
	"runtime"
	"sync/atomic"
)

var workers atomic.Int32

// SetWorkers sets what Workers returns; 0 or less: GOMAXPROCS again.
func SetWorkers(n int) { workers.Store(int32(max(n, 0))) }

// Workers is the number of goroutines one query's scans, per-series
// computations and sub-queries may run at once: the CPUs set by
// SetWorkers, or GOMAXPROCS when none were set.
func Workers() int {
	if n := workers.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}
