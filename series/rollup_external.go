package series

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hourglass/chunk"
	"hourglass/internal/errclass"
	"hourglass/rollup"
	"hourglass/store"
)

// Rollups written from outside (OpenTSDB's /api/rollup and the telnet
// rollup command): each point is one cell of the rollup table, beside the
// cells hourglass computes, named by its aggregator and bucket
// (docs/format/rollup.md, "External points"); rollup.ScanExternal reads
// them. They go to the store directly, not through the WAL: a call
// returns once they are durable there.

// RollupSample is one rollup point written from outside.
type RollupSample struct {
	Labels   Labels
	Interval time.Duration // one of RollupOptions.Intervals
	Agg      rollup.Aggregator
	T        int64 // ms; stored at the start of its bucket
	V        chunk.Value
}

// ErrNoSuchRollup is wrapped by the error of a rollup point whose interval
// is not rolled up (-rollup.intervals); it is in the class
// errclass.ErrInvalid.
var ErrNoSuchRollup = errclass.New(errclass.ErrInvalid, "no such rollup")

// RollupIntervals returns the rollup intervals, shortest first (none when
// rollups are off).
func (db *DB) RollupIntervals() []time.Duration {
	w := db.flusher.rollups
	if w == nil {
		return nil
	}
	out := make([]time.Duration, len(w.intervals))
	for i, iv := range w.intervals {
		out[i] = time.Duration(iv) * time.Millisecond
	}
	return out
}

// WriteRollups stores samples in the rollup table. errs, of the same length,
// receives each sample's own error (an interval not rolled up, a point
// older than its interval's rollup retention, a new series over a series
// limit counted in req); the others are stored, and their series and days
// recorded in the index, so that queries find them. It returns once they
// are durable. A non-nil return means none may be acknowledged.
func (db *DB) WriteRollups(ctx context.Context, samples []RollupSample, errs []error, req *Request) error {
	h := db.Head
	if h.closed.Load() {
		return ErrClosed
	}
	if p := h.fatal.Load(); p != nil {
		return *p
	}
	w := db.flusher.rollups
	var muts, idx []store.Mutation
	for i := range samples {
		sm := &samples[i]
		iv := sm.Interval.Milliseconds()
		if w == nil || !w.has(iv) {
			errs[i] = fmt.Errorf("%w: %s (this server rolls up %v, -rollup.intervals)", ErrNoSuchRollup, sm.Interval, db.RollupIntervals())
			continue
		}
		if ret := db.retention.rollups.Retention[sm.Interval]; ret > 0 {
			if cutoff := rollupCutoff(h.opts.Now(), ret); sm.T < cutoff {
				errs[i] = fmt.Errorf("%w (%v for %s rollups): timestamp %d ms is before %d", ErrOutOfRetention, ret, sm.Interval, sm.T, cutoff)
				continue
			}
		}
		if sm.T < 0 || sm.Agg.String() == "" {
			errs[i] = fmt.Errorf("%w: rollup point at %d ms with aggregator %d", errclass.ErrInvalid, sm.T, sm.Agg)
			continue
		}
		s, err := h.getOrCreateLimited(ctx, sm.Labels, req)
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				return err
			}
			errs[i] = err
			continue
		}
		day := dayOf(sm.T)
		s.mu.Lock()
		if s.entry == nil {
			s.entry, idx = h.index.add(s.labels, s.tsuid, h.opts.Layout.Salt(s.tsuid), day, idx)
		} else {
			idx = h.index.addDay(s.entry, day, idx)
		}
		s.lastAppend = h.opts.Now().UnixMilli() // kept a while, as after a put
		s.mu.Unlock()
		t := rollup.BucketStart(sm.T, iv)
		d := rollup.RowBase(t)
		muts = append(muts, store.Mutation{
			Row:       rollup.AppendRowKey(nil, h.opts.Layout, s.tsuid, iv, t),
			Qualifier: rollup.AppendExternalQualifier(nil, sm.Agg, d, t),
			Value:     rollup.AppendExternalValue(nil, sm.V),
		})
	}
	if len(idx) > 0 {
		// Durable now; and announced to other nodes through the flusher's
		// index queue when they share the store.
		if err := db.flusher.st.Write(ctx, store.TableIndex, idx); err != nil {
			return err
		}
		if db.feed != nil {
			db.flusher.queueIndex(idx)
		}
	}
	for len(muts) > 0 {
		n := min(len(muts), externalWriteBatch)
		if err := db.flusher.st.Write(ctx, store.TableRollup, muts[:n]); err != nil {
			return err
		}
		w.m.cells.Add(float64(n))
		muts = muts[n:]
	}
	return nil
}

// externalWriteBatch bounds the cells of one store write of WriteRollups.
const externalWriteBatch = 10_000

// has reports whether iv (ms) is one of the writer's intervals.
func (w *rollupWriter) has(iv int64) bool {
	for _, x := range w.intervals {
		if x == iv {
			return true
		}
	}
	return false
}
