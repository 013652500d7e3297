package query

import (
	"context"
	"sync"

	"hourglass/chunk"
	"hourglass/internal/procs"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// StoreRollups is the RollupReader of a store's rollup table: the buckets
// the flusher computes (rollup.Scan) and the points written through
// /api/rollup (rollup.ScanExternal), read one salt bucket per goroutine.
type StoreRollups struct {
	Store  store.Store
	Layout rowkey.Layout
	Ivs    []int64 // the rollup intervals (ms), ascending
	// Index, when set, tells a read of most of a metric's series (at
	// least half of those with data in the range), which reads the
	// metric's key ranges whole (rollup.ScanDense), from one of a few.
	Index *series.Index
}

// Intervals returns the rollup intervals.
func (s *StoreRollups) Intervals() []int64 { return s.Ivs }

// ReadBuckets reads the computed buckets of entries (see RollupReader).
func (s *StoreRollups) ReadBuckets(ctx context.Context, entries []*series.Entry, iv, start, end int64, f rollup.Fields, fn func(int, *rollup.Bucket) error) error {
	o := rollup.ScanOptions{Dense: s.dense(entries, start, end), Fields: f}
	return s.bySalt(ctx, entries, func(ctx context.Context, tsuids [][]byte, idx []int) error {
		var err error
		scanErr := rollup.ScanWith(ctx, s.Store, s.Layout, iv, tsuids, start, end, o, func(j int, b *rollup.Bucket) bool {
			err = fn(idx[j], b)
			return err == nil
		})
		if err != nil {
			return err
		}
		return scanErr
	})
}

// dense reports whether entries are, for every metric they belong to, at
// least half of the series the index has with data in [start, end).
func (s *StoreRollups) dense(entries []*series.Entry, start, end int64) bool {
	if s.Index == nil || len(entries) == 0 {
		return false
	}
	asked := map[string]int{}
	for _, en := range entries {
		asked[en.Labels.Metric()]++
	}
	for metric, n := range asked {
		if all := len(s.Index.Select(metric, nil, false, start, end-1)); 2*n < all {
			return false
		}
	}
	return true
}

// ReadExternal reads the points of aggregator agg written through
// /api/rollup at interval iv for entries, each series' in time order.
func (s *StoreRollups) ReadExternal(ctx context.Context, entries []*series.Entry, iv int64, agg rollup.Aggregator, start, end int64, fn func(i int, t int64, v chunk.Value) error) error {
	return s.bySalt(ctx, entries, func(ctx context.Context, tsuids [][]byte, idx []int) error {
		var err error
		scanErr := rollup.ScanExternal(ctx, s.Store, s.Layout, iv, agg, tsuids, start, end, func(j int, t int64, v chunk.Value) bool {
			err = fn(idx[j], t, v)
			return err == nil
		})
		if err != nil {
			return err
		}
		return scanErr
	})
}

// bySalt runs read once per salt bucket of entries, in parallel, with the
// bucket's TSUIDs and their indexes in entries; the first error cancels
// the others and is returned.
func (s *StoreRollups) bySalt(ctx context.Context, entries []*series.Entry, read func(ctx context.Context, tsuids [][]byte, idx []int) error) error {
	groups := map[byte][]int{}
	for i, en := range entries {
		groups[en.Salt] = append(groups[en.Salt], i)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, procs.Workers()*2)
	for _, idx := range groups {
		tsuids := make([][]byte, len(idx))
		for j, i := range idx {
			tsuids[j] = entries[i].TSUID
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := read(ctx, tsuids, idx); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}
