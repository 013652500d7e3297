package migrate

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Progress counts what a run has done and renders it as one line: slices,
// points, points per second and the time left, estimated from the share of
// the time range (of the slices this run has to do) already copied. Its
// counters are safe for concurrent use.
type Progress struct {
	points    atomic.Int64
	skipped   atomic.Int64 // samples the destination cannot take (native histograms)
	slices    atomic.Int64
	doneMs    atomic.Int64 // length of the completed slices
	total     int64        // slices of this run
	totalMs   int64        // their length
	started   time.Time
	mu        sync.Mutex
	lastWrite int // length of the last line written in terminal mode
}

// NewProgress starts counting a run of the given slices at now.
func NewProgress(todo []Slice, now time.Time) *Progress {
	p := &Progress{total: int64(len(todo)), started: now}
	for _, s := range todo {
		p.totalMs += s.End - s.Start
	}
	return p
}

// AddPoints counts n points written.
func (p *Progress) AddPoints(n int) { p.points.Add(int64(n)) }

// AddSkipped counts n samples left out.
func (p *Progress) AddSkipped(n int) { p.skipped.Add(int64(n)) }

// SliceDone counts a completed slice.
func (p *Progress) SliceDone(s Slice) {
	p.slices.Add(1)
	p.doneMs.Add(s.End - s.Start)
}

// Points is the number of points written so far.
func (p *Progress) Points() int64 { return p.points.Load() }

// Skipped is the number of samples left out so far.
func (p *Progress) Skipped() int64 { return p.skipped.Load() }

// Line renders the progress at now, e.g.
// "slices 3/24 (12.5%)  points 1.20M  41.3k points/s  ETA 2m10s".
func (p *Progress) Line(now time.Time) string {
	elapsed := now.Sub(p.started)
	pts := p.points.Load()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(pts) / elapsed.Seconds()
	}
	frac := 1.0
	if p.totalMs > 0 {
		frac = float64(p.doneMs.Load()) / float64(p.totalMs)
	}
	eta := "?"
	if frac >= 1 {
		eta = "0s"
	} else if frac > 0 {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		eta = left.Round(time.Second).String()
	}
	line := fmt.Sprintf("slices %d/%d (%.1f%%)  points %s  %s points/s  ETA %s",
		p.slices.Load(), p.total, 100*frac, si(float64(pts)), si(rate), eta)
	if sk := p.skipped.Load(); sk > 0 {
		line += fmt.Sprintf("  skipped %s", si(float64(sk)))
	}
	return line
}

// si formats v with an SI suffix: 950, 1.20k, 3.45M.
func si(v float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.f {
			return fmt.Sprintf("%.2f%s", v/u.f, u.s)
		}
	}
	return fmt.Sprintf("%.0f", v)
}

// Report writes the line to w: on a terminal over the previous one
// (carriage return, padded), otherwise as a line of its own.
func (p *Progress) Report(w io.Writer, now time.Time, terminal bool) {
	line := p.Line(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !terminal {
		fmt.Fprintln(w, line)
		return
	}
	pad := p.lastWrite - len(line)
	p.lastWrite = len(line)
	if pad < 0 {
		pad = 0
	}
	fmt.Fprintf(w, "\r%s%*s", line, pad, "")
}

// Loop reports to w every interval until stop is closed, then once more
// (ending the terminal line with a newline).
func (p *Progress) Loop(w io.Writer, terminal bool, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.Report(w, time.Now(), terminal)
		case <-stop:
			p.Report(w, time.Now(), terminal)
			if terminal {
				fmt.Fprintln(w)
			}
			return
		}
	}
}
