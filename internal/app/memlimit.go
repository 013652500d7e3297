package app

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultMemoryLimit is -memory-limit's default: the Go runtime's soft
// memory limit is 60 % of the memory the process may use.
const DefaultMemoryLimit = "60%"

// DefaultGCPercent is -gc-percent's default: the Go collector lets the heap
// grow by three quarters of its live size between two collections instead
// of the runtime's 100 %. At the issue's scale (docs/benchmarks.md, "Memory
// with queries and the running disk peak (session 10)" and "A query's
// goroutines count the CPUs") the heap between collections is the largest
// part of the process's resident memory: the write peak was 246–267 MB at
// 100, 221–241 at 75, 208–218 at 50; but at 50 telnet's write CPU per point
// rose past half VictoriaMetrics' (0.49–0.55 CPU-s per M points against
// 0.42–0.45 at 75). VictoriaMetrics runs its Go heap at GOGC=30.
const DefaultGCPercent = 75

// ParseMemoryLimit reads -memory-limit: a number of bytes, or a percentage
// ("60%") of avail, the bytes the process may use (0 or less: unknown,
// and a percentage is then an error). "0" means no limit and gives 0.
func ParseMemoryLimit(s string, avail int64) (int64, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f > 100 {
			return 0, fmt.Errorf("-memory-limit=%.40q: a percentage must be over 0 and at most 100", s)
		}
		if avail <= 0 {
			return 0, fmt.Errorf("-memory-limit=%.40q: the machine's memory is unknown; give bytes", s)
		}
		return int64(float64(avail) * f / 100), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("-memory-limit=%.40q: want bytes (e.g. 2000000000), a percentage (e.g. 60%%) or 0 for none", s)
	}
	return n, nil
}

// availableMemory is the memory the process may use: the least of the
// machine's (/proc/meminfo), the cgroup's (memory.max, v2, or
// memory.limit_in_bytes, v1) and the address-space rlimit (ulimit -v).
// where names the one that won. 0 when none is known.
func availableMemory() (n int64, where string) {
	consider := func(v int64, w string) {
		if v > 0 && (n == 0 || v < n) {
			n, where = v, w
		}
	}
	consider(memTotal(), "/proc/meminfo MemTotal")
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			if v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && v < 1<<60 {
				consider(v, f)
			}
		}
	}
	consider(addressSpaceLimit(), "RLIMIT_AS (ulimit -v)")
	return n, where
}

// memTotal is MemTotal of /proc/meminfo in bytes, 0 if unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// applyMemoryLimit sets the Go runtime's soft memory limit from spec
// (-memory-limit) unless GOMEMLIMIT is set, which then wins, and logs it.
func applyMemoryLimit(spec string, log *slog.Logger) error {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		log.Info("memory limit from GOMEMLIMIT; -memory-limit ignored", "GOMEMLIMIT", env, "bytes", debug.SetMemoryLimit(-1))
		return nil
	}
	avail, where := availableMemory()
	limit, err := ParseMemoryLimit(spec, avail)
	if err != nil {
		return err
	}
	if limit == 0 {
		log.Info("memory limit off", "memory_limit", spec)
		return nil
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit", "memory_limit", spec, "bytes", limit, "available_bytes", avail, "available_from", where)
	return nil
}

// applyGCPercent sets the Go collector's GOGC from percent (-gc-percent;
// negative: off) unless GOGC is set, which then wins, and logs it.
func applyGCPercent(percent int, log *slog.Logger) {
	if env := os.Getenv("GOGC"); env != "" {
		log.Info("GC percent from GOGC; -gc-percent ignored", "GOGC", env)
		return
	}
	if percent < 0 {
		percent = -1
	}
	debug.SetGCPercent(percent)
	log.Info("GC percent", "gc_percent", percent)
}
