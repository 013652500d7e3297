package series

import (
	"log/slog"
	"os"
	"time"

	"hourglass/series/wal"
)

// replayProgressEvery is how often WAL replay logs its progress.
const replayProgressEvery = 5 * time.Second

// replayProgress logs how far the WAL replay at start has got: bytes and
// records replayed, the rate and the time left at that rate, every few
// seconds and once at the end. It is fed by wal.Options.ReplayProgress.
// Not safe for concurrent use (Replay calls it from one goroutine).
type replayProgress struct {
	log   *slog.Logger
	now   func() time.Time
	every time.Duration

	total   int64 // bytes of every segment when replay began
	done    int64 // bytes of the segments finished
	seg     int
	segOff  int64 // offset reached in seg
	segSize int64
	records int64

	start, last time.Time
}

// newReplayProgress measures the WAL in dir: what replay has to read.
func newReplayProgress(log *slog.Logger, dir string, now func() time.Time) *replayProgress {
	p := &replayProgress{log: log, now: now, every: replayProgressEvery, seg: -1}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && len(e.Name()) >= 8 && isDigits(e.Name()) {
				p.total += fi.Size()
			}
		}
	}
	p.start = now()
	p.last = p.start
	return p
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// observe is wal.Options.ReplayProgress: one record of segment seg ends at off.
func (p *replayProgress) observe(seg int, off, size int64) {
	if seg != p.seg {
		p.done += p.segSize
		p.seg, p.segSize = seg, size
	}
	p.segOff = off
	p.records++
	if p.records%256 != 0 {
		return
	}
	if now := p.now(); now.Sub(p.last) >= p.every {
		p.last = now
		p.report("wal replay progress", now)
	}
}

// finish logs the final figures.
func (p *replayProgress) finish() {
	p.done += p.segSize
	p.seg, p.segSize, p.segOff = -1, 0, 0
	p.report("wal replay finished", p.now())
}

func (p *replayProgress) report(msg string, now time.Time) {
	read := p.done + p.segOff
	took := now.Sub(p.start)
	rate := 0.0
	if took > 0 {
		rate = float64(read) / took.Seconds()
	}
	attrs := []any{"bytes", read, "total_bytes", max(p.total, read), "records", p.records,
		"mb_per_s", float64(int64(rate/(1<<20)*10)) / 10, "elapsed", took.Round(time.Millisecond)}
	if p.total > 0 {
		attrs = append(attrs, "percent", float64(min(read*1000/p.total, 1000))/10)
	}
	if msg != "wal replay finished" {
		left := "unknown"
		if rate > 0 && p.total > read {
			left = time.Duration(float64(p.total-read) / rate * float64(time.Second)).Round(time.Second).String()
		} else if p.total <= read {
			left = "0s"
		}
		attrs = append(attrs, "eta", left)
	}
	p.log.Info(msg, attrs...)
}

// withProgress returns opts with its ReplayProgress feeding p.
func (p *replayProgress) withProgress(opts wal.Options) wal.Options {
	opts.ReplayProgress = p.observe
	return opts
}
