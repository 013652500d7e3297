package series

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/store"
)

// Rollups as data settles (issue 13, docs/format/rollup.md): when the
// flusher has written a row of the data table, it computes that
// series-hour's buckets at every configured interval and writes them to
// the rollup table before the chunks leave the head. So the WAL segment
// that holds the points is kept until the rollups are written too, and a
// crash at any moment replays the points, rewrites the row and computes the
// rollups again: once replay is done no rollup disagrees with the raw rows.
//
// The buckets come from the points just written when they are the whole
// row (a row the writer had no cell in, or whose every cell it rewrote);
// or continued from the hour's cached bucket by points that follow all
// the row's (rollup_continue.go); otherwise from the row read back from
// the store after the write (a late
// chunk beside cells already there, another writer's cells). Intervals
// below an hour have one cell per hour, which the hour's buckets replace;
// an hour and above one cell per UTC day, read back and the hour's bucket
// replaced in it. An interval above an hour has buckets spanning several
// raw rows: they are computed from every row of the bucket read back.

// RollupOptions configures the rollups.
type RollupOptions struct {
	// Intervals are the rollup intervals, each accepted by
	// rollup.ValidateInterval; none turns rollups off.
	Intervals []time.Duration
	// Retention is how long the rollups of an interval are kept; an
	// interval not in it (or 0) keeps them for ever. Raw retention never
	// touches the rollup table.
	Retention map[time.Duration]time.Duration
	// CacheBytes bounds the day cells kept in memory so that the next hour
	// of a day does not read its cell back (rollup_cache.go); 0 keeps none.
	CacheBytes int64
}

// Validate reports an interval that cannot be a rollup interval, one
// given twice, or a retention for an interval that is not rolled up.
func (o RollupOptions) Validate() error {
	seen := map[time.Duration]bool{}
	for _, iv := range o.Intervals {
		if err := rollup.ValidateInterval(iv.Milliseconds()); err != nil || iv%time.Millisecond != 0 {
			return fmt.Errorf("rollup interval %s: must be whole seconds and divide an hour, or be whole hours dividing a day", iv)
		}
		if seen[iv] {
			return fmt.Errorf("rollup interval %s given twice", iv)
		}
		seen[iv] = true
	}
	for iv, r := range o.Retention {
		if !seen[iv] {
			return fmt.Errorf("rollup retention for %s: not a rollup interval", iv)
		}
		if r < 0 {
			return fmt.Errorf("rollup retention for %s: %s is negative", iv, r)
		}
	}
	return nil
}

// rollupRow is one data row the flusher wrote: the series, the hour, and
// per interval (rollupWriter.intervals) the hour's buckets when the points
// written were the whole row, or continued the buckets last written
// (rollup_continue.go) (complete), for intervals up to an hour.
type rollupRow struct {
	tsuid    []byte
	hour     int64
	complete bool
	buckets  [][]rollup.Bucket
	// follows: pts, the points written, all come after the row's other
	// points, the last of which is at prevLast ms (rollup_continue.go).
	follows  bool
	prevLast int64
	pts      []chunk.Point
}

type rollupMetrics struct {
	cells    prometheus.Counter
	seconds  prometheus.Counter
	errors   prometheus.Counter
	reads    prometheus.Counter
	dayReads prometheus.Counter
	// continued: hours whose buckets went on from the cached ones
	// (rollup_continue.go) rather than from the row read back.
	continued prometheus.Counter
}

func newRollupMetrics(r prometheus.Registerer) *rollupMetrics {
	m := &rollupMetrics{
		cells: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_rollup_cells_written_total", Help: "Rollup cells written (or deleted) in the rollup table."}),
		seconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_rollup_compute_seconds_total", Help: "Wall time spent computing and writing rollups after the data rows."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_rollup_errors_total", Help: "Failed rollup writes (retried with the data rows) and unreadable rollup or raw cells skipped."}),
		dayReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_rollup_day_cells_read_total", Help: "Rollup day cells (intervals of 1h and above) read back because the day cell cache (-rollup.cache-bytes) did not hold them."}),
		reads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_rollup_raw_rows_read_total", Help: "Raw rows read back to compute rollups (late points, other writers, intervals above an hour, deletes)."}),
		continued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_rollup_hours_continued_total", Help: "Rows written in a later chunk of their hour whose rollups were continued from the cached buckets by the new points alone, without reading the row back."}),
	}
	if r != nil {
		r.MustRegister(m.cells, m.seconds, m.errors, m.reads, m.dayReads, m.continued)
	}
	return m
}

// rollupWriter computes and writes rollups. Only the flusher's goroutine
// uses it (the Deleter's jobs run there too).
type rollupWriter struct {
	st store.Store
	// deferred is st when it can leave the rollup cells' durability to
	// the WAL, as the data rows' (Flusher.deferred): written without a
	// sync, made durable by the Sync before the WAL segments holding their
	// points are truncated. Nil: every write is durable.
	deferred  store.DeferredWriter
	layout    rowkey.Layout
	intervals []int64 // ms, increasing
	log       *slog.Logger
	m         *rollupMetrics
	cache     *dayCache // the day cells last written (rollup_cache.go)
	// slab and rowSlab hold the buckets hourBuckets computes for one
	// flush (resetSlabs): one allocation for a flush's rows, not two a row.
	slab    []rollup.Bucket
	rowSlab [][]rollup.Bucket
}

// newRollupWriter returns the writer of the intervals, nil when there are none.
func newRollupWriter(st store.Store, layout rowkey.Layout, o RollupOptions, log *slog.Logger, r prometheus.Registerer) *rollupWriter {
	if len(o.Intervals) == 0 {
		return nil
	}
	w := &rollupWriter{st: st, layout: layout, log: log, m: newRollupMetrics(r), cache: newDayCache(o.CacheBytes)}
	w.deferred, _ = st.(store.DeferredWriter)
	for _, iv := range o.Intervals {
		w.intervals = append(w.intervals, iv.Milliseconds())
	}
	sort.Slice(w.intervals, func(i, j int) bool { return w.intervals[i] < w.intervals[j] })
	if r != nil {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hourglass_rollup_day_cache_bytes", Help: "Bytes of rollup day cells the flusher keeps in memory (bounded by -rollup.cache-bytes)."},
			w.cache.size))
	}
	return w
}

// hourBuckets returns the buckets of one hour's points at each interval up
// to an hour (nil for the longer ones).
//
// The buckets are cut from the writer's slab, which the next write
// reuses: they are the flush's until its write is done (nothing keeps
// them after; the cache keeps cells).
func (w *rollupWriter) hourBuckets(pts []chunk.Point) [][]rollup.Bucket {
	n := len(w.intervals)
	if cap(w.rowSlab)-len(w.rowSlab) < n {
		w.rowSlab = make([][]rollup.Bucket, 0, max(256*n, 2*cap(w.rowSlab)))
	}
	out := w.rowSlab[len(w.rowSlab) : len(w.rowSlab)+n : len(w.rowSlab)+n]
	w.rowSlab = w.rowSlab[:len(w.rowSlab)+n]
	clear(out)
	for k, iv := range w.intervals {
		if iv > rowkey.HourMs {
			continue
		}
		b0 := len(w.slab)
		bs, err := rollup.Compute(w.slab, pts, iv)
		if err != nil {
			// Sorted, distinct points never fail; say so if they do.
			panic("series: rollup of sorted points: " + err.Error())
		}
		w.slab = bs
		out[k] = bs[b0:len(bs):len(bs)]
	}
	return out
}

// slabMax bounds the slabs a writer keeps from one flush to the next.
const slabMax = 1 << 20

// resetSlabs readies the slabs for the next flush; the buckets of the
// last one are no longer used.
func (w *rollupWriter) resetSlabs() {
	if cap(w.slab)*int(unsafe.Sizeof(rollup.Bucket{})) > slabMax {
		w.slab = nil
	}
	if cap(w.rowSlab)*int(unsafe.Sizeof([]rollup.Bucket{})) > slabMax {
		w.rowSlab = nil
	}
	w.slab, w.rowSlab = w.slab[:0], w.rowSlab[:0]
}

// rawKey names a data row: a series and an hour.
type rawKey struct {
	tsuid string
	hour  int64
}

// write computes and writes the rollups of the rows the flusher just wrote.
func (w *rollupWriter) write(ctx context.Context, rows []rollupRow) error {
	if w == nil {
		return nil
	}
	defer w.resetSlabs()
	if len(rows) == 0 {
		return nil
	}
	t0 := time.Now()
	defer func() { w.m.seconds.Add(time.Since(t0).Seconds()) }()
	if err := w.continueRows(ctx, rows); err != nil {
		return err
	}
	// The rows go in groups that read back at most rawReadGroup raw rows:
	// the points read back are held for one group only. Each group is
	// written (and cached) before the next computes, so a day cell that
	// two groups change is changed twice in order.
	need := map[rawKey]bool{}
	first := 0
	for i, r := range rows {
		w.rawNeed(r, need)
		if len(need) >= rawReadGroup || i == len(rows)-1 {
			if err := w.writeGroup(ctx, rows[first:i+1], need); err != nil {
				return err
			}
			need, first = map[rawKey]bool{}, i+1
		}
	}
	return nil
}

// rawReadGroup bounds the raw rows one group of write reads back (a
// variable for the tests).
var rawReadGroup = 256

// rawNeed adds to need the raw rows r's rollups are computed from when the
// points written are not all of them: r's row when incomplete, and every
// row of a bucket longer than an hour.
func (w *rollupWriter) rawNeed(r rollupRow, need map[rawKey]bool) {
	if !r.complete {
		need[rawKey{string(r.tsuid), r.hour}] = true
	}
	for _, iv := range w.intervals {
		if iv <= rowkey.HourMs {
			continue
		}
		b0 := rollup.BucketStart(r.hour, iv)
		for h := b0; h < b0+iv; h += rowkey.HourMs {
			need[rawKey{string(r.tsuid), h}] = true
		}
	}
}

// writeGroup computes and writes the rollups of rows, reading back the raw
// rows of need.
func (w *rollupWriter) writeGroup(ctx context.Context, rows []rollupRow, need map[rawKey]bool) error {
	raw, err := w.readRaw(ctx, need)
	if err != nil {
		return err
	}
	muts, days, err := w.mutations(ctx, rows, raw)
	if err != nil {
		return err
	}
	write := w.st.Write
	if w.deferred != nil {
		// Recomputable: until the Sync that precedes the WAL's truncation,
		// a crash replays the points, and the rows and their rollups are
		// written again (TestRollupsDeferredCrash).
		write = w.deferred.WriteDeferred
	}
	if err := write(ctx, store.TableRollup, muts); err != nil {
		w.m.errors.Inc()
		for _, d := range days {
			w.cache.forget(d.key)
		}
		return fmt.Errorf("series: writing rollups: %w", err)
	}
	w.cache.putAll(days)
	w.m.cells.Add(float64(len(muts)))
	return nil
}

// readRaw reads the data rows of need back from the store and returns each
// one's points, sorted, one per timestamp (the later cell winning, as a
// query reads them). A row with no cell is absent.
func (w *rollupWriter) readRaw(ctx context.Context, need map[rawKey]bool) (map[rawKey][]chunk.Point, error) {
	out := map[rawKey][]chunk.Point{}
	if len(need) == 0 {
		return out, nil
	}
	l := w.layout
	ranges := make([]store.KeyRange, 0, len(need))
	for k := range need {
		ranges = append(ranges, store.RowRange(l.AppendRowKey(nil, []byte(k.tsuid), k.hour)))
	}
	sort.Slice(ranges, func(i, j int) bool { return string(ranges[i].Start) < string(ranges[j].Start) })
	w.m.reads.Add(float64(len(ranges)))
	var tsuid []byte
	err := w.st.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
		_, hour, id, err := l.ParseRowKey(tsuid[:0], c.Row)
		tsuid = id
		if err != nil {
			return true
		}
		if chunk.IsHistogramChunk(c.Value) { // hook: histogram.go; rollups are of points
			return true
		}
		k := rawKey{string(id), hour}
		pts, err := chunk.Decode(out[k], c.Value, hour)
		if err != nil {
			// The query reports such a cell; the rollup leaves it out.
			w.m.errors.Inc()
			w.log.Warn("rollup: an unreadable raw cell is left out", "row", fmt.Sprintf("%x", c.Row), "err", err)
			return true
		}
		out[k] = pts
		return true
	})
	if err != nil {
		return nil, err
	}
	for k, pts := range out {
		out[k] = SortDedup(pts)
	}
	return out, nil
}

// dayKey names a day cell: a series, an interval and a day.
type dayKey struct {
	tsuid string
	iv    int64
	day   int64
}

// mutations returns the rollup cells of rows: hour cells replaced outright,
// day cells taken from the cache or read back, the rows' buckets replaced
// in them; and the day cells to record in the cache once written.
func (w *rollupWriter) mutations(ctx context.Context, rows []rollupRow, raw map[rawKey][]chunk.Point) ([]store.Mutation, []cachedDay, error) {
	// Sized once: a flush writes a cell per row and interval, and growing
	// these a row at a time was a fifth of the rollups' write
	// (BenchmarkRollupWrite, docs/benchmarks.md).
	muts := make([]store.Mutation, 0, len(rows)*len(w.intervals))
	keys := w.keyArena(rows)
	at := make(map[dayKey]int, len(rows))
	var work []dayWork // in the order the rows name them
	var edits []dayEdit
	for _, r := range rows {
		for k, iv := range w.intervals {
			var bs []rollup.Bucket
			var err error
			switch {
			case iv <= rowkey.HourMs && r.complete:
				bs = r.buckets[k]
			case iv <= rowkey.HourMs:
				bs, err = rollup.Compute(nil, raw[rawKey{string(r.tsuid), r.hour}], iv)
			default:
				b0 := rollup.BucketStart(r.hour, iv)
				var pts []chunk.Point
				for h := b0; h < b0+iv; h += rowkey.HourMs {
					pts = append(pts, raw[rawKey{string(r.tsuid), h}]...)
				}
				bs, err = rollup.Compute(nil, pts, iv)
			}
			if err != nil {
				panic("series: rollup of sorted points: " + err.Error())
			}
			if iv < rowkey.HourMs {
				m, err := rollup.CellMutation(w.layout, r.tsuid, iv, r.hour, bs)
				if err != nil {
					return nil, nil, err
				}
				muts = append(muts, m)
				continue
			}
			if edits == nil {
				edits = make([]dayEdit, 0, len(rows))
				work = make([]dayWork, 0, len(rows))
			}
			dk := dayKey{string(r.tsuid), iv, rollup.RowBase(r.hour)}
			i, ok := at[dk]
			if !ok {
				i = len(work)
				at[dk] = i
				work = append(work, dayWork{key: dk, first: -1})
			}
			b0 := rollup.BucketStart(r.hour, iv)
			work[i].add(edits, len(edits))
			edits = append(edits, dayEdit{from: b0, to: b0 + iv, bs: bs, next: -1})
		}
	}
	if len(work) == 0 {
		return muts, nil, nil
	}
	cached := make([]cachedDay, 0, len(work))
	var miss, slow []int // indexes in work
	w.cache.getAll(work)
	for i := range work {
		d := &work[i]
		if !d.cached {
			miss = append(miss, i)
			slow = append(slow, i)
			continue
		}
		// The hours of a day settling in order: the bucket goes after the
		// cell's last one, without decoding it.
		if d2, ok := appendDay(d.cell, d.key.iv, edits, d.first); ok {
			muts = append(muts, w.dayMutation(&keys, d.key, d2.cell))
			cached = append(cached, cachedDay{d.key, d2})
			continue
		}
		var ok bool
		if d.bs, ok = decodeDay(d.cell.cell, d.key.day); !ok {
			miss = append(miss, i)
		}
		slow = append(slow, i)
	}
	if len(miss) > 0 {
		w.m.dayReads.Add(float64(len(miss)))
		if err := w.readDays(ctx, work, miss); err != nil {
			return nil, nil, err
		}
	}
	for _, i := range slow {
		dk, bs := work[i].key, work[i].bs
		for e := work[i].first; e >= 0; e = edits[e].next {
			bs = rollup.ReplaceBuckets(bs, edits[e].from, edits[e].to, edits[e].bs)
		}
		var d dayCell
		if len(bs) > 0 {
			var err error
			if d.cell, d.end, err = rollup.AppendCellEnd(nil, dk.day, dk.iv, bs); err != nil {
				return nil, nil, err
			}
		}
		muts = append(muts, w.dayMutation(&keys, dk, d.cell))
		cached = append(cached, cachedDay{dk, d})
	}
	return muts, cached, nil
}

// keyArena returns room for the row keys and qualifiers of the day cells
// of rows, which dayMutation cuts from it (the store copies them).
func (w *rollupWriter) keyArena(rows []rollupRow) []byte {
	days := 0
	for _, iv := range w.intervals {
		if iv >= rowkey.HourMs {
			days++
		}
	}
	n := 0
	for _, r := range rows {
		n += 1 + 4 + 4 + len(r.tsuid) + rollup.QualifierLen
	}
	return make([]byte, 0, n*days)
}

// dayMutation writes the day cell of dk, or deletes it when cell is nil;
// its row key and qualifier are appended to *keys.
func (w *rollupWriter) dayMutation(keys *[]byte, dk dayKey, cell []byte) store.Mutation {
	k0 := len(*keys)
	*keys = rollup.AppendRowKey(*keys, w.layout, []byte(dk.tsuid), dk.iv, dk.day)
	k1 := len(*keys)
	*keys = rollup.AppendQualifier(*keys, dk.day, dk.day)
	k := *keys
	return store.Mutation{
		Row:       k[k0:k1:k1],
		Qualifier: k[k1:len(k):len(k)],
		Value:     cell,
		Delete:    cell == nil,
	}
}

// dayWork is one day cell a flush changes: its edits (a list in edits,
// linked by dayEdit.next, in row order), what the cache knows of it, and
// its buckets when it is decoded or read back.
type dayWork struct {
	key         dayKey
	first, last int // the first and last of its edits, -1 for none
	cached      bool
	cell        dayCell
	bs          []rollup.Bucket
}

// add links edit i (edits[i], appended next) after w's last edit.
func (w *dayWork) add(edits []dayEdit, i int) {
	if w.first < 0 {
		w.first = i
	} else {
		edits[w.last].next = i
	}
	w.last = i
}

// dayEdit replaces the buckets in [from, to) of a day cell by bs; next is
// the index of the same cell's next edit, -1 for none.
type dayEdit struct {
	from, to int64
	bs       []rollup.Bucket
	next     int
}

// readDays reads the day cells of work[i] for each i of miss into their
// bs. A cell that does not decode is replaced: it is counted and logged,
// and the buckets of the day's other hours come back as their hours are
// written again.
func (w *rollupWriter) readDays(ctx context.Context, work []dayWork, miss []int) error {
	l := w.layout
	byRow := make(map[string]int, len(miss))
	ranges := make([]store.KeyRange, 0, len(miss))
	for _, i := range miss {
		dk := work[i].key
		work[i].bs = nil
		row := rollup.AppendRowKey(nil, l, []byte(dk.tsuid), dk.iv, dk.day)
		byRow[string(row)] = i
		ranges = append(ranges, store.RowRange(row))
	}
	sort.Slice(ranges, func(i, j int) bool { return string(ranges[i].Start) < string(ranges[j].Start) })
	return w.st.Scan(ctx, store.TableRollup, ranges, func(c store.Cell) bool {
		i, ok := byRow[string(c.Row)]
		if !ok || len(c.Qualifier) != rollup.QualifierLen {
			return true
		}
		q, err := rollup.ParseQualifier(c.Qualifier)
		if err != nil || q.Offset != 0 {
			return true
		}
		bs, err := rollup.DecodeCell(nil, c.Value, work[i].key.day)
		if err != nil {
			w.m.errors.Inc()
			w.log.Warn("rollup: an unreadable day cell is replaced", "row", fmt.Sprintf("%x", c.Row), "err", err)
			bs = nil
		}
		work[i].bs = bs
		return true
	})
}

// DefaultRollupOptions returns the rollups hourglass computes unless told
// otherwise: 1h buckets, kept for ever. One interval only: on 10 s data 1h
// rollups cost 7.4 % of the raw bytes, 10m ones 39.0 %
// (docs/format/rollup.md, "Measurements"), so a shorter default would
// break issue 13's 10 % disk budget.
func DefaultRollupOptions() RollupOptions {
	return RollupOptions{Intervals: []time.Duration{time.Hour}, CacheBytes: 64 << 20}
}

// ParseRollupIntervals parses -rollup.intervals: durations separated by
// commas ("10m,1h"), "" for none.
func ParseRollupIntervals(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := parseDays(f)
		if err != nil {
			return nil, fmt.Errorf("rollup interval %q: %v", f, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseRollupRetention parses -rollup.retention: interval=duration pairs
// separated by commas ("1h=730d,10m=30d"); a duration may be in days (d).
func ParseRollupRetention(s string) (map[time.Duration]time.Duration, error) {
	out := map[time.Duration]time.Duration{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("rollup retention %q: want interval=duration, e.g. 1h=730d", f)
		}
		iv, err := parseDays(k)
		if err != nil {
			return nil, fmt.Errorf("rollup retention %q: interval: %v", f, err)
		}
		r, err := parseDays(v)
		if err != nil {
			return nil, fmt.Errorf("rollup retention %q: duration: %v", f, err)
		}
		out[iv] = r
	}
	return out, nil
}

// parseDays is time.ParseDuration that also takes whole days ("730d").
func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.ParseUint(n, 10, 32)
		if err != nil || d > 100_000 {
			return 0, fmt.Errorf("%q: days must be a whole number up to 100000", s)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
