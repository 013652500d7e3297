//go:build linux && cgo

package pebble

// #include <features.h>
// #ifdef __GLIBC__
// #include <malloc.h>
// static int hg_limit_arenas(int n) { return mallopt(M_ARENA_MAX, n); }
// static int hg_trim(void) { return malloc_trim(0); }
// static int hg_glibc(void) { return 1; }
// #else
// static int hg_limit_arenas(int n) { return 0; }
// static int hg_trim(void) { return 0; }
// static int hg_glibc(void) { return 0; }
// #endif
import "C"

// mallocIsGlibc reports whether Pebble's C allocations go through glibc's
// malloc, whose arenas and trimming malloc.go manages.
func mallocIsGlibc() bool { return C.hg_glibc() == 1 }

// setMallocArenas limits glibc's malloc to n arenas (mallopt M_ARENA_MAX).
func setMallocArenas(n int) { C.hg_limit_arenas(C.int(n)) }

// trimMalloc returns the whole free pages inside glibc's arenas to the
// system (malloc_trim(0)).
func trimMalloc() { C.hg_trim() }
