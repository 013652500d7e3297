package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"hourglass/internal/procs"
)

// setProcs sets GOMAXPROCS to Go's default (the processors the process
// may use: the machine's, the CPU affinity's and the cgroup's quota) plus
// extra, unless the GOMAXPROCS environment variable is set (it wins) or
// extra is 0.
//
// Go's scheduler has no priorities, and it looks at the network only when
// a processor (P) runs out of goroutines to run, or every 10 ms (sysmon):
// while heavy queries keep every P busy, the connection goroutine of a
// request that has arrived is not even runnable until then, and once it
// is, it queues behind the heavy queries' goroutines, which run 10 ms at a
// time. A P more than the CPUs is mostly idle, parked in the network
// poller: the request's goroutine wakes on it at once, and the kernel,
// which shares the CPUs among the threads, runs the freshly woken thread
// before the busy ones. The mix's raw queries (a millisecond of work)
// waited 4-10 ms for a processor without it (docs/benchmarks.md, "Light
// queries and the processor (session 10)").
func setProcs(extra int, log *slog.Logger) error {
	if extra < 0 {
		return fmt.Errorf("-gomaxprocs-extra=%d: must be 0 or more", extra)
	}
	if env := os.Getenv("GOMAXPROCS"); env != "" {
		if extra > 0 {
			log.Info("GOMAXPROCS from the environment; -gomaxprocs-extra ignored", "GOMAXPROCS", runtime.GOMAXPROCS(0))
		}
		return nil
	}
	if extra == 0 {
		return nil
	}
	n := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(n + extra)
	// A query's own goroutines stay within the CPUs: the spare P is for
	// the network, and six scans at once instead of four held more
	// buffers (peak RSS with queries +60-100 MB at GOGC 100) and slowed
	// the heavy kinds (docs/benchmarks.md, "Light queries and the
	// processor (session 10)").
	procs.SetWorkers(n)
	log.Debug("GOMAXPROCS set", "default", n, "GOMAXPROCS", n+extra)
	return nil
}
