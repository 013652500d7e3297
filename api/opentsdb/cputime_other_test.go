//go:build !unix

package opentsdb

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
