//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package wal

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w (is another hourglass using this directory?)", name, err)
	}
	return f, nil // closing the file releases the lock
}
