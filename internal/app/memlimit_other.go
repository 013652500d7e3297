//go:build !unix

package app

// addressSpaceLimit: no RLIMIT_AS here.
func addressSpaceLimit() int64 { return 0 }
