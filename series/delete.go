package series

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"hourglass/chunk"
	"hourglass/model"
	"hourglass/rowkey"
	"hourglass/store"
	"hourglass/uid"
)

// Deleting points (OpenTSDB's /api/query with delete):
//
//  1. A tombstone (series, [start, end]) goes into the WAL and is fsynced,
//     under the lock that orders it against appends, so a replay applies
//     writes and deletes in the order they were acknowledged.
//  2. Still under that lock, the points in range leave the series' open
//     and sealed-but-unwritten chunks.
//  3. A delete job joins the flusher's queue behind every chunk sealed
//     before it; when its turn comes it rewrites the rows of the range in
//     the store (whole hours: the cells go; partial hours: the cells are
//     decoded, filtered and written again under their qualifiers).
//  4. The tombstone's WAL segment is kept until the job is done, so a crash
//     in between replays it and the job runs again (it is idempotent);
//     points written after the delete are replayed after it and survive.
//
// Unlike OpenTSDB, which drops every hourly row the range touches, only the
// points in [start, end] go.

// deleteJob is a delete waiting in the flusher's queue.
type deleteJob struct {
	labels     []Labels
	start, end int64
	minSeg     int           // the WAL segment of the tombstone
	done       chan struct{} // closed once the store holds no point of the range
	cells      int           // cells rewritten or deleted, for tests and logs
}

// deleteExactRows bounds series × hours for which a delete reads exact rows
// rather than the metric's range per salt bucket (as queries do).
const deleteExactRows = 4096

// ErrDeleteUnfinished is returned by Delete when ctx ends before the store
// is rewritten; the delete is durable and completes in the background
// (model.ErrDeleteUnfinished).
var ErrDeleteUnfinished = model.ErrDeleteUnfinished

// Deleter runs deletes: the tombstone into the head's WAL and memory,
// then, in the flusher's queue, the rewrite of the rows of the range in the
// store, through the UID table and the index it is given.
type Deleter struct {
	head   *Head
	st     store.Store
	uids   *uid.Table
	index  *Index
	layout rowkey.Layout
	log    *slog.Logger
}

// NewDeleter returns the deleter of the head h over st; the flusher runs
// its jobs (Flusher.runDelete).
func NewDeleter(h *Head, st store.Store, uids *uid.Table, idx *Index, layout rowkey.Layout, log *slog.Logger) *Deleter {
	d := &Deleter{head: h, st: st, uids: uids, index: idx, layout: layout, log: log}
	h.fl.runDelete = d.run
	return d
}

// Delete removes the points of the series ls in [start, end] (ms, inclusive)
// from the head and the store. It returns once the tombstone is durable
// and the store holds none of those points; points appended after it
// returns are kept. If ctx ends first, the delete still completes (a crash
// replays it) and Delete returns an error wrapping ErrDeleteUnfinished.
func (d *Deleter) Delete(ctx context.Context, ls []Labels, start, end int64) error {
	job, err := d.head.tombstone(ls, start, end)
	if err != nil || job == nil {
		return err
	}
	select {
	case <-job.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrDeleteUnfinished, ctx.Err())
	case <-d.head.stop:
		return fmt.Errorf("%w: %v", ErrDeleteUnfinished, ErrClosed)
	}
}

// tombstone is the head's part of a delete: the tombstone goes into the WAL,
// durably whatever the sync mode, the points in range leave memory, and the
// job that takes them out of the store is queued (nil if there is nothing
// to delete).
func (h *Head) tombstone(ls []Labels, start, end int64) (*deleteJob, error) {
	if h.closed.Load() {
		return nil, ErrClosed
	}
	if p := h.fatal.Load(); p != nil {
		return nil, *p
	}
	if len(ls) == 0 || start > end {
		return nil, nil
	}
	for _, l := range ls {
		if !l.Valid() {
			return nil, fmt.Errorf("series: delete of malformed labels %q", string(l))
		}
	}
	h.applyMu.Lock()
	var seg int
	_, err := h.log.Append(func(segment int, buf []byte) []byte {
		seg = segment
		return appendDelete(buf, start, end, ls)
	})
	if err != nil {
		h.applyMu.Unlock()
		if h.log.Err() != nil {
			return nil, h.failed(fmt.Errorf("series: writing the wal: %w", err))
		}
		return nil, fmt.Errorf("%w: writing the wal: %v", store.ErrUnavailable, err)
	}
	job := h.applyDelete(ls, start, end, seg)
	h.applyMu.Unlock()
	// A delete is durable when it returns, whatever the WAL's sync mode.
	if err := h.log.Sync(); err != nil {
		return nil, h.failed(fmt.Errorf("series: syncing the wal: %w", err))
	}
	h.m.deletes.Inc()
	return job, nil
}

// applyDelete takes the points in range out of the head's chunks and queues
// the job that takes them out of the store. seg is the tombstone's segment.
func (h *Head) applyDelete(ls []Labels, start, end int64, seg int) *deleteJob {
	for _, l := range ls {
		sh := h.shard(l)
		sh.mu.RLock()
		s := sh.m[l]
		sh.mu.RUnlock()
		if s == nil {
			continue
		}
		s.mu.Lock()
		for _, c := range s.open {
			if c.hour+rowkey.HourMs <= start || c.hour > end {
				continue
			}
			c.pts = cutRange(c.thaw(), start, end, false)
		}
		for _, c := range s.pending {
			if c.hour+rowkey.HourMs <= start || c.hour > end {
				continue
			}
			// The flusher reads a sealed chunk's points without the
			// series lock: give it a new slice, never change the old one.
			c.pts = cutRange(c.pts, start, end, true)
		}
		s.mu.Unlock()
	}
	h.hist.deleteRange(ls, start, end)      // hook: histogram.go
	h.exemplars.deleteRange(ls, start, end) // hook: exemplar.go
	job := &deleteJob{labels: ls, start: start, end: end, minSeg: seg, done: make(chan struct{})}
	h.fl.queueDelete(job)
	return job
}

// cutRange returns pts without the points in [start, end]; in place unless
// fresh is set, when a changed result is a new slice.
func cutRange(pts []chunk.Point, start, end int64, fresh bool) []chunk.Point {
	i := 0
	for i < len(pts) && (pts[i].T < start || pts[i].T > end) {
		i++
	}
	if i == len(pts) {
		return pts
	}
	var out []chunk.Point
	if fresh {
		out = make([]chunk.Point, i, len(pts))
		copy(out, pts[:i])
	} else {
		out = pts[:i]
	}
	for _, p := range pts[i:] {
		if p.T < start || p.T > end {
			out = append(out, p)
		}
	}
	return out
}

// forgetRows drops what the flusher believes of the rows of the series l,
// which a delete is about to change.
func (h *Head) forgetRows(l Labels) {
	sh := h.shard(l)
	sh.mu.RLock()
	if s := sh.m[l]; s != nil {
		s.rows = nil
	}
	sh.mu.RUnlock()
}

// run is the flusher's part of a delete: every chunk queued before the
// job is in the store, so the rows of the range can be rewritten.
func (d *Deleter) run(ctx context.Context, job *deleteJob) error {
	var tsuids [][]byte
	for _, l := range job.labels {
		// The flusher owns what it believes of the series' rows; they
		// change now.
		d.head.forgetRows(l)
		tsuid, err := d.lookupTSUID(ctx, l)
		if err != nil {
			return err
		}
		if tsuid != nil {
			tsuids = append(tsuids, tsuid)
		}
	}
	d.head.hist.writeMu.Lock() // hook: histogram_flush.go; no histogram flush writes meanwhile
	n, err := d.deleteFromStore(ctx, tsuids, job.start, job.end)
	d.head.hist.writeMu.Unlock()
	job.cells += n
	if err == nil && d.head.fl.rollups != nil {
		// Hook (rollup_delete.go): the rollups of the range follow the raw rows.
		err = d.head.fl.rollups.deleteRange(ctx, tsuids, job.start, job.end)
	}
	return err
}

// lookupTSUID returns the TSUID of l without assigning UIDs: nil if one of
// its names has none, in which case the store holds nothing of it.
func (d *Deleter) lookupTSUID(ctx context.Context, l Labels) ([]byte, error) {
	tsuid, err := tsuidOf(ctx, l, d.uids.GetID)
	if errors.Is(err, uid.ErrNoSuchName) {
		return nil, nil
	}
	return tsuid, err
}

// deleteFromStore removes the points of the series tsuids in [start, end]
// from the data table, a window of hours at a time, and returns the number
// of cells deleted or rewritten. Rows wholly inside the range lose every
// cell; the cells of the rows at its edges are decoded, filtered and written
// again under their own qualifiers (another writer's cells included).
func (d *Deleter) deleteFromStore(ctx context.Context, tsuids [][]byte, start, end int64) (int, error) {
	if len(tsuids) == 0 {
		return 0, nil
	}
	l := d.layout
	mw := l.MetricWidth
	want := make(map[string]bool, len(tsuids))
	byMetric := map[string][][]byte{}
	type span struct{ first, last int64 }
	spans := map[string]span{}
	for _, id := range tsuids {
		// The index knows the days in which a series had data: the rows
		// to visit lie within them (a delete of all time visits years,
		// not centuries).
		first, last, ok := d.index.dataSpan(id, start, end)
		if !ok || want[string(id)] {
			continue
		}
		want[string(id)] = true
		m := string(id[:mw])
		byMetric[m] = append(byMetric[m], id)
		if sp, seen := spans[m]; seen {
			first, last = min(first, sp.first), max(last, sp.last)
		}
		spans[m] = span{first, last}
	}
	total := 0
	var (
		tsuid []byte
		pts   []chunk.Point
	)
	for metric, ids := range byMetric {
		h0, h1 := rowkey.HourOf(spans[metric].first), rowkey.HourOf(spans[metric].last)
		sort.Slice(ids, func(i, j int) bool { return string(ids[i]) < string(ids[j]) })
		exact := len(ids) <= deleteExactRows
		window := int64(24)
		if exact {
			window = max(1, int64(deleteExactRows/len(ids)))
		}
		salts := map[byte]bool{}
		for _, id := range ids {
			salts[l.Salt(id)] = true
		}
		for ws := h0; ws <= h1; ws += window * rowkey.HourMs {
			we := min(ws+(window-1)*rowkey.HourMs, h1)
			var ranges []store.KeyRange
			if exact {
				for hr := ws; hr <= we; hr += rowkey.HourMs {
					for _, id := range ids {
						ranges = append(ranges, store.RowRange(l.AppendRowKey(nil, id, hr)))
					}
				}
			} else {
				for salt := range salts {
					var kr store.KeyRange
					kr.Start, kr.End = l.MetricRange(salt, []byte(metric), ws, we)
					ranges = append(ranges, kr)
				}
			}
			sort.Slice(ranges, func(i, j int) bool { return string(ranges[i].Start) < string(ranges[j].Start) })
			var muts []store.Mutation
			err := d.st.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
				var hour int64
				var err error
				_, hour, tsuid, err = l.ParseRowKey(tsuid[:0], c.Row)
				if err != nil || !want[string(tsuid)] {
					return true
				}
				row := append([]byte(nil), c.Row...)
				qual := append([]byte(nil), c.Qualifier...)
				if hour >= start && hour+rowkey.HourMs-1 <= end {
					muts = append(muts, store.Mutation{Row: row, Qualifier: qual, Delete: true})
					return true
				}
				if chunk.IsHistogramChunk(c.Value) { // hook: histogram.go
					switch nv, del, changed, err := cutHistCell(c.Value, hour, start, end); {
					case err != nil:
						d.log.Error("delete: a corrupt histogram cell is left as it is", "row", fmt.Sprintf("%x", c.Row), "err", err)
					case del:
						muts = append(muts, store.Mutation{Row: row, Qualifier: qual, Delete: true})
					case changed:
						muts = append(muts, store.Mutation{Row: row, Qualifier: qual, Value: nv})
					}
					return true
				}
				if pts, err = chunk.Decode(pts[:0], c.Value, hour); err != nil {
					// Failing the job would stop the flusher behind it for
					// good: leave the cell as it is (reads report it).
					d.log.Error("delete: a corrupt cell is left as it is", "row", fmt.Sprintf("%x", c.Row), "err", err)
					return true
				}
				kept := cutRange(pts, start, end, false)
				switch {
				case len(kept) == len(pts):
				case len(kept) == 0:
					muts = append(muts, store.Mutation{Row: row, Qualifier: qual, Delete: true})
				default:
					b, err := chunk.Append(nil, hour, kept)
					if err != nil {
						panic("series: points decoded from a cell do not encode again: " + err.Error())
					}
					muts = append(muts, store.Mutation{Row: row, Qualifier: qual, Value: b})
				}
				return true
			})
			if err != nil {
				return total, err
			}
			if len(muts) > 0 {
				if err := d.st.Write(ctx, store.TableData, muts); err != nil {
					return total, err
				}
				total += len(muts)
			}
		}
	}
	return total, nil
}
