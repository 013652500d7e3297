package rollup

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/store"
	"hourglass/store/pebble"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := pebble.Open(filepath.Join(t.TempDir(), "store"), pebble.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// seriesPoints returns three days of 10 s points of a counter for series k.
func seriesPoints(k int) []chunk.Point {
	var pts []chunk.Point
	for t := day0; t < day0+3*dayMs; t += 10_000 {
		pts = append(pts, chunk.Point{T: t + int64(k)*1000, V: chunk.Int((t - day0) / 1000 * int64(k+1))})
	}
	return pts
}

func TestWriteAndScan(t *testing.T) {
	ctx := context.Background()
	l := rowkey.DefaultLayout()
	st := openStore(t)
	var tsuids [][]byte
	want := map[int64]map[int][]Bucket{}
	for k := 0; k < 6; k++ {
		ts := testTSUID(l, uint64(1+k%2), 1, uint64(k))
		tsuids = append(tsuids, ts)
		for _, iv := range []int64{600_000, hourMs} {
			bs, err := Compute(nil, seriesPoints(k), iv)
			if err != nil {
				t.Fatal(err)
			}
			muts, err := AppendMutations(nil, l, ts, iv, bs)
			if err != nil {
				t.Fatal(err)
			}
			if iv == hourMs && len(muts) != 3 || iv == 600_000 && len(muts) != 72 {
				t.Fatalf("interval %d: %d cells for three days", iv, len(muts))
			}
			if err := st.Write(ctx, store.TableRollup, muts); err != nil {
				t.Fatal(err)
			}
			if want[iv] == nil {
				want[iv] = map[int][]Bucket{}
			}
			want[iv][k] = bs
		}
	}
	start, end := day0+dayMs-hourMs+600_000, day0+2*dayMs+5*hourMs
	for _, exact := range []int64{4096, 0} {
		maxExactRows = exact
		for _, iv := range []int64{600_000, hourMs} {
			got := map[int][]Bucket{}
			err := Scan(ctx, st, l, iv, tsuids[1:], start, end, func(i int, b *Bucket) bool {
				got[i+1] = append(got[i+1], *b)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			for k := 1; k < 6; k++ {
				var exp []Bucket
				for _, b := range want[iv][k] {
					if b.Start >= start && b.Start < end {
						exp = append(exp, b)
					}
				}
				if len(got[k]) != len(exp) || len(exp) == 0 {
					t.Fatalf("exact rows %d, interval %d, series %d: %d buckets, want %d", exact, iv, k, len(got[k]), len(exp))
				}
				for j := range exp {
					if !identical(&got[k][j], &exp[j]) {
						t.Fatalf("series %d bucket %d: %+v, want %+v", k, j, got[k][j], exp[j])
					}
				}
			}
			if got[0] != nil {
				t.Fatal("a series not asked for was read")
			}
		}
	}
	maxExactRows = 4096
	// Stopping early.
	n := 0
	if err := Scan(ctx, st, l, hourMs, tsuids, day0, day0+3*dayMs, func(int, *Bucket) bool { n++; return n < 5 }); err != nil || n != 5 {
		t.Fatalf("stopped scan: %d buckets, %v", n, err)
	}
	// An empty bucket list deletes the cell.
	m, err := CellMutation(l, tsuids[0], hourMs, day0, nil)
	if err != nil || !m.Delete {
		t.Fatalf("CellMutation(nil) = %+v, %v", m, err)
	}
	if err := st.Write(ctx, store.TableRollup, []store.Mutation{m}); err != nil {
		t.Fatal(err)
	}
	n = 0
	if err := Scan(ctx, st, l, hourMs, tsuids[:1], day0, day0+dayMs, func(int, *Bucket) bool { n++; return true }); err != nil || n != 0 {
		t.Fatalf("deleted cell: %d buckets, %v", n, err)
	}
	// A corrupt cell is an error naming its row.
	bad := store.Mutation{Row: AppendRowKey(nil, l, tsuids[0], hourMs, day0), Qualifier: AppendQualifier(nil, day0, day0), Value: []byte{9}}
	if err := st.Write(ctx, store.TableRollup, []store.Mutation{bad}); err != nil {
		t.Fatal(err)
	}
	err = Scan(ctx, st, l, hourMs, tsuids[:1], day0, day0+dayMs, func(int, *Bucket) bool { return true })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt cell: %v", err)
	}
}

func TestCellMutationRefuses(t *testing.T) {
	l := rowkey.DefaultLayout()
	ts := testTSUID(l, 1)
	if _, err := CellMutation(l, ts, hourMs, day0+hourMs, nil); !errors.Is(err, ErrInvalidBuckets) {
		t.Errorf("a 1h cell at 01:00: %v", err)
	}
	b := Bucket{Start: day0 + hourMs, Count: 1, FirstT: day0 + hourMs, LastT: day0 + hourMs, First: chunk.Int(1), Last: chunk.Int(1), Min: chunk.Int(1), Max: chunk.Int(1), Sum: chunk.Int(1)}
	if _, err := CellMutation(l, ts, 600_000, day0, []Bucket{b}); !errors.Is(err, ErrInvalidBuckets) {
		t.Errorf("a bucket outside its cell: %v", err)
	}
}

func TestReplaceBuckets(t *testing.T) {
	mk := func(starts ...int64) []Bucket {
		var bs []Bucket
		for _, s := range starts {
			bs = append(bs, Bucket{Start: s, Count: 1})
		}
		return bs
	}
	got := ReplaceBuckets(mk(0, 1, 2, 3), 1, 3, mk(1))
	if len(got) != 3 || got[0].Start != 0 || got[1].Start != 1 || got[2].Start != 3 {
		t.Fatalf("%+v", got)
	}
	if got := ReplaceBuckets(nil, 0, 5, mk(2)); len(got) != 1 {
		t.Fatalf("%+v", got)
	}
}

func TestScanExternal(t *testing.T) {
	ctx := context.Background()
	l := rowkey.DefaultLayout()
	st := openStore(t)
	ts := testTSUID(l, 3, 1, 1)
	row := AppendRowKey(nil, l, ts, hourMs, day0)
	muts := []store.Mutation{
		{Row: row, Qualifier: AppendExternalQualifier(nil, AggSum, day0, day0+hourMs), Value: AppendExternalValue(nil, chunk.Int(42))},
		{Row: row, Qualifier: AppendExternalQualifier(nil, AggMax, day0, day0+hourMs), Value: AppendExternalValue(nil, chunk.Float(7.5))},
		{Row: row, Qualifier: AppendExternalQualifier(nil, AggSum, day0, day0+2*hourMs), Value: AppendExternalValue(nil, chunk.Int(-1))},
	}
	if err := st.Write(ctx, store.TableRollup, muts); err != nil {
		t.Fatal(err)
	}
	var got []chunk.Point
	err := ScanExternal(ctx, st, l, hourMs, AggSum, [][]byte{ts}, day0, day0+dayMs, func(i int, at int64, v chunk.Value) bool {
		got = append(got, chunk.Point{T: at, V: v})
		return true
	})
	if err != nil || len(got) != 2 || got[0].T != day0+hourMs || got[0].V.Int() != 42 || got[1].V.Int() != -1 {
		t.Fatalf("sum points %v, %v", got, err)
	}
	// Computed-cell scans skip external points.
	n := 0
	if err := Scan(ctx, st, l, hourMs, [][]byte{ts}, day0, day0+dayMs, func(int, *Bucket) bool { n++; return true }); err != nil || n != 0 {
		t.Fatalf("Scan over external points: %d, %v", n, err)
	}
}
