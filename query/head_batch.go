package query

import (
	"context"

	"hourglass/chunk"
	"hourglass/series"
)

// BatchHead is a Head that reads many series in one call and may fail:
// cluster.Node, which adds the heads of the other nodes sharing the store
// (their points not yet in it). The engine prefers it when its head has
// it; maxPoints is the query's raw points bound (0: none).
type BatchHead interface {
	Head
	Snapshots(ctx context.Context, ls []series.Labels, start, end int64, maxPoints int) ([][]chunk.Point, error)
}

// headSnapshots fills each entry's head points, through BatchHead when the
// engine's head has it.
func (e *Engine) headSnapshots(ctx context.Context, entries []*series.Entry, scs []seriesCells, start, end int64, lim pointLimit) error {
	bh, ok := e.head.(BatchHead)
	if !ok {
		for i, en := range entries {
			scs[i].head = e.head.Snapshot(en.Labels, start, end, nil)
		}
		return nil
	}
	ls := make([]series.Labels, len(entries))
	for i, en := range entries {
		ls[i] = en.Labels
	}
	heads, err := bh.Snapshots(ctx, ls, start, end, lim.max)
	if err != nil {
		return err
	}
	for i := range entries {
		scs[i].head = heads[i]
	}
	return nil
}
