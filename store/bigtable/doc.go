// Package bigtable implements store.Store on Google Cloud Bigtable through
// the official client, cloud.google.com/go/bigtable, so that several
// hourglass nodes can share one data set.
//
// Each store.Table is one Bigtable table named TablePrefix-<table>
// (hourglass-data, hourglass-uid, hourglass-index, hourglass-meta) with one
// column family, "c", whose garbage-collection rule keeps one version of a
// cell. Row keys and qualifiers are the store's, byte for byte; a cell's
// value is the store's value. Open creates the tables and the family when
// they are missing, the data table pre-split at the salt bucket boundaries
// (one tablet per bucket from the first write on).
//
// Operations:
//   - Write groups the mutations by row, in order, and sends them with
//     MutateRows (ApplyBulk), one entry per row (atomic per row), in
//     requests of at most 8 MiB. Setting a cell is a DeleteCellsInColumn
//     followed by a SetCell with an explicit timestamp: whatever versions
//     the cell had are gone when the row mutation applies, so a cell has
//     exactly one value however it was written before (ReadModifyWrite
//     stamps server time), and every mutation is idempotent, which lets the
//     client retry it on Bigtable's retryable codes.
//   - Scan sends ReadRows with one RowRangeList per call (split into
//     requests of at most 256 KiB of keys: Bigtable refuses ReadRows
//     requests past 512 KiB) and a server-side filter that keeps the
//     newest version of each cell. The client resumes an interrupted stream
//     after the last row it delivered. The query engine calls Scan once per
//     salt bucket, concurrently.
//   - ReadRow is ReadRows of one row with the same filter.
//   - Increment is ReadModifyWriteRow with an increment rule: atomic on the
//     server, never retried (it is not idempotent).
//   - PutIfAbsent is CheckAndMutateRow whose predicate is a column-range
//     filter matching exactly the cell, with the put as the false mutation;
//     when the predicate matched, the existing value is read. It is retried
//     on retryable codes; a retry that finds the very value it tried to put
//     reports it as written (the first attempt landed).
//   - DeleteRange is DropRowRange when the range is a whole table or
//     exactly the rows of one prefix, and otherwise reads the keys of the
//     range (keys only, filtered server-side) and deletes those rows with
//     MutateRows.
//
// Errors: an operation that fails with a retryable code, or that makes no
// progress within Options.Timeout, returns an error that wraps
// store.ErrUnavailable (the edge answers 503, clients retry); a cancelled
// or expired caller context returns an error matching the context's error.
//
// Consistency: store.Store orders every operation with every other. That
// holds on one Bigtable cluster; with replication, use an app profile with
// single-cluster routing (CheckAndMutateRow and ReadModifyWriteRow require
// one anyway).
//
// docs/deploy-bigtable.md has the table layout, the costs and the
// deployment.
package bigtable
