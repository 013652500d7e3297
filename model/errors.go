package model

import (
	"errors"

	"hourglass/internal/errclass"
)

// The engine's sentinel errors that the API handlers answer; series
// re-declares them under the same names.
var (
	// ErrDeleteUnfinished is returned by a delete when its ctx ends before
	// the store is rewritten; the delete is durable and completes in the
	// background.
	ErrDeleteUnfinished = errors.New("series: the delete is recorded and will complete in the background")

	// ErrSeriesLimit is wrapped by every refusal of a new series over a
	// limit; it is in the class errclass.ErrInvalid.
	ErrSeriesLimit = errclass.New(errclass.ErrInvalid, "series limit reached")

	// ErrSnapshotUnsupported is returned by a snapshot of a store that
	// cannot copy itself (Bigtable: its tables are backed up with
	// Bigtable's own backups instead).
	ErrSnapshotUnsupported = errors.New("series: the store cannot be snapshotted by hourglass")
)
