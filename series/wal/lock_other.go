//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package wal

import (
	"io"
	"os"
)

// lockFile only creates the file: this platform has no flock(2).
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}
