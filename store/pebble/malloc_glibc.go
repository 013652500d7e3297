//go:build linux && cgo

package pebble

// #include <features.h>
// #ifdef __GLIBC__
// #include <malloc.h>
// #include <stdlib.h>
// static int hg_limit_arenas(int n) { return mallopt(M_ARENA_MAX, n); }
// static int hg_mmap_threshold(int n) { return mallopt(M_MMAP_THRESHOLD, n); }
// static int hg_mmap_max(int n) { return mallopt(M_MMAP_MAX, n); }
// #if __GLIBC_PREREQ(2, 33)
// static size_t hg_mmapped(void) { struct mallinfo2 m = mallinfo2(); return m.hblkhd; }
// #else
// static size_t hg_mmapped(void) { struct mallinfo m = mallinfo(); return (size_t)m.hblkhd; }
// #endif
// static size_t hg_alloc_mmapped(size_t n, int k) {
//   size_t before = hg_mmapped(), after;
//   void **p = calloc(k, sizeof(void *));
//   for (int i = 0; i < k; i++) p[i] = calloc(n, 1);
//   after = hg_mmapped();
//   for (int i = 0; i < k; i++) free(p[i]);
//   free(p);
//   return after > before ? after - before : 0;
// }
// static int hg_trim(void) { return malloc_trim(0); }
// static int hg_glibc(void) { return 1; }
// #else
// static int hg_limit_arenas(int n) { return 0; }
// static int hg_mmap_threshold(int n) { return 0; }
// static int hg_mmap_max(int n) { return 0; }
// static size_t hg_alloc_mmapped(size_t n, int k) { return 0; }
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

// setMmapThreshold makes glibc's malloc serve allocations of n bytes or
// more with mmap (mallopt M_MMAP_THRESHOLD), fixing the threshold glibc
// otherwise raises as such blocks are freed, and keeps at most max such
// mappings at once (M_MMAP_MAX; past it allocations come from the arenas).
func setMmapThreshold(n, max int) {
	C.hg_mmap_threshold(C.int(n))
	C.hg_mmap_max(C.int(max))
}

// allocMmapped makes k C allocations of n bytes at once and returns how
// many more bytes malloc held in mmap'd chunks with them, then frees them;
// for tests.
func allocMmapped(n, k int) int64 { return int64(C.hg_alloc_mmapped(C.size_t(n), C.int(k))) }
