package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"hourglass/store"
)

func b(s string) []byte { return []byte(s) }

func testScanRanges(t *testing.T, s store.Store) {
	m := model{}
	fill(t, s, m, store.TableData, 5)
	tests := []struct {
		name   string
		ranges []store.KeyRange
	}{
		{"All", []store.KeyRange{all}},
		{"None", nil},
		{"NilEnd", []store.KeyRange{{Start: b("ab\x00")}}},
		{"NilStart", []store.KeyRange{{End: b("ab\x00")}}},
		{"StartInclusiveEndExclusive", []store.KeyRange{{Start: b("ab"), End: b("abc")}}},
		{"StartPrefixOfRows", []store.KeyRange{{Start: b("ab\x00"), End: b("ab\x01")}}},
		{"EndPrefixOfRows", []store.KeyRange{{Start: b("a"), End: b("ab\x00")}}},
		{"BoundsNotRows", []store.KeyRange{{Start: b("aa"), End: b("ab\x00\x00\x00")}}},
		{"Row", []store.KeyRange{store.RowRange(b("ab"))}},
		{"RowWithZero", []store.KeyRange{store.RowRange(b("ab\x00"))}},
		{"MissingRow", []store.KeyRange{store.RowRange(b("ab\x02"))}},
		{"Prefix", []store.KeyRange{store.PrefixRange(b("ab"))}},
		{"PrefixZero", []store.KeyRange{store.PrefixRange(b("ab\x00"))}},
		{"PrefixFF", []store.KeyRange{store.PrefixRange(b("\xff"))}},
		{"PrefixFFFF", []store.KeyRange{store.PrefixRange(b("\xff\xff"))}},
		{"PrefixZeroZero", []store.KeyRange{store.PrefixRange(b("\x00"))}},
		{"EmptyStartEqualsEnd", []store.KeyRange{{Start: b("ab"), End: b("ab")}}},
		{"EmptyStartAfterEnd", []store.KeyRange{{Start: b("b"), End: b("a")}}},
		{"EmptyBetweenRows", []store.KeyRange{{Start: b("ab\x00\x02"), End: b("ab\x00\xfe")}}},
		{"Several", []store.KeyRange{
			{Start: b("\x00"), End: b("\x00\x01")},
			store.RowRange(b("a")),
			{Start: b("ab"), End: b("ab")}, // empty, in between
			store.RowRange(b("ab\x00")),
			store.RowRange(b("ab\x00\x00")),
			store.PrefixRange(b("abc")),
			{Start: b("ac"), End: b("b\x00")},
			{Start: b("\xff\x00")},
		}},
		{"AdjacentRanges", []store.KeyRange{
			{Start: b("a"), End: b("ab")},
			{Start: b("ab"), End: b("ab\x00\x01")},
			{Start: b("ab\x00\x01"), End: b("ac")},
		}},
		{"EveryRowOneByOne", func() []store.KeyRange {
			var rs []store.KeyRange
			for _, k := range slices.SortedFunc(slices.Values(keys), bytes.Compare) {
				rs = append(rs, store.RowRange(k))
			}
			return rs
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkCells(t, "Scan", scan(t, s, store.TableData, tc.ranges...), m.cells(store.TableData, tc.ranges...))
		})
	}
}

// randomRanges returns sorted, non-overlapping ranges with bounds drawn from
// the interesting keys and their neighbours, some empty, the last maybe
// unbounded.
func randomRanges(rng *rand.Rand) []store.KeyRange {
	var bounds [][]byte
	for _, k := range keys {
		bounds = append(bounds, k, append(slices.Clone(k), 0), append(slices.Clone(k), 0, 0), store.PrefixEnd(k))
	}
	bounds = slices.DeleteFunc(bounds, func(b []byte) bool { return b == nil })
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	// Pick an increasing sequence of bounds and pair them up.
	n := 2 * (1 + rng.IntN(5))
	idx := rng.Perm(len(bounds))[:n]
	slices.Sort(idx)
	var rs []store.KeyRange
	for i := 0; i < n; i += 2 {
		r := store.KeyRange{Start: bounds[idx[i]], End: bounds[idx[i+1]]}
		if rng.IntN(8) == 0 {
			r.End = r.Start // empty
		}
		rs = append(rs, r)
	}
	if rng.IntN(4) == 0 {
		rs[len(rs)-1].End = nil
	}
	if rng.IntN(4) == 0 {
		rs[0].Start = nil
	}
	return rs
}

func testScanRandomRanges(t *testing.T, s store.Store) {
	m := model{}
	fill(t, s, m, store.TableData, 6)
	rng := rand.New(rand.NewPCG(6, 6))
	for i := 0; i < 300; i++ {
		rs := randomRanges(rng)
		got, want := scan(t, s, store.TableData, rs...), m.cells(store.TableData, rs...)
		if !slices.Equal(got, want) {
			t.Fatalf("Scan(%q): got %d cells:%s\nwant %d cells:%s", rs, len(got), cellsString(got), len(want), cellsString(want))
		}
	}
}

// testScanManyRowRanges scans many exact-row ranges at once, as the query
// engine does, most of them hits, some misses between and beyond rows.
func testScanManyRowRanges(t *testing.T, s store.Store) {
	m := model{}
	var muts []store.Mutation
	for i := 0; i < 2000; i += 2 {
		for q := 0; q < 3; q++ {
			muts = append(muts, set(fmt.Sprintf("row%05d", i), fmt.Sprintf("q%d", q), fmt.Sprint(i, q)))
		}
	}
	write(t, s, store.TableData, muts...)
	m.apply(store.TableData, muts)
	var rs []store.KeyRange
	for i := 0; i < 2100; i++ {
		if i%3 != 1 {
			rs = append(rs, store.RowRange([]byte(fmt.Sprintf("row%05d", i))))
		}
	}
	checkCells(t, "Scan", scan(t, s, store.TableData, rs...), m.cells(store.TableData, rs...))
}

func testScanStop(t *testing.T, s store.Store) {
	m := model{}
	fill(t, s, m, store.TableData, 7)
	want := m.cells(store.TableData, all)
	for _, stop := range []int{1, 2, 7, len(want) - 1, len(want)} {
		var got []cell
		err := s.Scan(context.Background(), store.TableData, []store.KeyRange{{End: b("ab\x00")}, {Start: b("ab\x00")}}, func(c store.Cell) bool {
			got = append(got, cell{string(c.Row), string(c.Qualifier), string(c.Value)})
			return len(got) < stop
		})
		if err != nil {
			t.Fatalf("Scan stopped after %d: %v", stop, err)
		}
		checkCells(t, fmt.Sprintf("Scan stopped after %d", stop), got, want[:stop])
	}
}

func testScanCanceled(t *testing.T, s store.Store) {
	var muts []store.Mutation
	for i := 0; i < 5000; i++ {
		muts = append(muts, set(fmt.Sprintf("row%05d", i), "q", "v"))
	}
	write(t, s, store.TableData, muts...)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Scan(ctx, store.TableData, []store.KeyRange{all}, func(store.Cell) bool { return true })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan with a canceled context = %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	n := 0
	err = s.Scan(ctx, store.TableData, []store.KeyRange{all}, func(store.Cell) bool {
		if n++; n == 10 {
			cancel()
		}
		return true
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan canceled during the scan = %v after %d cells, want context.Canceled", err, n)
	}
}

func testDeleteRange(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		name string
		r    store.KeyRange
	}{
		{"StartInclusiveEndExclusive", store.KeyRange{Start: b("ab"), End: b("abc")}},
		{"RowsExtendingStart", store.KeyRange{Start: b("ab\x00"), End: b("ab\x01")}},
		{"EndIsPrefixOfRows", store.KeyRange{Start: b("a"), End: b("ab\x00")}},
		{"Row", store.RowRange(b("ab\x00"))},
		{"Prefix", store.PrefixRange(b("ab"))},
		{"PrefixFF", store.PrefixRange(b("\xff"))},
		{"NilEnd", store.KeyRange{Start: b("ab\x00\x01")}},
		{"NilStart", store.KeyRange{End: b("ab\x00\x01")}},
		{"All", all},
		{"EmptyStartEqualsEnd", store.KeyRange{Start: b("ab"), End: b("ab")}},
		{"EmptyStartAfterEnd", store.KeyRange{Start: b("b"), End: b("a")}},
		{"NothingThere", store.KeyRange{Start: b("ab\x00\x02"), End: b("ab\x00\xfe")}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each case uses its own table contents: refill after a wipe.
			if err := s.DeleteRange(ctx, store.TableData, all); err != nil {
				t.Fatalf("DeleteRange(all): %v", err)
			}
			m := model{}
			fill(t, s, m, store.TableData, uint64(100+i))
			fill(t, s, m, store.TableIndex, uint64(200+i))
			if err := s.DeleteRange(ctx, store.TableData, tc.r); err != nil {
				t.Fatalf("DeleteRange(%q): %v", tc.r, err)
			}
			m.deleteRange(store.TableData, tc.r)
			checkAll(t, s, m)
			// Rows written again after the delete are there.
			muts := []store.Mutation{set("ab", "new", "1"), set("ab\x00", "new", "2")}
			write(t, s, store.TableData, muts...)
			m.apply(store.TableData, muts)
			checkAll(t, s, m)
		})
	}
}

func testDeleteRangeRandom(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := model{}
	rng := rand.New(rand.NewPCG(8, 8))
	for i := 0; i < 20; i++ {
		fill(t, s, m, store.TableData, uint64(300+i))
		for _, r := range randomRanges(rng) {
			if err := s.DeleteRange(ctx, store.TableData, r); err != nil {
				t.Fatalf("DeleteRange(%q): %v", r, err)
			}
			m.deleteRange(store.TableData, r)
		}
		checkAll(t, s, m)
	}
}
