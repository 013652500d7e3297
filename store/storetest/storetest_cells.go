package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"hourglass/store"
)

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

// testDeferred: a store.DeferredWriter's deferred writes are read back at
// once from every table, in any read, and Sync succeeds; a store without
// the interface has nothing to check (its writes are all durable).
func testDeferred(t *testing.T, s store.Store) {
	d, ok := s.(store.DeferredWriter)
	if !ok {
		t.Logf("%T has no deferred writes", s)
		return
	}
	ctx := context.Background()
	m := model{}
	for _, table := range store.Tables {
		muts := []store.Mutation{set("r1", "q", "v1"), set("r2", "q", "v2"), del("r1", "q"), set("r1", "q2", "v3")}
		if err := d.WriteDeferred(ctx, table, muts); err != nil {
			t.Fatalf("WriteDeferred %s: %v", table, err)
		}
		m.apply(table, muts)
	}
	checkAll(t, s, m)
	if err := d.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	checkAll(t, s, m)
	if err := d.WriteDeferred(ctx, store.TableData, []store.Mutation{{Qualifier: []byte("q")}}); err == nil {
		t.Error("WriteDeferred took an empty row key")
	}
}
