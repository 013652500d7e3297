package rollup

import (
	"context"
	"fmt"
	"sort"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/store"
)

// CellMutation returns the mutation that stores bs, buckets of the series
// tsuid at the interval (ms) in the computed cell whose base is cellBase
// (CellBase of its buckets), or that deletes the cell when bs is empty.
// Every bucket must lie in the cell's span.
func CellMutation(l rowkey.Layout, tsuid []byte, intervalMs, cellBase int64, bs []Bucket) (store.Mutation, error) {
	span := CellSpan(intervalMs)
	if cellBase%span != 0 {
		return store.Mutation{}, fmt.Errorf("%w: cell base %d ms is not a multiple of %d ms", ErrInvalidBuckets, cellBase, span)
	}
	for i := range bs {
		if bs[i].Start < cellBase || bs[i].Start >= cellBase+span {
			return store.Mutation{}, fmt.Errorf("%w: bucket at %d ms outside the cell at %d ms", ErrInvalidBuckets, bs[i].Start, cellBase)
		}
	}
	day := RowBase(cellBase)
	m := store.Mutation{
		Row:       AppendRowKey(nil, l, tsuid, intervalMs, cellBase),
		Qualifier: AppendQualifier(nil, day, cellBase),
	}
	if len(bs) == 0 {
		m.Delete = true
		return m, nil
	}
	v, err := AppendCell(nil, cellBase, intervalMs, bs)
	if err != nil {
		return store.Mutation{}, err
	}
	m.Value = v
	return m, nil
}

// AppendMutations appends to dst the mutations that store bs, buckets of
// the series tsuid at the interval in increasing Start order, one computed
// cell per cell span they touch. Each cell written replaces the whole cell:
// pass every bucket of it.
func AppendMutations(dst []store.Mutation, l rowkey.Layout, tsuid []byte, intervalMs int64, bs []Bucket) ([]store.Mutation, error) {
	for i := 0; i < len(bs); {
		base := CellBase(bs[i].Start, intervalMs)
		j := i + 1
		for j < len(bs) && bs[j].Start < base+CellSpan(intervalMs) {
			j++
		}
		m, err := CellMutation(l, tsuid, intervalMs, base, bs[i:j])
		if err != nil {
			return dst, err
		}
		dst = append(dst, m)
		i = j
	}
	return dst, nil
}

// DecodeCell appends the buckets of a computed cell whose base is baseMs
// to dst.
func DecodeCell(dst []Bucket, cell []byte, baseMs int64) ([]Bucket, error) {
	var it Iterator
	it.Reset(cell, baseMs)
	for it.Next() {
		dst = append(dst, *it.At())
	}
	return dst, it.Err()
}

// ReplaceBuckets returns bs (sorted by Start) with the buckets whose Start
// is in [from, to) replaced by with (sorted, all in [from, to)). It may
// reuse bs's array.
func ReplaceBuckets(bs []Bucket, from, to int64, with []Bucket) []Bucket {
	lo := sort.Search(len(bs), func(i int) bool { return bs[i].Start >= from })
	hi := sort.Search(len(bs), func(i int) bool { return bs[i].Start >= to })
	out := make([]Bucket, 0, len(bs)-(hi-lo)+len(with))
	out = append(out, bs[:lo]...)
	out = append(out, with...)
	return append(out, bs[hi:]...)
}

// A CellFunc receives one cell of the rollup table that a scan asked for:
// the index of its series in the scan's tsuids, the row's day (ms), its
// parsed qualifier and value (valid during the call). Returning false or
// an error stops the scan; the error is the scan's.
type CellFunc func(i int, day int64, q Qualifier, value []byte) (bool, error)

// maxExactRows bounds the rows a scan names one by one; above it, a scan
// reads each metric's key range in the salt bucket and skips the rows of
// series not asked for, as the data path does (query/scan.go). A variable
// for the tests.
var maxExactRows int64 = 4096

// Scan reads the computed rollups at the interval (ms) of the series
// tsuids (TSUIDs of layout l) and calls fn for every bucket whose Start is
// in [start, end): i is the series' index in tsuids, b valid only during
// the call. Each series' buckets come in increasing Start order; the
// series interleave. One store.Scan runs per salt bucket, one after
// another; to read salt buckets in parallel, call Scan once per bucket's
// series. fn returning false stops the scan without error. A cell that
// does not decode is an error naming its row (errors.Is ErrCorrupt).
func Scan(ctx context.Context, st store.Store, l rowkey.Layout, intervalMs int64, tsuids [][]byte, start, end int64, fn func(i int, b *Bucket) bool) error {
	return ScanWith(ctx, st, l, intervalMs, tsuids, start, end, ScanOptions{}, fn)
}

// ScanDense is Scan for tsuids that are most of their metrics' series (a
// dashboard's tag=*): it reads each metric's key range in each salt bucket
// whole and skips the rows of series not asked for, one seek per range
// instead of one per row named.
func ScanDense(ctx context.Context, st store.Store, l rowkey.Layout, intervalMs int64, tsuids [][]byte, start, end int64, fn func(i int, b *Bucket) bool) error {
	return ScanWith(ctx, st, l, intervalMs, tsuids, start, end, ScanOptions{Dense: true}, fn)
}

// ScanOptions say how ScanWith reads.
type ScanOptions struct {
	Dense  bool   // as ScanDense; otherwise as Scan
	Fields Fields // the fields of the buckets read (Iterator.ResetFields)
}

// ScanWith is Scan or ScanDense reading the fields o.Fields of each bucket.
func ScanWith(ctx context.Context, st store.Store, l rowkey.Layout, intervalMs int64, tsuids [][]byte, start, end int64, o ScanOptions, fn func(i int, b *Bucket) bool) error {
	maxExact := maxExactRows
	if o.Dense {
		maxExact = 0
	}
	var it Iterator
	return scanCells(ctx, st, l, intervalMs, tsuids, start, end, maxExact, func(i int, day int64, q Qualifier, v []byte) (bool, error) {
		if q.Agg != 0 {
			return true, nil
		}
		base := day + q.Offset
		if base+CellSpan(intervalMs) <= start || base >= end {
			return true, nil
		}
		it.ResetFields(v, base, o.Fields)
		if it.Interval() != intervalMs && it.Err() == nil {
			return false, fmt.Errorf("rollup: cell at %d ms holds %d ms buckets in a %d ms row", base, it.Interval(), intervalMs)
		}
		for it.Next() {
			b := it.At()
			if b.Start < start || b.Start >= end {
				continue
			}
			if !fn(i, b) {
				return false, nil
			}
		}
		return it.Err() == nil, it.Err()
	})
}

// ScanExternal reads the points written through /api/rollup at the
// interval with the aggregator for the series tsuids, and calls fn for
// every point whose bucket start t (ms) is in [start, end), as Scan does.
func ScanExternal(ctx context.Context, st store.Store, l rowkey.Layout, intervalMs int64, agg Aggregator, tsuids [][]byte, start, end int64, fn func(i int, t int64, v chunk.Value) bool) error {
	return ScanCells(ctx, st, l, intervalMs, tsuids, start, end, func(i int, day int64, q Qualifier, b []byte) (bool, error) {
		t := day + q.Offset
		if q.Agg != agg || t < start || t >= end {
			return true, nil
		}
		v, err := ParseExternalValue(b)
		if err != nil {
			return false, err
		}
		return fn(i, t, v), nil
	})
}

// ScanCells scans the rollup rows of the series tsuids at the interval
// whose day meets [start, end) and calls fn for each of their cells,
// computed and external, in row and qualifier order.
func ScanCells(ctx context.Context, st store.Store, l rowkey.Layout, intervalMs int64, tsuids [][]byte, start, end int64, fn CellFunc) error {
	return scanCells(ctx, st, l, intervalMs, tsuids, start, end, maxExactRows, fn)
}

func scanCells(ctx context.Context, st store.Store, l rowkey.Layout, intervalMs int64, tsuids [][]byte, start, end, maxExact int64, fn CellFunc) error {
	if err := ValidateInterval(intervalMs); err != nil {
		return err
	}
	if end <= start || len(tsuids) == 0 {
		return nil
	}
	bySalt := map[byte][]int{}
	for i, ts := range tsuids {
		if err := l.CheckTSUID(ts); err != nil {
			return err
		}
		s := l.Salt(ts)
		bySalt[s] = append(bySalt[s], i)
	}
	salts := make([]int, 0, len(bySalt))
	for s := range bySalt {
		salts = append(salts, int(s))
	}
	sort.Ints(salts)
	for _, s := range salts {
		if more, err := scanSalt(ctx, st, l, byte(s), intervalMs, tsuids, bySalt[byte(s)], start, end, maxExact, fn); err != nil || !more {
			return err
		}
	}
	return nil
}

// scanSalt is ScanCells for the series idx, all in salt bucket salt. It
// returns false when fn stopped the scan.
func scanSalt(ctx context.Context, st store.Store, l rowkey.Layout, salt byte, intervalMs int64, tsuids [][]byte, idx []int, start, end, maxExact int64, fn CellFunc) (bool, error) {
	d0, d1 := RowBase(start), RowBase(end-1)
	days := (d1-d0)/RowSpanMs + 1
	byTSUID := make(map[string]int, len(idx))
	metrics := map[string][]int{}
	for _, i := range idx {
		byTSUID[string(tsuids[i])] = i
		m := string(tsuids[i][:l.MetricWidth])
		metrics[m] = append(metrics[m], i)
	}
	var ranges []store.KeyRange
	for m, ids := range metrics {
		if int64(len(ids))*days > maxExact {
			var kr store.KeyRange
			kr.Start, kr.End = MetricRange(l, salt, []byte(m), intervalMs, d0, d1)
			ranges = append(ranges, kr)
			continue
		}
		for d := d0; d <= d1; d += RowSpanMs {
			for _, i := range ids {
				ranges = append(ranges, store.RowRange(AppendRowKey(nil, l, tsuids[i], intervalMs, d)))
			}
		}
	}
	sort.Slice(ranges, func(a, b int) bool { return string(ranges[a].Start) < string(ranges[b].Start) })
	var (
		lastRow []byte
		tsuid   []byte
		cur     = -1
		day     int64
		err     error
		more    = true
	)
	scanErr := st.Scan(ctx, store.TableRollup, ranges, func(c store.Cell) bool {
		if string(c.Row) != string(lastRow) {
			lastRow = append(lastRow[:0], c.Row...)
			k, perr := ParseRowKey(l, tsuid[:0], c.Row)
			tsuid, cur = k.TSUID, -1
			if perr == nil && k.Salt == salt && k.Interval == intervalMs {
				if i, ok := byTSUID[string(tsuid)]; ok {
					cur, day = i, k.Day
				}
			}
		}
		if cur < 0 {
			return true
		}
		q, perr := ParseQualifier(c.Qualifier)
		if perr != nil {
			err = fmt.Errorf("rollup: row %x: %w", c.Row, perr)
			more = false
			return false
		}
		more, err = fn(cur, day, q, c.Value)
		if err != nil {
			err = fmt.Errorf("rollup: row %x qualifier %x: %w", c.Row, c.Qualifier, err)
		}
		return more
	})
	if scanErr != nil {
		return false, scanErr
	}
	return more && err == nil, err
}
