// Package dbtest opens the storage engine (series.DB) over a Pebble store
// as internal/app opens it — the key layout recorded, the series index
// loaded, the UID table — for tests: series' own external tests and
// benchmarks, and those of ingest, query and api, which each had a copy
// of these steps.
package dbtest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// Env is an engine over a Pebble store in Dir (Dir/store, its WAL in
// Dir/wal).
type Env struct {
	Dir    string
	Pebble *pebble.Store
	// Store is what the engine and the index use: Pebble, or what wrap
	// made of it.
	Store  store.Store
	Layout rowkey.Layout
	Index  *series.Index
	UIDs   *uid.Table
	DB     *series.DB
	Opts   series.Options // as the engine was opened with
}

// Quiet is the logger of what Open opens.
var Quiet = slog.New(slog.DiscardHandler)

// Open opens the store and the engine in dir and fails t on any error.
// mod, when not nil, changes the engine's options (Layout, Logger and
// WAL.Dir are set); wrap, when not nil, puts a store of the test's between
// Pebble and the engine. The caller closes the Env (Close).
func Open(t testing.TB, dir string, mod func(*series.Options), wrap func(store.Store) store.Store) *Env {
	t.Helper()
	ctx := context.Background()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: Quiet})
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Dir: dir, Pebble: st, Store: st}
	if wrap != nil {
		e.Store = wrap(st)
	}
	if e.Layout, err = series.RecordLayout(ctx, st, rowkey.DefaultLayout()); err != nil {
		t.Fatal(err)
	}
	e.Opts = series.Options{Layout: e.Layout, Logger: Quiet, WAL: wal.Options{Dir: filepath.Join(dir, "wal")}}
	if mod != nil {
		mod(&e.Opts)
	}
	e.UIDs = uid.New(st, e.Layout, uid.Options{})
	if e.Index, err = series.LoadIndex(ctx, e.Store, e.Layout); err != nil {
		t.Fatal(err)
	}
	if e.DB, err = series.Open(ctx, e.Store, e.UIDs, e.Index, e.Opts); err != nil {
		t.Fatal(err)
	}
	return e
}

// Close closes the engine, then the store; the first error is returned.
func (e *Env) Close() error {
	err := e.DB.Close()
	if cerr := e.Pebble.Close(); err == nil {
		err = cerr
	}
	return err
}
