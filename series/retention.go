package series

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"hourglass/internal/errclass"
	"hourglass/rowkey"
	"hourglass/store"
)

// Retention (Options.Retention): rows whose hour ended more than the
// retention ago are dropped a key range at a time — one range per metric
// and salt bucket, never point by point — and the index forgets the days
// they held, and the series left with no day at all. Points older than the
// retention are refused at the door, so the head never writes such rows back.

// ErrOutOfRetention is the error of a point older than the retention; it is
// in the class errclass.ErrInvalid.
var ErrOutOfRetention = errclass.New(errclass.ErrInvalid, "point older than the retention period")

// retentionCutoff returns the first hour (ms) a retention keeps at now.
func retentionCutoff(now time.Time, retention time.Duration) int64 {
	return rowkey.HourOf(now.Add(-retention).UnixMilli())
}

// Retention drops the rows and index days older than the retention, from
// the store and the index it is given. The head refuses older points at the
// door, so it never writes such rows back.
type Retention struct {
	st        store.Store
	index     *Index
	layout    rowkey.Layout
	head      *Head // asked whether it still holds a series the index would forget
	retention time.Duration
	interval  time.Duration
	now       func() time.Time
	log       *slog.Logger
	rollups   RollupOptions // hook (rollup_retention.go): retention per resolution
	rollupW   *rollupWriter // its day cell cache forgets what retention drops
}

// NewRetention returns the retention job over st and idx; h is the head
// writing to them. opts gives Retention, RetentionInterval, Layout, Now and
// Logger.
func NewRetention(st store.Store, idx *Index, h *Head, opts Options) *Retention {
	return &Retention{st: st, index: idx, layout: opts.Layout, head: h, retention: opts.Retention,
		interval: opts.RetentionInterval, now: opts.Now, log: opts.Logger, rollups: opts.Rollup}
}

// loop applies the retention at once and every interval until stop closes.
func (r *Retention) loop(stop <-chan struct{}) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		if _, err := r.Apply(context.Background()); err != nil {
			r.log.Error("applying the retention failed; trying again later", "err", err)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// RetentionReport says what one pass of the retention did.
type RetentionReport struct {
	Cutoff        int64 // rows before this hour (ms) were dropped
	Ranges        int   // key ranges deleted
	SeriesDropped int   // series the index forgot
	RollupRanges  int   // key ranges deleted from the rollup table
	Exemplars     int   // exemplars dropped
}

// Apply drops what the retention no longer keeps: the rollups past their
// interval's retention, then the raw rows past the retention (nothing when
// it is 0).
func (r *Retention) Apply(ctx context.Context) (RetentionReport, error) {
	var rep RetentionReport
	var err error
	if err = r.applyRollups(ctx, &rep); err != nil {
		return rep, err
	}
	if r.retention <= 0 {
		return rep, nil
	}
	cutoff := retentionCutoff(r.now(), r.retention)
	rep.Cutoff = cutoff
	// The index keeps the days the rollups still hold (rollup_retention.go).
	idxCutoff := r.indexCutoff(cutoff)
	// Days that end at or before the cutoff hold only rows it drops.
	cutoffDay := uint32(max(idxCutoff, 0) / dayMs)
	ix := r.index
	mw := r.layout.MetricWidth

	// Which metrics (and salt buckets) have data before the cutoff.
	old := map[string]map[byte]bool{}
	var idle []*Entry
	ix.mu.RLock()
	for _, mi := range ix.metrics {
		for _, e := range mi.series {
			firstDay, lastDay, ok := e.DaySpan()
			if !ok || int64(firstDay)*dayMs >= cutoff {
				continue
			}
			m := string(e.TSUID[:mw])
			if old[m] == nil {
				old[m] = map[byte]bool{}
			}
			old[m][e.Salt] = true
			if int64(lastDay+1)*dayMs <= idxCutoff {
				idle = append(idle, e)
			}
		}
	}
	ix.mu.RUnlock()

	metrics := make([]string, 0, len(old))
	for m := range old {
		metrics = append(metrics, m)
	}
	sort.Strings(metrics)
	for _, m := range metrics {
		for salt := range old[m] {
			// MetricRange's hours are inclusive: up to the hour before the cutoff.
			var kr store.KeyRange
			kr.Start, kr.End = r.layout.MetricRange(salt, []byte(m), 0, cutoff-rowkey.HourMs)
			if err := r.st.DeleteRange(ctx, store.TableData, kr); err != nil {
				return rep, fmt.Errorf("series: retention: deleting old rows: %w", err)
			}
			rep.Ranges++
		}
	}

	// Hook (exemplar.go): the exemplars before the cutoff go too.
	if rep.Exemplars, err = r.head.applyRetention(ctx, cutoff); err != nil {
		return rep, fmt.Errorf("series: retention: dropping old exemplars: %w", err)
	}

	// The index: days before the cutoff go; series with none left go,
	// unless the head holds them (they are being written to).
	var muts []store.Mutation
	var drop []*Entry
	ix.mu.Lock()
	for _, mi := range ix.metrics {
		for _, e := range mi.series {
			if first, _, ok := e.DaySpan(); !ok || first >= cutoffDay || idxCutoff <= 0 {
				continue
			}
			e.DropDaysBefore(cutoffDay, func(day uint32) {
				muts = append(muts, store.Mutation{Row: e.TSUID, Qualifier: dayQualifier(day), Delete: true})
			})
		}
	}
	ix.mu.Unlock()
	for _, e := range idle {
		if !r.head.holds(e.Labels) {
			drop = append(drop, e)
		}
	}
	ix.mu.Lock()
	for _, e := range drop {
		// A point may have arrived since: its day keeps the series.
		if _, _, ok := e.DaySpan(); !ok && ix.removeLocked(e) {
			muts = append(muts, store.Mutation{Row: e.TSUID, Qualifier: qualLabels, Delete: true})
			rep.SeriesDropped++
		}
	}
	ix.mu.Unlock()
	for len(muts) > 0 {
		n := min(len(muts), 10000)
		if err := r.st.Write(ctx, store.TableIndex, muts[:n]); err != nil {
			return rep, fmt.Errorf("series: retention: updating the index: %w", err)
		}
		muts = muts[n:]
	}
	if rep.Ranges > 0 || rep.SeriesDropped > 0 {
		r.log.Info("retention applied", "before", time.UnixMilli(cutoff).UTC(), "ranges", rep.Ranges, "series_dropped", rep.SeriesDropped)
	}
	return rep, nil
}

// removeLocked takes e out of the index; false if it was not in it.
func (ix *Index) removeLocked(e *Entry) bool {
	if ix.byTSUID[string(e.TSUID)] != e {
		return false
	}
	delete(ix.byTSUID, string(e.TSUID))
	if ix.byLabels[e.Labels] == e {
		delete(ix.byLabels, e.Labels)
	}
	ix.count--
	m := e.Labels.Metric()
	mi := ix.metrics[m]
	mi.series = removeEntry(mi.series, e)
	e.Labels.Range(func(k, v string) bool {
		t := Tag{Key: k, Value: v}
		if p := removeEntry(mi.postings[t], e); len(p) > 0 {
			mi.postings[t] = p
		} else {
			delete(mi.postings, t)
		}
		if mi.keys[k]--; mi.keys[k] <= 0 {
			delete(mi.keys, k)
		}
		return true
	})
	if len(mi.series) == 0 {
		delete(ix.metrics, m)
	}
	return true
}

func removeEntry(list []*Entry, e *Entry) []*Entry {
	for i, x := range list {
		if x == e {
			return slices.Delete(list, i, i+1)
		}
	}
	return list
}
