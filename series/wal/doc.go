// Package wal is hourglass's write-ahead log: a directory of numbered segment
// files holding CRC-checked records, appended with group commit and replayed
// on start.
//
// The log does not know what its records mean (like Prometheus tsdb/wlog):
// the head encodes its typed records (series definitions, samples) and hands
// the bytes to [Log.Append]. The byte layout is described in
// docs/format/wal.md.
//
// # Writing
//
// [Open] starts a fresh segment numbered after the existing ones; it never
// appends to a segment written by an earlier process. [Log.Append] frames one
// record and writes it to the operating system (write(2)) before it returns:
// from then on the record survives the death of the process. [Log.Commit]
// makes it survive the death of the machine, as the [SyncMode] says:
//
//   - [SyncAlways]: Commit returns once an fsync covers the record. Concurrent
//     committers share fsyncs (group commit): one of them syncs while the
//     others wait, and one fsync releases every committer whose record it
//     covers. A lone writer waits for exactly one fsync, with no added delay.
//   - [SyncInterval]: Commit returns at once; a background goroutine fsyncs at
//     least every Options.SyncInterval, so a power loss loses at most the
//     records appended in the last interval (plus the time an fsync takes).
//
// A failed fsync is fatal: the state of the file is unknown afterwards, so
// every later Append, Commit and Sync returns the same error and the caller
// is expected to stop the process (Pebble's rule). A failed write(2) is not
// fatal when the partial record can be cut off again: that Append returns the
// error, and the log goes on.
//
// Append calls its build function under the log's lock with the number of
// the segment the record will land in, so the head can re-emit its series
// definitions at the start of every segment and every segment can be read
// alone.
//
// # Reading and repair
//
// [Replay] reads every segment in order and calls a function for each intact
// record. A torn or corrupt record (short header, impossible length, checksum
// mismatch, zeroed tail, payload that does not decompress) ends its segment:
// the file is truncated at the last good record, the damage is logged with
// file and offset as a [*CorruptionError] and counted in [ReplayStats], and
// replay goes on with the next segment. Damage is never a reason to refuse to
// start.
//
// # Files
//
// The log touches files only through the [FS] interface, so tests can inject
// short writes, failed fsyncs and crashes; [OSFS] is the real one.
package wal
