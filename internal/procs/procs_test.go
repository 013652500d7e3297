package procs

import (
	"runtime"
	"testing"
)

func TestWorkers(t *testing.T) {
	t.Cleanup(func() { SetWorkers(0) })
	if got, want := Workers(), runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("Workers() unset = %d, want GOMAXPROCS %d", got, want)
	}
	SetWorkers(3)
	if got := Workers(); got != 3 {
		t.Fatalf("Workers() after SetWorkers(3) = %d", got)
	}
	SetWorkers(-1)
	if got, want := Workers(), runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("Workers() after SetWorkers(-1) = %d, want GOMAXPROCS %d", got, want)
	}
}
