// Package storetest is the contract test suite of store.Store. Every
// backend runs it (store/pebble on disk, store/bigtable on the emulator), so
// it tests only what the interface promises, never how a backend keeps it.
//
// A backend's test calls Run with a function that opens an empty store:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := pebble.Open(t.TempDir(), pebble.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// and RunPersistent for the tests that close a store and open it again.
package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"hourglass/store"
)

// Run runs the contract tests. open must return a new, empty store each
// time it is called; the suite closes every store it opens (open may
// register more cleanup with t.Cleanup). Closing an already closed store
// must return store.ErrClosed, so open's cleanup may close it again.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"TablesAreSeparate", testTablesAreSeparate},
		{"Order", testOrder},
		{"Overwrite", testOverwrite},
		{"WriteLaterMutationWins", testWriteLaterMutationWins},
		{"WriteEmpty", testWriteEmpty},
		{"WriteDelete", testWriteDelete},
		{"ReadRow", testReadRow},
		{"ReadRowOwned", testReadRowOwned},
		{"ScanRanges", testScanRanges},
		{"ScanRandomRanges", testScanRandomRanges},
		{"ScanManyRowRanges", testScanManyRowRanges},
		{"ScanStop", testScanStop},
		{"ScanCanceled", testScanCanceled},
		{"DeleteRange", testDeleteRange},
		{"DeleteRangeRandom", testDeleteRangeRandom},
		{"Increment", testIncrement},
		{"IncrementConcurrent", testIncrementConcurrent},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentConcurrent", testPutIfAbsentConcurrent},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// RunPersistent runs the tests that close a store and open it again. open
// opens the data set named name, creating it empty the first time; calls
// with the same name open the same data. name is a fresh directory from
// t.TempDir, so an embedded store can keep its files there; another backend
// can take it as a unique name.
func RunPersistent(t *testing.T, open func(t *testing.T, name string) store.Store) {
	t.Run("Reopen", func(t *testing.T) { testReopen(t, open) })
	t.Run("ReopenAfterDeletes", func(t *testing.T) { testReopenAfterDeletes(t, open) })
}

// Interesting keys: prefixes of one another, 0x00 and 0xff bytes at either
// end and in the middle, the escape-like pairs 0x00 0x01 and 0x00 0xff.
var keys = [][]byte{
	[]byte("\x00"),
	[]byte("\x00\x00"),
	[]byte("\x00\x01"),
	[]byte("\x00\xff"),
	[]byte("\x01"),
	[]byte("a"),
	[]byte("ab"),
	[]byte("ab\x00"),
	[]byte("ab\x00\x00"),
	[]byte("ab\x00\x01"),
	[]byte("ab\x00\xff"),
	[]byte("ab\x01"),
	[]byte("ab\xff"),
	[]byte("abc"),
	[]byte("ac"),
	[]byte("b"),
	[]byte("\xfe\xff"),
	[]byte("\xff"),
	[]byte("\xff\x00"),
	[]byte("\xff\xff"),
	[]byte("\xff\xff\xff"),
}

// Interesting qualifiers, the empty one included.
var qualifiers = [][]byte{
	{},
	[]byte("\x00"),
	[]byte("\x00\x00"),
	[]byte("\x00\x01"),
	[]byte("q"),
	[]byte("q\x00"),
	[]byte("q\xff"),
	[]byte("\xff"),
}

// cell is a copied store.Cell that prints well.
type cell struct {
	row, qualifier, value string
}

func (c cell) String() string {
	return fmt.Sprintf("%q/%q=%q", c.row, c.qualifier, c.value)
}

func cellsString(cs []cell) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString("\n\t")
		b.WriteString(c.String())
	}
	return b.String()
}

// model is what the store should hold: table → row → qualifier → value.
type model map[store.Table]map[string]map[string]string

func (m model) apply(t store.Table, muts []store.Mutation) {
	for _, mu := range muts {
		rows := m[t]
		if rows == nil {
			rows = map[string]map[string]string{}
			m[t] = rows
		}
		row := rows[string(mu.Row)]
		if mu.Delete {
			delete(row, string(mu.Qualifier))
			if len(row) == 0 {
				delete(rows, string(mu.Row))
			}
			continue
		}
		if row == nil {
			row = map[string]string{}
			rows[string(mu.Row)] = row
		}
		row[string(mu.Qualifier)] = string(mu.Value)
	}
}

func inRange(row string, r store.KeyRange) bool {
	return row >= string(r.Start) && (r.End == nil || row < string(r.End))
}

func (m model) deleteRange(t store.Table, r store.KeyRange) {
	for row := range m[t] {
		if inRange(row, r) {
			delete(m[t], row)
		}
	}
}

// cells returns the model's cells of the ranges in the order Scan must
// visit them.
func (m model) cells(t store.Table, ranges ...store.KeyRange) []cell {
	var out []cell
	for _, r := range ranges {
		var rows []string
		for row := range m[t] {
			if inRange(row, r) {
				rows = append(rows, row)
			}
		}
		sort.Strings(rows)
		for _, row := range rows {
			var qs []string
			for q := range m[t][row] {
				qs = append(qs, q)
			}
			sort.Strings(qs)
			for _, q := range qs {
				out = append(out, cell{row, q, m[t][row][q]})
			}
		}
	}
	return out
}

var all = store.KeyRange{}

func write(t *testing.T, s store.Store, table store.Table, muts ...store.Mutation) {
	t.Helper()
	if err := s.Write(context.Background(), table, muts); err != nil {
		t.Fatalf("Write(%s, %d mutations): %v", table, len(muts), err)
	}
}

func set(row, qualifier, value string) store.Mutation {
	return store.Mutation{Row: []byte(row), Qualifier: []byte(qualifier), Value: []byte(value)}
}

func del(row, qualifier string) store.Mutation {
	return store.Mutation{Row: []byte(row), Qualifier: []byte(qualifier), Delete: true}
}

func scan(t *testing.T, s store.Store, table store.Table, ranges ...store.KeyRange) []cell {
	t.Helper()
	var out []cell
	err := s.Scan(context.Background(), table, ranges, func(c store.Cell) bool {
		out = append(out, cell{string(c.Row), string(c.Qualifier), string(c.Value)})
		return true
	})
	if err != nil {
		t.Fatalf("Scan(%s, %v): %v", table, ranges, err)
	}
	return out
}

func readRow(t *testing.T, s store.Store, table store.Table, row string) []cell {
	t.Helper()
	cs, err := s.ReadRow(context.Background(), table, []byte(row))
	if err != nil {
		t.Fatalf("ReadRow(%s, %q): %v", table, row, err)
	}
	var out []cell
	for _, c := range cs {
		out = append(out, cell{string(c.Row), string(c.Qualifier), string(c.Value)})
	}
	return out
}

func checkCells(t *testing.T, what string, got, want []cell) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %d cells:%s\nwant %d cells:%s", what, len(got), cellsString(got), len(want), cellsString(want))
	}
}

// checkTable checks that a full scan of every table matches the model.
func checkAll(t *testing.T, s store.Store, m model) {
	t.Helper()
	for _, table := range store.Tables {
		checkCells(t, fmt.Sprintf("scan of table %s", table), scan(t, s, table, all), m.cells(table, all))
	}
}

// fill writes every interesting row × qualifier to table, in a shuffled
// order and several calls, with values naming the cell.
func fill(t *testing.T, s store.Store, m model, table store.Table, seed uint64) {
	t.Helper()
	var muts []store.Mutation
	for i, row := range keys {
		for j, q := range qualifiers {
			if (i+j)%3 == 2 {
				continue // not every row has every qualifier
			}
			v := fmt.Sprintf("%s:%x/%x", table, row, q)
			if (i+j)%7 == 0 {
				v = "" // empty values are values
			}
			muts = append(muts, store.Mutation{Row: row, Qualifier: q, Value: []byte(v)})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	rng.Shuffle(len(muts), func(i, j int) { muts[i], muts[j] = muts[j], muts[i] })
	for len(muts) > 0 {
		n := min(len(muts), 1+rng.IntN(40))
		write(t, s, table, muts[:n]...)
		m.apply(table, muts[:n])
		muts = muts[n:]
	}
}

func testTablesAreSeparate(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := model{}
	for i, table := range store.Tables {
		muts := []store.Mutation{set("row", "q", "in "+table.String()), set(fmt.Sprint("only", i), "q", "x")}
		write(t, s, table, muts...)
		m.apply(table, muts)
	}
	checkAll(t, s, m)
	for _, table := range store.Tables {
		checkCells(t, "ReadRow", readRow(t, s, table, "row"), []cell{{"row", "q", "in " + table.String()}})
	}
	// Counters and put-if-absent are per table too.
	for i, table := range store.Tables {
		n, err := s.Increment(ctx, table, []byte("ctr"), []byte("n"), int64(i+1))
		if err != nil || n != int64(i+1) {
			t.Fatalf("Increment(%s) = %d, %v; want %d", table, n, err, i+1)
		}
		ok, _, err := s.PutIfAbsent(ctx, table, []byte("once"), []byte("q"), []byte(table.String()))
		if err != nil || !ok {
			t.Fatalf("PutIfAbsent(%s) = %v, %v; want written", table, ok, err)
		}
		m.apply(table, []store.Mutation{
			{Row: []byte("ctr"), Qualifier: []byte("n"), Value: binary.BigEndian.AppendUint64(nil, uint64(i+1))},
			set("once", "q", table.String()),
		})
	}
	checkAll(t, s, m)
	// Deleting all of one table leaves the others alone.
	if err := s.DeleteRange(ctx, store.TableUID, all); err != nil {
		t.Fatalf("DeleteRange: %v", err)
	}
	m.deleteRange(store.TableUID, all)
	checkAll(t, s, m)
}

func testOrder(t *testing.T, s store.Store) {
	m := model{}
	fill(t, s, m, store.TableData, 1)
	fill(t, s, m, store.TableIndex, 2)
	checkAll(t, s, m)
	// The model sorts by row, then qualifier, as raw bytes; check that it
	// does, so that the test cannot pass by agreeing with itself.
	got := m.cells(store.TableData, all)
	if !slices.IsSortedFunc(got, func(a, b cell) int {
		if c := bytes.Compare([]byte(a.row), []byte(b.row)); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.qualifier), []byte(b.qualifier))
	}) {
		t.Fatal("model not sorted")
	}
}

func testOverwrite(t *testing.T, s store.Store) {
	write(t, s, store.TableData, set("r", "q", "one"), set("r", "p", "p"))
	write(t, s, store.TableData, set("r", "q", "two"))
	write(t, s, store.TableData, set("r", "q", ""))
	write(t, s, store.TableData, set("r", "q", "three"))
	want := []cell{{"r", "p", "p"}, {"r", "q", "three"}}
	checkCells(t, "ReadRow", readRow(t, s, store.TableData, "r"), want)
	checkCells(t, "Scan", scan(t, s, store.TableData, all), want)
}

func testWriteLaterMutationWins(t *testing.T, s store.Store) {
	write(t, s, store.TableData,
		set("r", "a", "1"), set("r", "a", "2"),
		set("r", "b", "1"), del("r", "b"),
		del("r", "c"), set("r", "c", "3"),
		set("s", "a", "1"), set("r", "d", "4"), set("s", "a", "5"),
	)
	checkCells(t, "Scan", scan(t, s, store.TableData, all), []cell{
		{"r", "a", "2"}, {"r", "c", "3"}, {"r", "d", "4"}, {"s", "a", "5"},
	})
}

func testWriteEmpty(t *testing.T, s store.Store) {
	if err := s.Write(context.Background(), store.TableData, nil); err != nil {
		t.Fatalf("Write(nil): %v", err)
	}
	checkCells(t, "Scan", scan(t, s, store.TableData, all), nil)
}

func testWriteDelete(t *testing.T, s store.Store) {
	m := model{}
	fill(t, s, m, store.TableData, 3)
	var muts []store.Mutation
	for i, row := range keys {
		for j, q := range qualifiers {
			if (i*3+j)%4 == 0 {
				// Some of these cells do not exist: deleting them is no error.
				muts = append(muts, store.Mutation{Row: row, Qualifier: q, Delete: true})
			}
		}
	}
	write(t, s, store.TableData, muts...)
	m.apply(store.TableData, muts)
	checkAll(t, s, m)
	// Deleting every cell of a row removes the row.
	muts = muts[:0]
	for _, q := range qualifiers {
		muts = append(muts, store.Mutation{Row: []byte("ab"), Qualifier: q, Delete: true})
	}
	write(t, s, store.TableData, muts...)
	m.apply(store.TableData, muts)
	checkCells(t, "ReadRow of a deleted row", readRow(t, s, store.TableData, "ab"), nil)
	checkAll(t, s, m)
}

func testReadRow(t *testing.T, s store.Store) {
	m := model{}
	fill(t, s, m, store.TableData, 4)
	for _, row := range keys {
		want := m.cells(store.TableData, store.RowRange(row))
		checkCells(t, fmt.Sprintf("ReadRow(%q)", row), readRow(t, s, store.TableData, string(row)), want)
	}
	for _, row := range []string{"a\x00", "aa", "ab\x00\x00\x00", "abd", "zzz", "\xff\xff\xff\xff", "\x00\x00\x00"} {
		checkCells(t, fmt.Sprintf("ReadRow of missing row %q", row), readRow(t, s, store.TableData, row), nil)
	}
	checkCells(t, "ReadRow in an empty table", readRow(t, s, store.TableMeta, "ab"), nil)
}

func testReadRowOwned(t *testing.T, s store.Store) {
	write(t, s, store.TableData, set("r", "a", "one"), set("r", "b", "two"))
	cs, err := s.ReadRow(context.Background(), store.TableData, []byte("r"))
	if err != nil || len(cs) != 2 {
		t.Fatalf("ReadRow = %d cells, %v", len(cs), err)
	}
	// The caller owns the slices: later writes do not change them, and
	// changing them (appending included) changes nothing else.
	write(t, s, store.TableData, set("r", "a", "ONE"), set("r", "b", "TWO"))
	want := []cell{{"r", "a", "one"}, {"r", "b", "two"}}
	for i, c := range cs {
		got := cell{string(c.Row), string(c.Qualifier), string(c.Value)}
		if got != want[i] {
			t.Fatalf("cell %d changed by a later write: %v, want %v", i, got, want[i])
		}
	}
	_ = append(cs[0].Row, 'X')
	_ = append(cs[0].Qualifier, 'X')
	_ = append(cs[0].Value, 'X')
	cs[0].Value[0] = 'Z'
	got := cell{string(cs[1].Row), string(cs[1].Qualifier), string(cs[1].Value)}
	if got != want[1] {
		t.Fatalf("cell 1 changed by appending to cell 0: %v", got)
	}
	checkCells(t, "ReadRow", readRow(t, s, store.TableData, "r"), []cell{{"r", "a", "ONE"}, {"r", "b", "TWO"}})
}

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

func be(n int64) string { return string(binary.BigEndian.AppendUint64(nil, uint64(n))) }

func testIncrement(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		row, qualifier string
		delta, want    int64
	}{
		{"ctr", "a", 1, 1}, // a missing cell counts from 0
		{"ctr", "a", 41, 42},
		{"ctr", "a", -50, -8},
		{"ctr", "a", 0, -8},
		{"ctr", "b", -3, -3}, // cells count separately
		{"ctr", "", 7, 7},    // the empty qualifier is a qualifier
		{"ctr\x00", "a", 5, 5},
		{"ctr", "a", 9, 1},
	}
	for _, tc := range tests {
		got, err := s.Increment(ctx, store.TableUID, []byte(tc.row), []byte(tc.qualifier), tc.delta)
		if err != nil || got != tc.want {
			t.Fatalf("Increment(%q, %q, %d) = %d, %v; want %d", tc.row, tc.qualifier, tc.delta, got, err, tc.want)
		}
	}
	// The value is a big-endian int64 cell, like any other.
	checkCells(t, "ReadRow", readRow(t, s, store.TableUID, "ctr"), []cell{
		{"ctr", "", be(7)}, {"ctr", "a", be(1)}, {"ctr", "b", be(-3)},
	})
	// A counter written by Write counts on.
	write(t, s, store.TableUID, set("ctr", "w", be(1000)))
	if got, err := s.Increment(ctx, store.TableUID, b("ctr"), b("w"), 1); err != nil || got != 1001 {
		t.Fatalf("Increment of a written counter = %d, %v; want 1001", got, err)
	}
	// A cell that is not 8 bytes is not a counter.
	write(t, s, store.TableUID, set("ctr", "x", "abc"))
	if got, err := s.Increment(ctx, store.TableUID, b("ctr"), b("x"), 1); err == nil {
		t.Fatalf("Increment of a 3-byte cell = %d, nil; want an error", got)
	}
	checkCells(t, "cell after a failed Increment", readRow(t, s, store.TableUID, "ctr")[3:], []cell{
		{"ctr", "w", be(1001)}, {"ctr", "x", "abc"},
	})
}

const goroutines = 16

func testIncrementConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const per = 50
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		seen  = map[int64]int{}
		start = make(chan struct{})
	)
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < per; i++ {
				n, err := s.Increment(ctx, store.TableUID, b("ctr"), b("n"), 1)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen[n]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Increment: %v", err)
	}
	// Every increment returned a different value: 1 to goroutines×per.
	for n := int64(1); n <= goroutines*per; n++ {
		if seen[n] != 1 {
			t.Fatalf("value %d returned %d times, want once", n, seen[n])
		}
	}
	checkCells(t, "ReadRow", readRow(t, s, store.TableUID, "ctr"), []cell{{"ctr", "n", be(goroutines * per)}})
}

func testPutIfAbsent(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		row, qualifier, value string
		wantWritten           bool
		wantExisting          string
	}{
		{"name", "id", "first", true, ""},
		{"name", "id", "second", false, "first"},
		{"name", "id", "", false, "first"},
		{"name", "", "empty qualifier", true, ""},
		{"name\x00", "id", "", true, ""}, // an empty value is a value
		{"name\x00", "id", "x", false, ""},
		{"name", "id\x00", "other", true, ""},
	}
	for _, tc := range tests {
		written, existing, err := s.PutIfAbsent(ctx, store.TableUID, []byte(tc.row), []byte(tc.qualifier), []byte(tc.value))
		if err != nil || written != tc.wantWritten || (!written && string(existing) != tc.wantExisting) {
			t.Fatalf("PutIfAbsent(%q, %q, %q) = %v, %q, %v; want %v, %q", tc.row, tc.qualifier, tc.value, written, existing, err, tc.wantWritten, tc.wantExisting)
		}
	}
	checkCells(t, "Scan", scan(t, s, store.TableUID, all), []cell{
		{"name", "", "empty qualifier"}, {"name", "id", "first"}, {"name", "id\x00", "other"}, {"name\x00", "id", ""},
	})
	// A cell deleted is absent again.
	write(t, s, store.TableUID, del("name", "id"))
	if written, _, err := s.PutIfAbsent(ctx, store.TableUID, b("name"), b("id"), b("third")); err != nil || !written {
		t.Fatalf("PutIfAbsent after delete = %v, %v; want written", written, err)
	}
	checkCells(t, "ReadRow", readRow(t, s, store.TableUID, "name")[1:2], []cell{{"name", "id", "third"}})
}

func testPutIfAbsentConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	type result struct {
		written  bool
		existing string
		value    string
		err      error
	}
	for round := 0; round < 5; round++ {
		row := []byte(fmt.Sprint("race", round))
		results := make(chan result, goroutines)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := fmt.Sprint("writer", g)
				<-start
				written, existing, err := s.PutIfAbsent(ctx, store.TableUID, row, b("id"), []byte(v))
				results <- result{written, string(existing), v, err}
			}()
		}
		close(start)
		wg.Wait()
		close(results)
		winner := ""
		var losers []string
		for r := range results {
			switch {
			case r.err != nil:
				t.Fatalf("PutIfAbsent: %v", r.err)
			case r.written && winner != "":
				t.Fatalf("two writers won: %q and %q", winner, r.value)
			case r.written:
				winner = r.value
			default:
				losers = append(losers, r.existing)
			}
		}
		if winner == "" {
			t.Fatal("no writer won")
		}
		for _, l := range losers {
			if l != winner {
				t.Fatalf("a loser saw %q, the winner wrote %q", l, winner)
			}
		}
		checkCells(t, "ReadRow", readRow(t, s, store.TableUID, string(row)), []cell{{string(row), "id", winner}})
	}
}

func testClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	write(t, s, store.TableData, set("r", "q", "v"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ops := map[string]func() error{
		"Write": func() error { return s.Write(ctx, store.TableData, []store.Mutation{set("r", "q", "w")}) },
		"Scan": func() error {
			return s.Scan(ctx, store.TableData, []store.KeyRange{all}, func(store.Cell) bool { return true })
		},
		"ReadRow": func() error { _, err := s.ReadRow(ctx, store.TableData, b("r")); return err },
		"Increment": func() error {
			_, err := s.Increment(ctx, store.TableData, b("r"), b("n"), 1)
			return err
		},
		"PutIfAbsent": func() error {
			_, _, err := s.PutIfAbsent(ctx, store.TableData, b("r"), b("p"), b("v"))
			return err
		},
		"DeleteRange": func() error { return s.DeleteRange(ctx, store.TableData, all) },
		"Close":       s.Close,
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want store.ErrClosed", name, err)
		}
	}
}

func testReopen(t *testing.T, open func(t *testing.T, name string) store.Store) {
	ctx := context.Background()
	name := t.TempDir()
	s := open(t, name)
	m := model{}
	fill(t, s, m, store.TableData, 9)
	fill(t, s, m, store.TableMeta, 10)
	for i := 0; i < 3; i++ {
		if _, err := s.Increment(ctx, store.TableUID, b("ctr"), b("metric"), 1); err != nil {
			t.Fatalf("Increment: %v", err)
		}
	}
	if _, _, err := s.PutIfAbsent(ctx, store.TableUID, b("name"), b("id"), b("\x00\x00\x01")); err != nil {
		t.Fatalf("PutIfAbsent: %v", err)
	}
	m.apply(store.TableUID, []store.Mutation{set("ctr", "metric", be(3)), set("name", "id", "\x00\x00\x01")})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, name)
	checkAll(t, s, m)
	// Counters count on and put-if-absent remembers.
	if n, err := s.Increment(ctx, store.TableUID, b("ctr"), b("metric"), 1); err != nil || n != 4 {
		t.Fatalf("Increment after reopen = %d, %v; want 4", n, err)
	}
	if written, existing, err := s.PutIfAbsent(ctx, store.TableUID, b("name"), b("id"), b("other")); err != nil || written || string(existing) != "\x00\x00\x01" {
		t.Fatalf("PutIfAbsent after reopen = %v, %q, %v; want not written, existing %q", written, existing, err, "\x00\x00\x01")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func testReopenAfterDeletes(t *testing.T, open func(t *testing.T, name string) store.Store) {
	ctx := context.Background()
	name := t.TempDir()
	s := open(t, name)
	m := model{}
	fill(t, s, m, store.TableData, 11)
	r := store.KeyRange{Start: b("ab"), End: b("b")}
	if err := s.DeleteRange(ctx, store.TableData, r); err != nil {
		t.Fatalf("DeleteRange: %v", err)
	}
	m.deleteRange(store.TableData, r)
	muts := []store.Mutation{del("\x00", ""), del("\xff", "q"), set("ab\x00", "after", "delete")}
	write(t, s, store.TableData, muts...)
	m.apply(store.TableData, muts)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = open(t, name)
	defer s.Close()
	checkAll(t, s, m)
}
