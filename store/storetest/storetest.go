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
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
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
		{"Deferred", testDeferred},
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
