package series_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

var rollupIntervals = []time.Duration{10 * time.Minute, time.Hour, 2 * time.Hour}

func withRollups(o *series.Options) {
	o.Rollup = series.RollupOptions{Intervals: rollupIntervals, CacheBytes: 1 << 20}
}

// checkRollups asserts that the rollup table holds, for every series of
// sys.cpu and every interval, exactly the buckets of the points m holds.
func checkRollups(t *testing.T, st store.Store, idx *series.Index, layout rowkey.Layout, m model) {
	t.Helper()
	checkRollupsAt(t, st, idx, layout, m, rollupIntervals)
}

// checkRollupsAt is checkRollups at the intervals ivs.
func checkRollupsAt(t *testing.T, st store.Store, idx *series.Index, layout rowkey.Layout, m model, ivs []time.Duration) {
	t.Helper()
	ctx := context.Background()
	entries := idx.Select("sys.cpu", nil, false, t0-rowkey.HourMs*48, t0+rowkey.HourMs*48)
	if len(entries) == 0 {
		t.Fatal("no series in the index")
	}
	tsuids := make([][]byte, len(entries))
	for i, en := range entries {
		tsuids[i] = en.TSUID
	}
	all := m.points(math64Min, math64Max)
	for _, iv := range ivs {
		ivMs := iv.Milliseconds()
		got := make([][]rollup.Bucket, len(entries))
		err := rollup.Scan(ctx, st, layout, ivMs, tsuids, t0-2*24*rowkey.HourMs, t0+2*24*rowkey.HourMs, func(i int, b *rollup.Bucket) bool {
			got[i] = append(got[i], *b)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, en := range entries {
			want, err := rollup.Compute(nil, all[en.Labels.String()], ivMs)
			if err != nil {
				t.Fatal(err)
			}
			if len(got[i]) != len(want) {
				t.Fatalf("%s at %s: %d buckets, want %d", en.Labels, iv, len(got[i]), len(want))
			}
			for j := range want {
				if !reflect.DeepEqual(got[i][j], want[j]) {
					t.Fatalf("%s at %s bucket %d:\n got %+v\nwant %+v", en.Labels, iv, j, got[i][j], want[j])
				}
			}
		}
	}
}

const (
	math64Min = -1 << 62
	math64Max = 1 << 62
)

// TestRollupsFollowTheRawRows: the rollups agree with the raw points after
// hours settle, after late points (a row written again, one overwritten
// value), and after deletes of part of an hour and of whole hours.
// It runs with the day cell cache large, tiny (forgetting all the time) and
// off, and with the read-back done a row at a time.
func TestRollupsFollowTheRawRows(t *testing.T) {
	for _, cache := range []int64{1 << 20, 600, 0} {
		t.Run(fmt.Sprint("cache=", cache), func(t *testing.T) {
			testRollupsFollowTheRawRows(t, func(o *series.Options) {
				withRollups(o)
				o.Rollup.CacheBytes = cache
			})
		})
	}
	// Raw rows read back one group of rows at a time (each 2h bucket reads
	// two rows, so every row is a group of its own).
	t.Run("group=1", func(t *testing.T) {
		defer series.SetRawReadGroup(1)()
		testRollupsFollowTheRawRows(t, withRollups)
	})
}

func testRollupsFollowTheRawRows(t *testing.T, opts func(*series.Options)) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), opts)
	defer e.close()
	m := model{}
	ss, _ := samplesFor(6, 3*360, 10_000) // three hours across a UTC midnight
	for _, s := range ss {
		m.put(s)
	}
	e.appendInBatches(ss)
	if err := e.head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkRollups(t, e.st, e.index, e.opts.Layout, m)

	// Late points into the first hour: new timestamps and an overwrite.
	late := []series.Sample{
		{Labels: host(1), T: t0 + 5, V: chunk.Float(-3.25)},
		{Labels: host(1), T: t0 + 10_000, V: chunk.Float(99)},
		{Labels: host(2), T: t0 + rowkey.HourMs - 1, V: chunk.Int(7)},
	}
	for _, s := range late {
		m.put(s)
	}
	e.append(late...)
	if err := e.head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkRollups(t, e.st, e.index, e.opts.Layout, m)

	// Part of an hour, then the whole last hour of one series.
	for _, d := range []struct {
		ls         []series.Labels
		start, end int64
	}{
		{[]series.Labels{host(0), host(3)}, t0 + 30*60_000 + 5_000, t0 + 100*60_000},
		{[]series.Labels{host(4)}, t0 + 2*rowkey.HourMs, t0 + 3*rowkey.HourMs - 1},
	} {
		e.delete(d.ls, d.start, d.end)
		m.cut(d.ls, d.start, d.end)
		checkRollups(t, e.st, e.index, e.opts.Layout, m)
	}
}

// failRollups is a store whose writes to the rollup table fail while set:
// the moment between a data row written and its rollups.
type failRollups struct {
	store.Store
	fail atomic.Bool
}

func (s *failRollups) Write(ctx context.Context, t store.Table, muts []store.Mutation) error {
	if t == store.TableRollup && s.fail.Load() {
		return errors.New("injected: rollup write failed")
	}
	return s.Store.Write(ctx, t, muts)
}

func openRollupDB(t *testing.T, dir string) (*failRollups, *series.DB, *series.Index, series.Options) {
	t.Helper()
	ctx := context.Background()
	ps, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st := &failRollups{Store: ps}
	layout, err := series.RecordLayout(ctx, st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	opts := series.Options{Layout: layout, Logger: quiet, WAL: wal.Options{Dir: filepath.Join(dir, "wal")}}
	withRollups(&opts)
	idx, err := series.LoadIndex(ctx, st, layout)
	if err != nil {
		t.Fatal(err)
	}
	db, err := series.Open(ctx, st, uid.New(st, layout, uid.Options{}), idx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st, db, idx, opts
}

// TestRollupsAfterACrash: the process dies after the data rows are written
// but before their rollups are (the rollup writes fail, then kill -9). The
// WAL still holds the points: replay writes the rows again and the rollups
// with them.
func TestRollupsAfterACrash(t *testing.T) {
	dir := t.TempDir()
	st, db, _, _ := openRollupDB(t, dir)
	m := model{}
	ss, _ := samplesFor(4, 2*360, 10_000)
	for _, s := range ss {
		m.put(s)
	}
	st.fail.Store(true)
	for i := 0; i < len(ss); i += 500 {
		errs := make([]error, len(ss[i:min(i+500, len(ss))]))
		if err := db.Append(context.Background(), ss[i:min(i+500, len(ss))], errs); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := db.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded while rollup writes fail")
	}
	cancel()
	// The data rows are in the store, the rollups are not.
	rows := 0
	if err := st.Scan(context.Background(), store.TableData, []store.KeyRange{{Start: []byte{0}}}, func(store.Cell) bool { rows++; return true }); err != nil {
		t.Fatal(err)
	}
	cells := 0
	if err := st.Scan(context.Background(), store.TableRollup, []store.KeyRange{{Start: []byte{0}}}, func(store.Cell) bool { cells++; return true }); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || cells != 0 {
		t.Fatalf("before the crash: %d data cells, %d rollup cells; want some and none", rows, cells)
	}
	if err := db.Abandon(); err != nil {
		t.Fatal(err)
	}
	st.Store.Close()

	st, db, idx, opts := openRollupDB(t, dir)
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkRollups(t, st, idx, opts.Layout, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st.Store.Close()
}

func TestRollupOptionsValidate(t *testing.T) {
	for _, o := range []series.RollupOptions{
		{Intervals: []time.Duration{7 * time.Minute}},
		{Intervals: []time.Duration{time.Hour, time.Hour}},
		{Intervals: []time.Duration{1500 * time.Millisecond}},
		{Intervals: []time.Duration{time.Hour}, Retention: map[time.Duration]time.Duration{10 * time.Minute: time.Hour}},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := (series.RollupOptions{Intervals: rollupIntervals}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestWriteRollups: points written from outside are stored at their
// bucket's start, read back by aggregator, found in the index; an interval
// not rolled up and a point past its rollup retention are refused.
func TestWriteRollups(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(t0 + 10*24*rowkey.HourMs)
	e := openEnv(t, t.TempDir(), func(o *series.Options) {
		o.Now = func() time.Time { return now }
		o.Rollup = series.RollupOptions{Intervals: []time.Duration{time.Hour, 10 * time.Minute},
			Retention: map[time.Duration]time.Duration{10 * time.Minute: 24 * time.Hour}}
	})
	defer e.close()
	l := series.MakeLabels("ext.m", []series.Tag{{Key: "dc", Value: "x"}})
	samples := []series.RollupSample{
		{Labels: l, Interval: time.Hour, Agg: rollup.AggSum, T: t0 + 5, V: chunk.Int(42)},
		{Labels: l, Interval: time.Hour, Agg: rollup.AggMax, T: t0, V: chunk.Float(7.5)},
		{Labels: l, Interval: time.Hour, Agg: rollup.AggSum, T: t0 + rowkey.HourMs, V: chunk.Float(-1.25)},
		{Labels: l, Interval: 2 * time.Hour, Agg: rollup.AggSum, T: t0, V: chunk.Int(1)},
		{Labels: l, Interval: 10 * time.Minute, Agg: rollup.AggSum, T: t0, V: chunk.Int(1)}, // 10 days old, kept 1
	}
	errs := make([]error, len(samples))
	var req series.Request
	if err := e.head.WriteRollups(ctx, samples, errs, &req); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("errors %v", errs)
	}
	if !errors.Is(errs[3], series.ErrNoSuchRollup) || !errors.Is(errs[4], series.ErrOutOfRetention) {
		t.Fatalf("2h: %v; 10m past its retention: %v", errs[3], errs[4])
	}
	entries := e.index.Select("ext.m", nil, false, t0, t0+rowkey.HourMs)
	if len(entries) != 1 {
		t.Fatalf("the index selects %d series", len(entries))
	}
	var got []chunk.Point
	err := rollup.ScanExternal(ctx, e.st, e.opts.Layout, rowkey.HourMs, rollup.AggSum, [][]byte{entries[0].TSUID}, t0, t0+2*rowkey.HourMs,
		func(_ int, at int64, v chunk.Value) bool { got = append(got, chunk.Point{T: at, V: v}); return true })
	if err != nil || len(got) != 2 || got[0].T != t0 || !got[0].V.Identical(chunk.Int(42)) || got[1].T != t0+rowkey.HourMs || !got[1].V.Identical(chunk.Float(-1.25)) {
		t.Fatalf("sum points %v, %v", got, err)
	}
	// A delete of the first hour takes its points away, whatever aggregator.
	e.delete([]series.Labels{l}, t0, t0+rowkey.HourMs-1)
	n := 0
	for _, agg := range rollup.Aggregators {
		if err := rollup.ScanExternal(ctx, e.st, e.opts.Layout, rowkey.HourMs, agg, [][]byte{entries[0].TSUID}, t0, t0+2*rowkey.HourMs,
			func(int, int64, chunk.Value) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("%d external points after the delete, want 1", n)
	}
}
