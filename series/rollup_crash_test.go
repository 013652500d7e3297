package series_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// TestRollupsDeferredCrash: rollup cells are written as the data rows are,
// without a sync (store.DeferredWriter), so a crash can take back the
// newest of both, in any mix. The WAL keeps the points until a Sync made
// them durable; replay writes the rows and their rollups again. After each
// of several flushes (hours written in parts, so day cells are rewritten
// and hours continued), the store is cloned as a crash would leave it (all
// or a random part of what was not synced lost) with the WAL as it was,
// reopened and replayed: every rollup then equals the buckets of the raw
// points, bit for bit. Rounds that lose everything unsynced must have lost
// rollup cells, or the test would prove nothing.
func TestRollupsDeferredCrash(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	walDir := filepath.Join(t.TempDir(), "wal")
	open := func(fs vfs.FS, walDir string) (*pebble.Store, *series.DB, *series.Index, series.Options) {
		t.Helper()
		st, err := pebble.Open("store", pebble.Options{Logger: quiet, FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		layout, err := series.RecordLayout(ctx, st, rowkey.DefaultLayout())
		if err != nil {
			t.Fatal(err)
		}
		opts := series.Options{Layout: layout, Logger: quiet, WAL: wal.Options{Dir: walDir}, SweepInterval: time.Hour}
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
	st, db, _, _ := open(fs, walDir)
	defer func() {
		if err := db.Abandon(); err != nil {
			t.Error(err)
		}
		st.Close()
	}()
	// 4 hosts, a point every 10 s over 5 hours from t0 (a day boundary at
	// t0 + 2h), appended and flushed 25 minutes at a time.
	ss, _ := samplesFor(4, 5*360, 10_000)
	m := model{}
	rng := rand.New(rand.NewPCG(13, 5))
	lostRounds, allLostRounds := 0, 0
	const part = 4 * 150
	for round, i := 0, 0; i < len(ss); round, i = round+1, i+part {
		batch := ss[i:min(i+part, len(ss))]
		errs := make([]error, len(batch))
		if err := db.Append(ctx, batch, errs); err != nil {
			t.Fatal(err)
		}
		for j, err := range errs {
			if err != nil {
				t.Fatalf("sample %d: %v", i+j, err)
			}
			m.put(batch[j])
		}
		if err := db.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// The crash: the WAL as the process left it, the store as the
		// disk did.
		crashWAL := filepath.Join(t.TempDir(), "wal")
		if err := os.CopyFS(crashWAL, os.DirFS(walDir)); err != nil {
			t.Fatal(err)
		}
		pct := 0 // every unsynced byte lost
		if round%2 == 1 {
			pct = rng.IntN(100)
		}
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
		before := rollupTable(t, st)

		cst, cdb, cidx, copts := open(clone, crashWAL)
		if lost := !equalTables(before, rollupTable(t, cst)); lost {
			lostRounds++
			if pct == 0 {
				allLostRounds++
			}
		} else if pct == 0 && round > 0 {
			t.Fatalf("round %d: a crash losing everything unsynced kept every rollup cell: were they synced?", round)
		}
		if err := cdb.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		checkRollups(t, cst, cidx, copts.Layout, m)
		if err := cdb.Close(); err != nil {
			t.Fatal(err)
		}
		cst.Close()
	}
	if allLostRounds == 0 {
		t.Fatal("no crash lost a rollup cell")
	}
	t.Logf("%d crashes lost rollup cells (%d losing all unsynced bytes); after replay every rollup matched the raw points", lostRounds, allLostRounds)
}

// rollupTable returns the rollup table's cells, by key.
func rollupTable(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.Scan(context.Background(), store.TableRollup, []store.KeyRange{{}}, func(c store.Cell) bool {
		out[string(c.Row)+"\x00"+string(c.Qualifier)] = string(c.Value)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalTables(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
