//go:build !linux || !cgo

package pebble

// Without cgo Pebble's memory comes from the Go heap; glibc's arenas
// exist on Linux only: nothing to manage.
func mallocIsGlibc() bool       { return false }
func setMallocArenas(int)       {}
func trimMalloc()               {}
func setMmapThreshold(int, int) {}
func allocMmapped(int) bool     { return false }
