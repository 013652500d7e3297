package main

import (
	"log/slog"
	"os"
	"runtime"
	"testing"

	"hourglass/internal/procs"
)

func TestSetProcs(t *testing.T) {
	def := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(def); procs.SetWorkers(0) })
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name  string
		env   string // GOMAXPROCS in the environment; "" unset
		extra int
		want  int
		err   bool
	}{
		{name: "one more", extra: 1, want: def + 1},
		{name: "three more", extra: 3, want: def + 3},
		{name: "zero keeps Go's default", extra: 0, want: def},
		{name: "the environment wins", env: "1", extra: 1, want: def},
		{name: "negative", extra: -1, want: def, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(def)
			if tc.env != "" {
				t.Setenv("GOMAXPROCS", tc.env)
			} else if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
				// The test itself may run under GOMAXPROCS: unset it here.
				t.Setenv("GOMAXPROCS", v)
				os.Unsetenv("GOMAXPROCS")
			}
			err := setProcs(tc.extra, quiet)
			if (err != nil) != tc.err {
				t.Fatalf("setProcs(%d): error %v, want error %v", tc.extra, err, tc.err)
			}
			if got := runtime.GOMAXPROCS(0); got != tc.want {
				t.Errorf("setProcs(%d) with GOMAXPROCS=%q: GOMAXPROCS %d, want %d", tc.extra, tc.env, got, tc.want)
			}
			// A query's workers stay at the CPUs whatever the spare Ps.
			if got := procs.Workers(); got != def {
				t.Errorf("setProcs(%d) with GOMAXPROCS=%q: procs.Workers() %d, want %d", tc.extra, tc.env, got, def)
			}
		})
	}
}
