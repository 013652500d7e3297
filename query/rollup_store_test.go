package query

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
	"hourglass/store/pebble"
)

// TestStoreRollups reads back, through StoreRollups, buckets and external
// points written to a Pebble store's rollup table, series of several salt
// buckets at once.
func TestStoreRollups(t *testing.T) {
	ctx := context.Background()
	st, err := pebble.Open(filepath.Join(t.TempDir(), "s"), pebble.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := rowkey.DefaultLayout()
	const iv = 3_600_000
	t0 := equivBase
	var entries []*series.Entry
	var muts []store.Mutation
	want := map[string][]rollup.Bucket{}
	for i := range 20 {
		tsuid := []byte{0, 0, 1, 0, 0, 1, 0, 0, 0, byte(i + 1)}
		entries = append(entries, &series.Entry{TSUID: tsuid, Salt: l.Salt(tsuid)})
		var pts []chunk.Point
		for k := range int64(3 * 24 * 6) { // three days, one point every 10 minutes
			pts = append(pts, chunk.Point{T: t0 + k*600_000, V: chunk.Int(int64(i) * k)})
		}
		bs, err := rollup.Compute(nil, pts, iv)
		if err != nil {
			t.Fatal(err)
		}
		want[string(tsuid)] = bs
		if muts, err = rollup.AppendMutations(muts, l, tsuid, iv, bs); err != nil {
			t.Fatal(err)
		}
		day := rollup.RowBase(t0)
		muts = append(muts, store.Mutation{
			Row:       rollup.AppendRowKey(nil, l, tsuid, iv, t0),
			Qualifier: rollup.AppendExternalQualifier(nil, rollup.AggSum, day, t0+iv),
			Value:     rollup.AppendExternalValue(nil, chunk.Float(float64(i)+0.5)),
		})
	}
	if err := st.Write(ctx, store.TableRollup, muts); err != nil {
		t.Fatal(err)
	}
	sr := &StoreRollups{Store: st, Layout: l, Ivs: []int64{iv}}
	var mu sync.Mutex
	got := make([][]rollup.Bucket, len(entries))
	from, to := t0+5*iv, t0+50*iv
	if err := sr.ReadBuckets(ctx, entries, iv, from, to, rollup.FieldsAll, func(i int, b *rollup.Bucket) error {
		mu.Lock()
		got[i] = append(got[i], *b)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, en := range entries {
		w := want[string(en.TSUID)][5:50]
		if len(got[i]) != len(w) {
			t.Fatalf("series %d: %d buckets, want %d", i, len(got[i]), len(w))
		}
		for k := range w {
			if got[i][k].Start != w[k].Start || got[i][k].N() != w[k].N() || !got[i][k].Sum.Identical(w[k].Sum) {
				t.Fatalf("series %d bucket %d: %+v, want %+v", i, k, got[i][k], w[k])
			}
		}
	}
	ext := map[int]float64{}
	if err := sr.ReadExternal(ctx, entries, iv, rollup.AggSum, t0, t0+2*iv, func(i int, tt int64, v chunk.Value) error {
		mu.Lock()
		defer mu.Unlock()
		if tt != t0+iv {
			t.Errorf("series %d: external point at %d", i, tt)
		}
		ext[i] = v.Float()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if ext[i] != float64(i)+0.5 {
			t.Errorf("series %d: external sum %v", i, ext[i])
		}
	}
}
