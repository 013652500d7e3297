package wal

import (
	"sync/atomic"
	"time"
)

// Metrics are the counters of a log. Pass one Metrics in Options to both
// Replay and Open to see replay damage and appends in one place; a Log
// without one makes its own. The zero value is ready to use; all methods
// are safe for concurrent use.
type Metrics struct {
	recordsAppended atomic.Uint64
	bytesAppended   atomic.Uint64
	commits         atomic.Uint64
	fsyncs          atomic.Uint64
	fsyncNanos      atomic.Int64
	writeErrors     atomic.Uint64
	corruptions     atomic.Uint64
	truncatedBytes  atomic.Uint64
	recordsReplayed atomic.Uint64
	segmentsCreated atomic.Uint64
	segments        atomic.Int64
}

// Stats is a snapshot of Metrics. Every field but Segments only grows.
type Stats struct {
	RecordsAppended uint64        // records written to the OS
	BytesAppended   uint64        // bytes written to the OS, framing included
	Commits         uint64        // Commit calls
	Fsyncs          uint64        // fsyncs of segment files
	FsyncDuration   time.Duration // total time spent in those fsyncs
	WriteErrors     uint64        // failed writes (each failed one Append)
	Corruptions     uint64        // damaged segments found (and repaired) by Replay
	TruncatedBytes  uint64        // bytes cut off by those repairs
	RecordsReplayed uint64        // intact records read by Replay
	SegmentsCreated uint64        // segment files created
	Segments        int64         // segment files in the directory now (a gauge, kept by Log)
}

// Snapshot returns the current values. Each is read atomically; the set is
// not one atomic snapshot.
func (m *Metrics) Snapshot() Stats {
	return Stats{
		RecordsAppended: m.recordsAppended.Load(),
		BytesAppended:   m.bytesAppended.Load(),
		Commits:         m.commits.Load(),
		Fsyncs:          m.fsyncs.Load(),
		FsyncDuration:   time.Duration(m.fsyncNanos.Load()),
		WriteErrors:     m.writeErrors.Load(),
		Corruptions:     m.corruptions.Load(),
		TruncatedBytes:  m.truncatedBytes.Load(),
		RecordsReplayed: m.recordsReplayed.Load(),
		SegmentsCreated: m.segmentsCreated.Load(),
		Segments:        m.segments.Load(),
	}
}
