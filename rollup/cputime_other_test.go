//go:build !unix

package rollup

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
