package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// ProcCPU returns the user plus system CPU seconds process pid has used,
// from /proc/<pid>/stat.
func ProcCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc stat
// line; the command name (field 2) may hold spaces and parentheses, so
// fields are counted from its closing parenthesis.
func parseStatCPU(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want at least 13", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("proc stat: %w", err)
	}
	return float64(ut+st) / clockTicks, nil
}

// ProcMemory returns the peak (VmHWM) and current (VmRSS) resident memory
// of process pid, in bytes, from /proc/<pid>/status.
func ProcMemory(pid int) (peak, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatusMemory(b)
}

func parseStatusMemory(b []byte) (peak, rss int64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	found := 0
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &peak
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			return 0, 0, fmt.Errorf("proc status: unexpected line %q", line)
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("proc status: %q: %w", line, err)
		}
		*dst = n * 1024
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("proc status: no VmHWM and VmRSS (a kernel thread, or not Linux)")
	}
	return peak, rss, nil
}

// PIDListening returns the process that listens on TCP port port on this
// machine, found through /proc/net/tcp{,6} and the processes' open sockets.
func PIDListening(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, ino := range listenInodes(b, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no socket listens on port %d", port)
	}
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(p + "/fd")
		if err != nil {
			continue // not ours to read, or gone
		}
		for _, fd := range fds {
			link, err := os.Readlink(p + "/fd/" + fd.Name())
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("port %d: the listening process is not visible in /proc", port)
}

// listenInodes returns the inodes of the sockets in a /proc/net/tcp table
// that listen on port.
func listenInodes(table []byte, port int) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || int(p) != port {
			continue
		}
		out = append(out, f[9])
	}
	return out
}

// procWatch samples a process's CPU time at the start of a run.
type procWatch struct {
	pid  int
	cpu0 float64
}

func startWatch(pid int) (*procWatch, error) {
	cpu, err := ProcCPU(pid)
	if err != nil {
		return nil, err
	}
	return &procWatch{pid: pid, cpu0: cpu}, nil
}

// stats returns the process's figures since startWatch; points is the
// number of points accepted (0 for a query run).
func (w *procWatch) stats(points int64) (*ServerStats, error) {
	cpu, err := ProcCPU(w.pid)
	if err != nil {
		return nil, err
	}
	peak, rss, err := ProcMemory(w.pid)
	if err != nil {
		return nil, err
	}
	s := &ServerStats{PID: w.pid, CPUSeconds: cpu - w.cpu0, PeakRSSBytes: peak, RSSBytes: rss}
	if points > 0 {
		s.CPUSecondsPerMillionPoints = s.CPUSeconds / (float64(points) / 1e6)
	}
	return s, nil
}
