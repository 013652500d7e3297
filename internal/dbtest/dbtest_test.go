package dbtest

import (
	"testing"

	"hourglass/series"
	"hourglass/store"
)

// TestOpenAgain: an Env closes cleanly, mod and wrap are applied, and the
// directory opens again with the same layout.
func TestOpenAgain(t *testing.T) {
	dir := t.TempDir()
	wrapped := false
	e := Open(t, dir, func(o *series.Options) { o.ChunkMaxPoints = 77 }, func(s store.Store) store.Store { wrapped = true; return s })
	if !wrapped || e.Opts.ChunkMaxPoints != 77 || e.Opts.WAL.Dir == "" {
		t.Fatalf("wrap applied %v, options %+v", wrapped, e.Opts)
	}
	layout := e.Layout
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = Open(t, dir, nil, nil)
	defer e.Close()
	if e.Layout != layout || e.Store != e.Pebble {
		t.Fatalf("reopened: layout %+v, want %+v; store %T", e.Layout, layout, e.Store)
	}
}
