package pebble

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"hourglass/store"
)

// TestCrashDeferred checks store.DeferredWriter on crashes: every deferred
// write that a Sync returned after survives; the deferred writes that
// survive are a prefix of each writer's; and a surviving cell never names
// a counter value (a UID) that the crash took back. Writers Increment a
// counter, then write a cell holding its value with WriteDeferred, and
// Sync now and then; the file system is cloned as a crash would leave it
// at random moments, with memtables small enough that Pebble also flushes
// on its own. Deferred writes of the data table (its own database) and of
// the rollup table (the main one, beside the counter) both.
func TestCrashDeferred(t *testing.T) {
	for _, table := range []store.Table{store.TableData, store.TableRollup} {
		t.Run(table.String(), func(t *testing.T) { crashDeferred(t, table) })
	}
}

func crashDeferred(t *testing.T, table store.Table) {
	fs := vfs.NewCrashableMem()
	opts := testOptions()
	opts.FS = fs
	opts.MemTableSize = 256 << 10
	s := openTest(t, "db", opts)
	if !s.split() {
		t.Fatal("a new store has no WAL-less data database")
	}
	var (
		mu     sync.Mutex
		synced = map[int]int{} // writer → writes a Sync covered
		done   [4]atomic.Int64 // writer → writes returned
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		once   sync.Once
	)
	stopWriters := func() { once.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(stopWriters)
	ctx := context.Background()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n, err := s.Increment(ctx, store.TableUID, []byte("ctr"), []byte("n"), 1)
				if err != nil {
					t.Error(err)
					return
				}
				var muts []store.Mutation
				for j := 0; j < 20; j++ {
					muts = append(muts, store.Mutation{Row: fmt.Appendf(nil, "w%d/%06d", w, i), Qualifier: []byte{byte(j)},
						Value: fmt.Appendf(nil, "%d %s", n, strings.Repeat("x", 100))})
				}
				if err := s.WriteDeferred(ctx, table, muts); err != nil {
					t.Error(err)
					return
				}
				done[w].Store(int64(i + 1))
				// One writer syncs, rarely: several memtables fill and are
				// flushed by Pebble on its own between two Syncs.
				if w == 0 && i%200 == 199 {
					var covered [4]int64
					for k := range covered {
						covered[k] = done[k].Load()
					}
					if err := s.Sync(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for k, n := range covered {
						synced[k] = int(n)
					}
					mu.Unlock()
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 5; round++ {
		time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
		mu.Lock()
		want := map[int]int{}
		for w, n := range synced {
			want[w] = n
		}
		mu.Unlock()
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(100), RNG: rng})
		checkDeferredClone(t, clone, table, round, want)
	}
	stopWriters()
}

func checkDeferredClone(t *testing.T, fs *vfs.MemFS, table store.Table, round int, synced map[int]int) {
	t.Helper()
	opts := testOptions()
	opts.FS = fs
	s, err := Open("db", opts)
	if err != nil {
		t.Fatalf("round %d: open after crash: %v", round, err)
	}
	defer s.Close()
	ctx := context.Background()
	cs, err := s.ReadRow(ctx, store.TableUID, []byte("ctr"))
	if err != nil {
		t.Fatalf("round %d: counter after crash: %v", round, err)
	}
	var counter int64
	if len(cs) == 1 && len(cs[0].Value) == 8 {
		counter = int64(binary.BigEndian.Uint64(cs[0].Value))
	}
	rows := map[int]map[int]int{} // writer → write → cells
	err = s.Scan(ctx, table, []store.KeyRange{{}}, func(c store.Cell) bool {
		var w, i int
		var n int64
		if _, err := fmt.Sscanf(string(c.Row), "w%d/%d", &w, &i); err != nil {
			t.Errorf("round %d: row %q", round, c.Row)
			return false
		}
		if _, err := fmt.Sscanf(string(c.Value), "%d", &n); err != nil || n > counter {
			t.Errorf("round %d: cell %q names counter value %d, the counter survived at %d", round, c.Row, n, counter)
			return false
		}
		if rows[w] == nil {
			rows[w] = map[int]int{}
		}
		rows[w][i]++
		return true
	})
	if err != nil {
		t.Fatalf("round %d: scan after crash: %v", round, err)
	}
	for w := 0; w < 4; w++ {
		got := len(rows[w])
		if got < synced[w] {
			t.Fatalf("round %d: writer %d has %d writes after the crash, a Sync covered %d", round, w, got, synced[w])
		}
		for i := 0; i < got; i++ {
			if rows[w][i] != 20 {
				t.Fatalf("round %d: writer %d: write %d has %d of 20 cells, and %d writes survived: not a prefix", round, w, i, rows[w][i], got)
			}
		}
	}
	t.Logf("round %d: writes synced %v all there; counter %d", round, synced, counter)
}

// TestDataWithoutWAL: the data table's database keeps no log files, Write
// of the data table is durable without one, and a closed store leaves no
// log beyond the main database's few bytes.
func TestDataWithoutWAL(t *testing.T) {
	fs := vfs.NewCrashableMem()
	opts := testOptions()
	opts.FS = fs
	s := openTest(t, "db", opts)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if err := s.WriteDeferred(ctx, store.TableData, []store.Mutation{{Row: fmt.Appendf(nil, "r%03d", i), Qualifier: []byte("q"), Value: make([]byte, 1000)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(ctx, store.TableData, []store.Mutation{{Row: []byte("durable"), Qualifier: []byte("q"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if n := logBytes(t, fs, "db/data"); n != 0 {
		t.Fatalf("the data database has %d bytes of log files", n)
	}
	// A crash now keeps the Write (and the deferred writes before it).
	clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	opts2 := testOptions()
	opts2.FS = clone
	c, err := Open("db", opts2)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := c.ReadRow(ctx, store.TableData, []byte("durable")); err != nil || len(cs) != 1 {
		t.Fatalf("Write of the data table after a crash: %v, %v", cs, err)
	}
	if cs, err := c.ReadRow(ctx, store.TableData, []byte("r049")); err != nil || len(cs) != 1 {
		t.Fatalf("deferred write before a Write, after a crash: %v, %v", cs, err)
	}
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logBytes(t, fs, "db"); n > 4<<10 {
		t.Fatalf("a closed store holds %d bytes of log files", n)
	}
}

// logBytes sums the sizes of the .log files in dir.
func logBytes(t *testing.T, fs vfs.FS, dir string) int64 {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			fi, err := fs.Stat(fs.PathJoin(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

// TestDataSetBeforeSplit: a data set whose data table is in the main
// database (made before the split) keeps it there, reads and writes it,
// and makes no data database.
func TestDataSetBeforeSplit(t *testing.T) {
	fs := vfs.NewMem()
	po, err := testOptions().pebbleOptions(testOptions().Logger)
	if err != nil {
		t.Fatal(err)
	}
	po.FS = fs
	db, err := pebbledb.Open("db", po)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(appendKey(nil, store.TableData, []byte("old"), []byte("q")), []byte("v"), pebbledb.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.FS = fs
	s := openTest(t, "db", opts)
	if s.split() {
		t.Fatal("a data set with data cells in the main database was split")
	}
	ctx := context.Background()
	if err := s.WriteDeferred(ctx, store.TableData, []store.Mutation{{Row: []byte("new"), Qualifier: []byte("q"), Value: []byte("w")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"old", "new"} {
		if cs, err := s.ReadRow(ctx, store.TableData, []byte(row)); err != nil || len(cs) != 1 {
			t.Fatalf("row %s: %v, %v", row, cs, err)
		}
	}
	if _, err := fs.Stat("db/data"); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatal("a data database was made beside the old data table")
	}
}

// TestClosedStoreKeepsNoLog: after writes to the main database (UID,
// index, meta, rollup tables) and a Close, no log file of any size is left:
// Pebble would keep its old logs for recycling, as large as they grew.
func TestClosedStoreKeepsNoLog(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions()
	opts.FS = fs
	opts.MemTableSize = 1 << 20
	s, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 3000; i++ { // ~3 MB through the main WAL, several memtables
		if err := s.Write(ctx, store.TableIndex, []store.Mutation{{Row: fmt.Appendf(nil, "r%05d", i), Qualifier: []byte("q"), Value: make([]byte, 1000)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logBytes(t, fs, "db"); n > 4<<10 {
		t.Fatalf("a closed store holds %d bytes of log files", n)
	}
	if _, err := fs.Stat("db/archive"); err == nil {
		t.Fatal("obsolete files were archived, not deleted")
	}
}

// TestDataFileSizes checks that the data table's database runs with its own
// SSTable sizes (setDataFileSizes) and the main database with Pebble's: the
// OPTIONS file each writes lists a target_file_size per level.
func TestDataFileSizes(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions()
	opts.FS = fs
	s, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sizes := func(dir string) []string {
		t.Helper()
		var out []string
		for _, l := range strings.Split(string(optionsFile(t, fs, dir)), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "target_file_size="); ok {
				out = append(out, v)
			}
		}
		return out
	}
	if got, want := strings.Join(sizes("db/data"), " "), "524288 2097152 4194304 8388608 16777216 33554432 67108864"; got != want {
		t.Errorf("data database's target file sizes %s, want %s", got, want)
	}
	if got, want := strings.Join(sizes("db"), " "), "2097152 4194304 8388608 16777216 33554432 67108864 134217728"; got != want {
		t.Errorf("main database's target file sizes %s, want %s", got, want)
	}
}
