//go:build !unix

package chunk

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
