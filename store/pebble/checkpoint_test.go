package pebble

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"hourglass/store"
)

// TestCheckpoint: a checkpoint holds every write applied before it and none
// applied after, opens as a store of its own, and refuses a directory that
// exists.
func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, filepath.Join(dir, "live"), testOptions())
	write := func(row string) {
		t.Helper()
		err := s.Write(ctx, store.TableData, []store.Mutation{{Row: []byte(row), Qualifier: []byte("q"), Value: []byte("v-" + row)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		write(fmt.Sprintf("before-%03d", i))
	}
	if err := s.Flush(); err != nil { // some in SSTables, some in the memtable
		t.Fatal(err)
	}
	write("before-memtable")
	cp := filepath.Join(dir, "cp")
	if err := s.Checkpoint(cp); err != nil {
		t.Fatal(err)
	}
	write("after")
	if err := s.Checkpoint(cp); err == nil {
		t.Fatal("a checkpoint into an existing directory succeeded")
	}
	c := openTest(t, cp, testOptions())
	for _, row := range []string{"before-000", "before-099", "before-memtable"} {
		cells, err := c.ReadRow(ctx, store.TableData, []byte(row))
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 1 || string(cells[0].Value) != "v-"+row {
			t.Errorf("row %s in the checkpoint: %v, want one cell v-%s", row, cells, row)
		}
	}
	if cells, err := c.ReadRow(ctx, store.TableData, []byte("after")); err != nil || len(cells) != 0 {
		t.Errorf("row written after the checkpoint is in it: %v, %v", cells, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(filepath.Join(dir, "cp2")); err == nil {
		t.Error("a checkpoint of a closed store succeeded")
	}
}
