package series

import (
	"context"

	"hourglass/store"
	"hourglass/uid"
)

// OpenDB loads the index of st and opens a DB over it, as internal/app
// does; for the tests of this directory.
func OpenDB(ctx context.Context, st store.Store, uids *uid.Table, opts Options) (*DB, error) {
	idx, err := LoadIndex(ctx, st, opts.Layout)
	if err != nil {
		return nil, err
	}
	return Open(ctx, st, uids, idx, opts)
}
