// Package pebble implements store.Store on an embedded Pebble LSM
// (github.com/cockroachdb/pebble/v2), hourglass's default, single-machine
// store.
//
// All tables share one Pebble key space. A cell's key is
//
//	table[1] | escape(row) | 0x00 0x01 | qualifier
//
// where escape writes each 0x00 byte of the row as 0x00 0xFF. The
// terminator 0x00 0x01 sorts below anything a row can continue with, so
// keys sort exactly as (table, row, qualifier) do as raw bytes, a row that
// is a prefix of another sorts first, and the cells of one row are one
// contiguous key range. A row-key range bound b maps to table | escape(b)
// (no terminator), so a raw range [Start, End) is exactly one Pebble range:
// Scan and DeleteRange need no filtering. docs/format/store.md has the byte
// diagram, the Pebble options and the measurements behind them.
//
// Operations:
//   - Write is one Pebble batch, synced to the WAL before it returns: durable
//     and atomic as a whole (more than store.Store promises). The data
//     table is a second Pebble database without a WAL (split.go): its
//     batches are durable once flushed, by Write itself or, for
//     WriteDeferred (store.DeferredWriter), by the next Sync.
//   - Scan walks all its ranges with one iterator, seeking only when the
//     iterator is not already at or past the next range's start, and hands
//     each cell to the callback without allocating: the row is decoded into
//     a reused buffer, qualifier and value alias Pebble's memory.
//   - Increment and PutIfAbsent read, then write and sync, under one of 64
//     locks striped by cell. Write does not take these locks, so a cell
//     changed by Increment or PutIfAbsent must not be written by Write at
//     the same time.
//   - DeleteRange writes one range tombstone; the space comes back when
//     compactions drop the covered data (flushed within 10s).
//
// Row keys must not be empty (Bigtable does not allow them either) and
// table 255 is reserved (no key sorts above it, so it has no range end).
//
// A Store is safe for concurrent use. Close waits for the operations under
// way; it must not be called from a Scan callback.
package pebble
