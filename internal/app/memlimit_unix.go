//go:build unix

package app

import (
	"math"
	"syscall"
)

// addressSpaceLimit is the soft RLIMIT_AS in bytes, 0 if there is none
// (RLIM_INFINITY is all ones, past MaxInt64).
func addressSpaceLimit() int64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil || r.Cur >= math.MaxInt64 {
		return 0
	}
	return int64(r.Cur)
}
