package wal

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// errCrashed is what a handle opened before a simulated crash returns.
var errCrashed = errors.New("faultfs: the machine crashed (handle from before the crash)")

// faultFS is an in-memory FS that models what the kernel and the disk keep
// and lets tests inject faults. Each file has what was written (the page
// cache: it survives a process kill) and what was last fsynced (the disk: it
// survives a power loss); each directory entry is durable once its
// directory is fsynced.
type faultFS struct {
	mu      sync.Mutex
	files   map[string]*memNode // live entries, by path
	durable map[string]*memNode // entries as of the last SyncDir of their directory
	dirs    map[string]bool
	locks   map[string]bool
	gen     int // bumped by crash; handles of older generations fail

	// Faults: set them under mu (or before the FS is shared).
	onWrite   func(name string, off int64, p []byte) (int, error) // nil: write everything
	syncErr   error                                               // Sync fails with it, syncing nothing
	truncErr  error                                               // Truncate fails with it
	syncDelay time.Duration                                       // how long a Sync takes, like a disk

	syncs    int // successful file fsyncs
	dirSyncs int
}

type memNode struct {
	data   []byte // written: what the OS has
	synced []byte // fsynced: what the disk has
}

func newFaultFS() *faultFS {
	return &faultFS{
		files:   map[string]*memNode{},
		durable: map[string]*memNode{},
		dirs:    map[string]bool{},
		locks:   map[string]bool{},
	}
}

var _ FS = (*faultFS)(nil)

// crash simulates the death of the process (powerLoss false: the OS keeps
// everything written) or of the machine (powerLoss true: only what was
// fsynced, in files whose directory entry was fsynced, survives). Handles
// opened before fail from now on, and locks are released.
func (f *faultFS) crash(powerLoss bool) { f.crashWriteback(powerLoss, nil) }

// crashWriteback is crash where, on a power loss, the kernel had written
// back part of the unsynced tail of each file: a random prefix of it, half
// the time as zeros (the size reached the disk, the data did not).
func (f *faultFS) crashWriteback(powerLoss bool, rng *rand.Rand) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	f.locks = map[string]bool{}
	if !powerLoss {
		return
	}
	f.files = map[string]*memNode{}
	for name, n := range f.durable {
		kept := slices.Clone(n.synced)
		if rng != nil && len(n.data) > len(n.synced) && bytes.HasPrefix(n.data, n.synced) {
			extra := n.data[len(n.synced):]
			extra = extra[:rng.IntN(len(extra)+1)]
			if rng.IntN(2) == 0 {
				extra = make([]byte, len(extra))
			}
			kept = append(kept, extra...)
		}
		n = &memNode{data: kept, synced: slices.Clone(kept)}
		f.files[name] = n
		f.durable[name] = n
	}
}

func (f *faultFS) setFault(fn func(*faultFS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultFS) syncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// contents returns what the OS has for name.
func (f *faultFS) contents(name string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.files[name]; ok {
		return slices.Clone(n.data)
	}
	return nil
}

// put creates or replaces name with data, durably.
func (f *faultFS) put(name string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs[filepath.Dir(name)] = true
	n := &memNode{data: slices.Clone(data), synced: slices.Clone(data)}
	f.files[name] = n
	f.durable[name] = n
}

func (f *faultFS) Create(name string) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[name]; ok {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	if !f.dirs[filepath.Dir(name)] {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrNotExist}
	}
	n := &memNode{}
	f.files[name] = n
	return &memFile{fs: f, name: name, node: n, gen: f.gen}, nil
}

func (f *faultFS) Open(name string) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{fs: f, name: name, node: n, gen: f.gen}, nil
}

func (f *faultFS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(f.files, name)
	return nil
}

func (f *faultFS) List(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirs[dir] {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for name := range f.files {
		if filepath.Dir(name) == dir {
			names = append(names, filepath.Base(name))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (f *faultFS) Stat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.files[name]; ok {
		return memInfo{name: filepath.Base(name), size: int64(len(n.data))}, nil
	}
	if f.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (f *faultFS) MkdirAll(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := dir; !f.dirs[d]; d = filepath.Dir(d) {
		f.dirs[d] = true
	}
	return nil
}

func (f *faultFS) SyncDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.durable {
		if filepath.Dir(name) == dir {
			if _, ok := f.files[name]; !ok {
				delete(f.durable, name)
			}
		}
	}
	for name, n := range f.files {
		if filepath.Dir(name) == dir {
			f.durable[name] = n
		}
	}
	f.dirSyncs++
	return nil
}

func (f *faultFS) Lock(name string) (io.Closer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locks[name] {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: errors.New("locked")}
	}
	f.locks[name] = true
	return &memLock{fs: f, name: name, gen: f.gen}, nil
}

type memLock struct {
	fs   *faultFS
	name string
	gen  int
}

func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.gen == l.fs.gen {
		delete(l.fs.locks, l.name)
	}
	return nil
}

type memFile struct {
	fs     *faultFS
	name   string
	node   *memNode
	gen    int
	closed bool
}

// check must be called with fs.mu held.
func (m *memFile) check() error {
	switch {
	case m.closed:
		return os.ErrClosed
	case m.gen != m.fs.gen:
		return errCrashed
	}
	return nil
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	if err := m.check(); err != nil {
		return 0, err
	}
	if off >= int64(len(m.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	if err := m.check(); err != nil {
		return 0, err
	}
	n, err := len(p), error(nil)
	if m.fs.onWrite != nil {
		n, err = m.fs.onWrite(m.name, off, p)
	}
	if end := off + int64(n); end > int64(len(m.node.data)) {
		m.node.data = append(m.node.data, make([]byte, end-int64(len(m.node.data)))...)
	}
	copy(m.node.data[off:], p[:n])
	return n, err
}

func (m *memFile) Sync() error {
	m.fs.mu.Lock()
	delay := m.fs.syncDelay
	m.fs.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay) // the disk at work; a crash meanwhile voids the sync
	}
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	if m.fs.syncErr != nil {
		return m.fs.syncErr
	}
	m.node.synced = slices.Clone(m.node.data)
	m.fs.syncs++
	return nil
}

func (m *memFile) Truncate(size int64) error {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	if m.fs.truncErr != nil {
		return m.fs.truncErr
	}
	if size <= int64(len(m.node.data)) {
		m.node.data = m.node.data[:size:size]
	} else {
		m.node.data = append(m.node.data, make([]byte, size-int64(len(m.node.data)))...)
	}
	return nil
}

func (m *memFile) Stat() (fs.FileInfo, error) {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, err
	}
	return memInfo{name: filepath.Base(m.name), size: int64(len(m.node.data))}, nil
}

func (m *memFile) Close() error {
	m.fs.mu.Lock()
	defer m.fs.mu.Unlock()
	if m.closed {
		return os.ErrClosed
	}
	m.closed = true
	return nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
