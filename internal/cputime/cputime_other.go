//go:build !unix

package cputime

import "time"

// Process returns the CPU time the process has used; ok is false where
// the platform cannot tell, as here.
func Process() (d time.Duration, ok bool) { return 0, false }
