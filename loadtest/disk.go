package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DirBytes returns the sum of the sizes of every regular file under dir
// (what du -sb counts, less the directories themselves). Files that vanish
// while it walks — a server compacting or rotating its logs — are skipped.
func DirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}

// DiskStats is what a run saw of the server's data directory while it ran.
type DiskStats struct {
	Dir string `json:"dir"`
	// PeakBytes is the largest DirBytes of the samples; EndBytes the last,
	// taken when the run ended (the server still running).
	PeakBytes int64 `json:"peak_bytes"`
	EndBytes  int64 `json:"end_bytes"`
	Samples   int   `json:"samples"`
	// Error is the first failed sample's error, if any.
	Error string `json:"error,omitempty"`
}

// diskSampler measures a directory every period until stopped.
type diskSampler struct {
	mu    sync.Mutex
	st    DiskStats
	done  chan struct{}
	ended chan struct{}
}

// startDiskSampler samples dir now and then every period; nil when dir is "".
func startDiskSampler(dir string, every time.Duration) *diskSampler {
	if dir == "" {
		return nil
	}
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	d := &diskSampler{st: DiskStats{Dir: dir}, done: make(chan struct{}), ended: make(chan struct{})}
	d.sample()
	go func() {
		defer close(d.ended)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-d.done:
				return
			case <-t.C:
				d.sample()
			}
		}
	}()
	return d
}

func (d *diskSampler) sample() {
	n, err := DirBytes(d.st.Dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if d.st.Error == "" {
			d.st.Error = err.Error()
		}
		return
	}
	d.st.Samples++
	d.st.EndBytes = n
	d.st.PeakBytes = max(d.st.PeakBytes, n)
}

// stop takes a last sample and returns the figures (nil for a nil sampler).
func (d *diskSampler) stop() *DiskStats {
	if d == nil {
		return nil
	}
	close(d.done)
	<-d.ended
	d.sample()
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	return &st
}

// SampleDisk sums the sizes of the files under dir every period (500ms if
// 0) until alive returns false or ctx is done, and returns the figures: the
// peak while the server ran. The last sample is the last one taken while
// alive still held.
func SampleDisk(ctx context.Context, dir string, every time.Duration, alive func() bool) *DiskStats {
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	d := &diskSampler{st: DiskStats{Dir: dir}}
	t := time.NewTicker(every)
	defer t.Stop()
	for alive() {
		d.sample()
		select {
		case <-ctx.Done():
			return &d.st
		case <-t.C:
		}
	}
	return &d.st
}

// ProcAlive tells whether process pid exists and is not a zombie (exited,
// not yet waited for by its parent).
func ProcAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}
