package loadtest

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want float64
		ok   bool
	}{
		// utime 250 and stime 50 ticks: 3 seconds.
		{"plain", "1234 (hourglass) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0", 3, true},
		{"name with spaces and parens", "77 (a) b (c) R 1 77 77 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0", 0.03, true},
		{"truncated", "1 (x) S 1 2 3", 0, false},
		{"no name", "1 x S", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.line))
			if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
				t.Fatalf("parseStatCPU = %v, %v; want %v (ok %v)", got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestParseStatusMemory(t *testing.T) {
	status := "Name:\thourglass\nVmPeak:\t 999 kB\nVmHWM:\t  265000 kB\nVmRSS:\t  200000 kB\nThreads:\t12\n"
	peak, rss, err := parseStatusMemory([]byte(status))
	if err != nil || peak != 265000*1024 || rss != 200000*1024 {
		t.Fatalf("parseStatusMemory = %d, %d, %v", peak, rss, err)
	}
	if _, _, err := parseStatusMemory([]byte("Name:\tkthreadd\n")); err == nil {
		t.Fatal("a status without memory lines was accepted")
	}
}

func TestListenInodes(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1092 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1092 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 5552 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5553 1 0000000000000000 100 0 0 10 0
`
	got := listenInodes([]byte(table), 4242)
	if len(got) != 1 || got[0] != "5551" {
		t.Fatalf("listenInodes(4242) = %v, want [5551] (the listener, not the connection)", got)
	}
	if got := listenInodes([]byte(table), 80); len(got) != 0 {
		t.Fatalf("listenInodes(80) = %v", got)
	}
}

func TestProcOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := PIDListening(port)
	if err != nil {
		t.Fatal(err)
	}
	if pid != os.Getpid() {
		t.Fatalf("PIDListening(%d) = %d, want this process %d", port, pid, os.Getpid())
	}
	w, err := startWatch(pid)
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 20_000_000 { // some CPU to see
		x ^= i * i
	}
	_ = x
	s, err := w.stats(2_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if s.PeakRSSBytes <= 0 || s.RSSBytes <= 0 || s.PeakRSSBytes < s.RSSBytes || s.CPUSeconds < 0 {
		t.Fatalf("stats of this process: %+v", s)
	}
	if s.CPUSecondsPerMillionPoints != s.CPUSeconds/2 {
		t.Fatalf("per million points %v, want CPU-s / 2 = %v", s.CPUSecondsPerMillionPoints, s.CPUSeconds/2)
	}
	if p, ok := targetPort("http://127.0.0.1:" + strconv.Itoa(port) + "/x"); !ok || p != port {
		t.Fatalf("targetPort = %d, %v", p, ok)
	}
	if _, ok := targetPort("http://example.com:80"); ok {
		t.Fatal("a host that is not loopback counted as local")
	}
}
