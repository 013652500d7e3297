package pebble

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"hourglass/internal/ratelog"
)

// pebbleLogRate is the most lines a second Pebble's log and events write,
// both databases of a store together. A store whose disk fails or whose
// directory is removed under it has Pebble retry its flushes and
// compactions in a loop, each failure a background error: unbounded,
// that wrote 422,000 lines (619 MB) in 4 s.
const pebbleLogRate = 10

// pebbleLog adapts a *slog.Logger to Pebble's Logger and is where its
// events are logged: at most pebbleLogRate lines a second (ratelog; the
// count of dropped lines goes out with the next one), every error line
// and background error counted whether logged or not.
type pebbleLog struct {
	l      *slog.Logger
	limit  *ratelog.Limiter
	errors *atomic.Int64
}

func newPebbleLog(l *slog.Logger) *pebbleLog {
	return &pebbleLog{l: l, limit: ratelog.New(pebbleLogRate), errors: new(atomic.Int64)}
}

// with returns a pebbleLog adding attrs to its lines, sharing the rate
// limit and the error count.
func (p *pebbleLog) with(attrs ...any) *pebbleLog {
	return &pebbleLog{l: p.l.With(attrs...), limit: p.limit, errors: p.errors}
}

// log writes one line within the rate.
func (p *pebbleLog) log(level slog.Level, msg string, attrs ...any) {
	if level >= slog.LevelError {
		p.errors.Add(1)
	}
	if !p.l.Enabled(context.Background(), level) {
		return
	}
	ok, suppressed := p.limit.Allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed_before", suppressed)
	}
	p.l.Log(context.Background(), level, msg, attrs...)
}

func (p *pebbleLog) Infof(format string, args ...any) {
	p.log(slog.LevelInfo, "pebble: "+fmt.Sprintf(format, args...))
}

func (p *pebbleLog) Errorf(format string, args ...any) {
	p.log(slog.LevelError, "pebble: "+fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble when it cannot go on, after a failed fsync
// above all: the state of the files is unknown then, so the process stops
// (as Pebble's own default logger does). It is never rate-limited.
func (p *pebbleLog) Fatalf(format string, args ...any) {
	p.l.Error("pebble: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}

// eventListener logs the Pebble events worth knowing about, through p.
// Trouble goes out at warn or error; routine flushes and compactions at
// debug.
func (p *pebbleLog) eventListener() *pebbledb.EventListener {
	return &pebbledb.EventListener{
		BackgroundError: func(err error) {
			p.log(slog.LevelError, "pebble: background error", "err", err)
		},
		DataCorruption: func(info pebbledb.DataCorruptionInfo) {
			p.log(slog.LevelError, "pebble: data corruption", "path", info.Path, "err", info.Details)
		},
		DiskSlow: func(info pebbledb.DiskSlowInfo) {
			p.log(slog.LevelWarn, "pebble: disk slow", "info", info.String())
		},
		WriteStallBegin: func(info pebbledb.WriteStallBeginInfo) {
			p.log(slog.LevelWarn, "pebble: write stall begins", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			p.log(slog.LevelInfo, "pebble: write stall ends")
		},
		LowDiskSpace: func(info pebbledb.LowDiskSpaceInfo) {
			p.log(slog.LevelWarn, "pebble: low disk space", "avail_bytes", info.AvailBytes, "total_bytes", info.TotalBytes)
		},
		PossibleAPIMisuse: func(info pebbledb.PossibleAPIMisuseInfo) {
			p.log(slog.LevelWarn, "pebble: possible API misuse", "info", info.String())
		},
		// Failed flushes and compactions also reach BackgroundError; a
		// flush "error" seen here may be a benign empty flush.
		FlushEnd: func(info pebbledb.FlushInfo) {
			if p.l.Enabled(context.Background(), slog.LevelDebug) {
				p.log(slog.LevelDebug, "pebble: flush", "info", info.String())
			}
		},
		CompactionEnd: func(info pebbledb.CompactionInfo) {
			if p.l.Enabled(context.Background(), slog.LevelDebug) {
				p.log(slog.LevelDebug, "pebble: compaction", "info", info.String())
			}
		},
	}
}
