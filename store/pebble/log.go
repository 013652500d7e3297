package pebble

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	pebbledb "github.com/cockroachdb/pebble/v2"
)

// slogLogger adapts a *slog.Logger to Pebble's Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Infof(format string, args ...any) {
	s.l.Info("pebble: " + fmt.Sprintf(format, args...))
}

func (s slogLogger) Errorf(format string, args ...any) {
	s.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble when it cannot go on, after a failed fsync
// above all: the state of the files is unknown then, so the process stops
// (as Pebble's own default logger does).
func (s slogLogger) Fatalf(format string, args ...any) {
	s.l.Error("pebble: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}

// eventListener logs the Pebble events worth knowing about. Trouble goes
// out at warn or error; routine flushes and compactions at debug.
func eventListener(l *slog.Logger) *pebbledb.EventListener {
	debug := func() bool { return l.Enabled(context.Background(), slog.LevelDebug) }
	return &pebbledb.EventListener{
		BackgroundError: func(err error) {
			l.Error("pebble: background error", "err", err)
		},
		DataCorruption: func(info pebbledb.DataCorruptionInfo) {
			l.Error("pebble: data corruption", "path", info.Path, "err", info.Details)
		},
		DiskSlow: func(info pebbledb.DiskSlowInfo) {
			l.Warn("pebble: disk slow", "info", info.String())
		},
		WriteStallBegin: func(info pebbledb.WriteStallBeginInfo) {
			l.Warn("pebble: write stall begins", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			l.Info("pebble: write stall ends")
		},
		LowDiskSpace: func(info pebbledb.LowDiskSpaceInfo) {
			l.Warn("pebble: low disk space", "avail_bytes", info.AvailBytes, "total_bytes", info.TotalBytes)
		},
		PossibleAPIMisuse: func(info pebbledb.PossibleAPIMisuseInfo) {
			l.Warn("pebble: possible API misuse", "info", info.String())
		},
		// Failed flushes and compactions also reach BackgroundError; a
		// flush "error" seen here may be a benign empty flush.
		FlushEnd: func(info pebbledb.FlushInfo) {
			if debug() {
				l.Debug("pebble: flush", "info", info.String())
			}
		},
		CompactionEnd: func(info pebbledb.CompactionInfo) {
			if debug() {
				l.Debug("pebble: compaction", "info", info.String())
			}
		},
	}
}
