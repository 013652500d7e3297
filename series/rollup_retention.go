package series

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"hourglass/rollup"
	"hourglass/store"
)

// Retention per resolution (issue 13): the rollups of an interval with a
// retention (RollupOptions.Retention) are dropped a key range at a time,
// one range per salt bucket, interval and metric, every rollup row whose
// UTC day ended before now minus the retention. Raw retention never
// touches the rollup table; and while rollups keep a day, the index keeps
// it too, so that the series stay found by queries of the rollups.

// rollupCutoff returns the first day (ms) the retention ret keeps at now.
func rollupCutoff(now time.Time, ret time.Duration) int64 {
	return rollup.RowBase(now.Add(-ret).UnixMilli())
}

// indexCutoff returns the time before which the index may forget days, the
// raw retention's cutoff or, with rollups, the oldest day a rollup keeps:
// math.MinInt64 when some rollup interval is kept for ever.
func (r *Retention) indexCutoff(rawCutoff int64) int64 {
	c := rawCutoff
	for _, iv := range r.rollups.Intervals {
		ret := r.rollups.Retention[iv]
		if ret <= 0 {
			return math.MinInt64
		}
		c = min(c, rollupCutoff(r.now(), ret))
	}
	return c
}

// applyRollups drops the rollup rows past their interval's retention.
func (r *Retention) applyRollups(ctx context.Context, rep *RetentionReport) error {
	if len(r.rollups.Retention) == 0 {
		return nil
	}
	mw := r.layout.MetricWidth
	// The metrics and salt buckets with data: the index keeps every day a
	// rollup keeps (indexCutoff).
	salts := map[string]map[byte]bool{}
	r.index.mu.RLock()
	for _, mi := range r.index.metrics {
		for _, e := range mi.series {
			m := string(e.TSUID[:mw])
			if salts[m] == nil {
				salts[m] = map[byte]bool{}
			}
			salts[m][e.Salt] = true
		}
	}
	r.index.mu.RUnlock()
	metrics := make([]string, 0, len(salts))
	for m := range salts {
		metrics = append(metrics, m)
	}
	sort.Strings(metrics)
	for _, iv := range r.rollups.Intervals {
		ret := r.rollups.Retention[iv]
		if ret <= 0 {
			continue
		}
		cutoff := rollupCutoff(r.now(), ret)
		if cutoff <= 0 {
			continue
		}
		for _, m := range metrics {
			for salt := range salts[m] {
				var kr store.KeyRange
				// MetricRange's days are inclusive: up to the day before the cutoff.
				kr.Start, kr.End = rollup.MetricRange(r.layout, salt, []byte(m), iv.Milliseconds(), 0, cutoff-1)
				if err := r.st.DeleteRange(ctx, store.TableRollup, kr); err != nil {
					return fmt.Errorf("series: rollup retention: deleting old rows: %w", err)
				}
				rep.RollupRanges++
			}
		}
		if r.rollupW != nil {
			r.rollupW.cache.forgetBefore(iv.Milliseconds(), cutoff)
		}
	}
	return nil
}
