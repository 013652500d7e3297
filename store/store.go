// Package store defines the ordered key-value interface that hourglass keeps
// its data, UID and index tables in, narrow enough to map one to one onto an
// embedded LSM (store/pebble) and onto Cloud Bigtable (store/bigtable).
//
// The model is Bigtable's: a table holds rows sorted by row key; a row holds
// cells named by a qualifier, sorted by qualifier; a cell holds one value.
// There are no cell versions: writing a cell replaces it.
package store

import (
	"context"
	"strconv"

	"hourglass/internal/errclass"
)

// Table names one of the tables of an hourglass data set.
type Table uint8

// The tables. Their numeric values are part of the embedded store's on-disk
// format; never renumber them.
const (
	// TableData holds the series data: one row per series and hour, one cell per chunk.
	TableData Table = 1
	// TableUID holds the UID maps (forward, reverse) and counters.
	TableUID Table = 2
	// TableIndex holds the series index.
	TableIndex Table = 3
	// TableMeta holds the data set's recorded layout and other small records
	// (annotations, metadata).
	TableMeta Table = 4
	// TableRollup holds the rollups: per series, interval and day, the
	// aggregates of each interval bucket (rollup/, docs/format/rollup.md).
	TableRollup Table = 5
)

// Tables lists every table, in numeric order.
var Tables = []Table{TableData, TableUID, TableIndex, TableMeta, TableRollup}

func (t Table) String() string {
	switch t {
	case TableData:
		return "data"
	case TableUID:
		return "uid"
	case TableIndex:
		return "index"
	case TableMeta:
		return "meta"
	case TableRollup:
		return "rollup"
	}
	return "table(" + strconv.Itoa(int(t)) + ")"
}

// Cell is one cell of a row. Slices handed to a callback are valid only
// until the callback returns; copy what you keep.
type Cell struct {
	Row       []byte
	Qualifier []byte
	Value     []byte
}

// Mutation changes one cell: it sets Value, or deletes the cell when Delete is set.
type Mutation struct {
	Row       []byte
	Qualifier []byte
	Value     []byte
	Delete    bool
}

// KeyRange is the row keys k with Start <= k < End. A nil End means no upper
// bound. Use RowRange for exactly one row.
type KeyRange struct {
	Start, End []byte
}

// RowRange returns the range that holds exactly the row key row.
func RowRange(row []byte) KeyRange {
	end := make([]byte, len(row)+1)
	copy(end, row)
	return KeyRange{Start: row, End: end}
}

// PrefixRange returns the range of every row key that starts with prefix.
func PrefixRange(prefix []byte) KeyRange {
	return KeyRange{Start: prefix, End: PrefixEnd(prefix)}
}

// PrefixEnd returns the smallest key greater than every key with the given
// prefix, or nil when there is none (the prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// ErrClosed is returned by every operation on a closed store; it is in the
// class errclass.ErrUnavailable.
var ErrClosed = errclass.New(errclass.ErrUnavailable, "store: closed")

// ErrUnavailable wraps errors that mean the store cannot be reached now and
// the operation may succeed if retried (a Bigtable outage, say); it is in the
// class errclass.ErrUnavailable, which the edge maps to 503.
var ErrUnavailable = errclass.New(errclass.ErrUnavailable, "store: unavailable")

// Store is the ordered key-value store. Implementations are safe for
// concurrent use.
//
// Rules every implementation keeps (store/storetest checks them):
//   - Row keys are not empty. Within one Write, a later mutation of a cell
//     wins over an earlier one.
//   - Every operation is ordered with every other. Write is durable when it
//     returns. Increment and PutIfAbsent are atomic when they return and
//     durable no later than the next Write returns: an embedded store with
//     one log may defer their sync to it, a remote one is durable at once.
//     So a cell that a Write makes durable never refers to a counter or
//     put-if-absent value that a crash could take back.
//   - Write is not atomic against Increment and PutIfAbsent: a caller must
//     not Write a cell while an Increment or PutIfAbsent of it may run.
//   - A cancelled context makes the operation return an error that matches
//     context.Canceled or context.DeadlineExceeded with errors.Is.
//   - Close waits for operations under way; a second Close returns ErrClosed.
type Store interface {
	// Write applies the mutations. Mutations of one row are applied
	// atomically; the call as a whole may be partially applied if it fails.
	// A nil return means every mutation is durable as far as the backend
	// promises, and so is every Increment and PutIfAbsent that returned before it.
	Write(ctx context.Context, t Table, muts []Mutation) error

	// Scan calls fn for every cell of every row in the ranges, in row-key
	// order and, within a row, in qualifier order. The ranges must be sorted
	// by Start and must not overlap (an error otherwise); an empty, non-nil
	// End means no upper bound, as a nil one does. fn returning false stops the scan
	// without error. Slices passed to fn are valid only during the call.
	Scan(ctx context.Context, t Table, ranges []KeyRange, fn func(c Cell) bool) error

	// ReadRow returns the cells of one row in qualifier order (none if the row
	// does not exist). The returned slices are owned by the caller.
	ReadRow(ctx context.Context, t Table, row []byte) ([]Cell, error)

	// Increment atomically adds delta to the cell's value, read as a
	// big-endian int64 (a missing cell is 0), and returns the new value.
	Increment(ctx context.Context, t Table, row, qualifier []byte, delta int64) (int64, error)

	// PutIfAbsent writes value to the cell only if the cell does not exist.
	// It returns whether it wrote, and when it did not, the value that is
	// there (a backend that must read it separately may return nil if the
	// cell was deleted in between).
	PutIfAbsent(ctx context.Context, t Table, row, qualifier, value []byte) (written bool, existing []byte, err error)

	// DeleteRange deletes every row in the range.
	DeleteRange(ctx context.Context, t Table, r KeyRange) error

	// Close releases the store. Operations after Close return ErrClosed.
	Close() error
}

// DeferredWriter is a Store that can leave the durability of writes to a
// log the caller keeps (the series WAL): the point is then written to disk
// once on its way to a table, not once in the caller's log and again in the
// store's. The store's contract is unchanged for Write; WriteDeferred and
// Sync are the exception, asked for explicitly.
//
// Rules (store/storetest checks the first; the embedded store's crash test
// the rest):
//   - WriteDeferred applies the mutations as Write does, visible to every
//     read once it returns, but they need not be durable then: a crash may
//     take back any suffix of the deferred writes not covered by a Sync (a
//     prefix of them survives; never a later one without an earlier one).
//   - Sync returns once every mutation applied before it began, deferred or
//     not, is durable, and so is every Increment and PutIfAbsent that
//     returned before it.
//   - A deferred cell never outlives a crash that takes back an Increment or
//     PutIfAbsent that returned before the WriteDeferred (the UIDs a cell
//     refers to are durable first).
type DeferredWriter interface {
	Store
	// WriteDeferred is Write without the durability on return.
	WriteDeferred(ctx context.Context, t Table, muts []Mutation) error
	// Sync makes everything applied before it durable.
	Sync(ctx context.Context) error
}
