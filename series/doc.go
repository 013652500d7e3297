// Package series is hourglass's storage engine between the dialects and the
// store: series and their labels, the write-ahead log's records, and the
// engine (DB) split by job, as Prometheus' tsdb keeps block writing,
// compaction and retention out of its Head:
//
//   - Head (head.go, head_sweep.go, late.go, limits.go): the series and
//     their open, late and sealed-but-unwritten chunks, appends through the
//     WAL, snapshots of the head for reads, WAL replay, the sweeper;
//   - Flusher (flusher.go): sealed chunks to cells, merged with what the
//     store holds, index mutations, delete jobs, retries;
//   - Deleter (delete.go), Retention (retention.go), Snapshotter
//     (snapshot.go) and the index feed between nodes (index_sync.go): the
//     jobs that use the flusher, the index and the store;
//   - Index (index.go): the whole series index in memory (LoadIndex).
//
// Open wires the store, UID table, index and layout that internal/app gives
// it into each part and returns the DB; no part reaches them through the
// head. docs/design.md describes the whole.
package series
