package wal

import (
	"io"
	"io/fs"
	"os"
)

// FS is the file system the log works on: the operations it needs and no
// more (Pebble vfs.FS, Prometheus wlog.SegmentFile). Names are paths as the
// log builds them with path/filepath. Implementations must be safe for
// concurrent use.
type FS interface {
	// Create creates the named file for reading and writing. It fails if
	// the file exists.
	Create(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	// Remove deletes the named file.
	Remove(name string) error
	// List returns the names (not paths) of the entries of dir.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (fs.FileInfo, error)
	// MkdirAll creates dir and its parents if they do not exist.
	MkdirAll(dir string) error
	// SyncDir makes the entries of dir (files created and removed) durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on the named file, creating it if needed,
	// or fails at once if another holder has it. Closing the returned
	// Closer releases the lock.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an [FS]. A File must allow Sync concurrently with
// WriteAt and ReadAt (*os.File does).
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes everything written so far durable (fsync(2)).
	Sync() error
	// Truncate changes the size of the file.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (fs.FileInfo, error)
}

// OSFS is the [FS] of the operating system. The zero value is ready to use.
type OSFS struct{}

var _ FS = OSFS{}

// Create implements [FS].
func (OSFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Open implements [FS].
func (OSFS) Open(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Remove implements [FS].
func (OSFS) Remove(name string) error { return os.Remove(name) }

// List implements [FS].
func (OSFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// Stat implements [FS].
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// MkdirAll implements [FS].
func (OSFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// SyncDir implements [FS].
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock implements [FS]. Where the platform has flock(2) the lock is
// advisory and exclusive between processes and between opens in one
// process; elsewhere it only creates the file.
func (OSFS) Lock(name string) (io.Closer, error) { return lockFile(name) }
