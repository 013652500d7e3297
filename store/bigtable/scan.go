package bigtable

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	bt "cloud.google.com/go/bigtable"

	"hourglass/store"
)

// Scan reads the ranges with ReadRows: one RowRangeList per request, the
// list split so that no request carries more than 256 KiB of keys (the
// requests run one after the other, so the cells come in key order), the
// newest version of each cell kept by a server-side filter. The client
// retries a broken stream from the row after the last it delivered. A scan
// that receives no row for Options.Timeout fails with store.ErrUnavailable.
//
// The row and qualifier handed to fn live in buffers reused for the next
// cell; the value is the client's.
func (s *Store) Scan(ctx context.Context, t store.Table, ranges []store.KeyRange, fn func(c store.Cell) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	tbl, err := s.begin(ctx, t)
	if err != nil {
		return err
	}
	if err := checkRanges(ranges); err != nil {
		return err
	}
	rrs := make([]bt.RowRange, 0, len(ranges))
	sizes := make([]int, 0, len(ranges))
	for _, r := range ranges {
		if r.Empty() {
			continue
		}
		// An empty start is the first key, an empty end no bound: the
		// client maps both to unbounded.
		rrs = append(rrs, bt.NewRange(string(r.Start), string(r.End)))
		sizes = append(sizes, len(r.Start)+len(r.End)+16)
	}
	if len(rrs) == 0 {
		return nil
	}

	// The watchdog cancels a scan that stops making progress: the client
	// retries a failing stream for as long as the context lets it.
	opctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stalled atomic.Bool
	watchdog := time.AfterFunc(s.timeout, func() {
		stalled.Store(true)
		cancel()
	})
	defer watchdog.Stop()

	var (
		stopped   bool
		row, qual []byte
	)
	onRow := func(r bt.Row) bool {
		watchdog.Reset(s.timeout)
		if ctx.Err() != nil {
			return false
		}
		items := r[family]
		for i := range items {
			it := &items[i]
			if i == 0 {
				row = append(row[:0], it.Row...)
			}
			qual = append(qual[:0], it.Column[len(columnPrefix):]...)
			if !fn(store.Cell{Row: row, Qualifier: qual, Value: it.Value}) {
				stopped = true
				return false
			}
		}
		return true
	}
	for start := 0; start < len(rrs); {
		end, size := start, 0
		for end < len(rrs) && (end == start || size+sizes[end] <= maxRowSetBytes) {
			size += sizes[end]
			end++
		}
		err := tbl.ReadRows(opctx, bt.RowRangeList(rrs[start:end]), onRow, latest)
		if cerr := ctx.Err(); cerr != nil && !stopped {
			return fmt.Errorf("store/bigtable: scan %s: %w", t, cerr)
		}
		if err != nil {
			if stalled.Load() {
				err = fmt.Errorf("no row for %s: %w", s.timeout, err)
			}
			return fail(ctx, opctx, "scan", t, err)
		}
		if stopped {
			return nil
		}
		start = end
	}
	return nil
}
