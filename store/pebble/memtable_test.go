package pebble

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	pebbledb "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"hourglass/store"
)

// optionsFile returns the newest OPTIONS file of the Pebble database in
// dir. A database opened again writes a new one; Pebble deletes the older
// in the background, so both may be there for a while.
func optionsFile(t *testing.T, fs vfs.FS, dir string) []byte {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, n := range names {
		// OPTIONS-NNNNNN: the numbers are zero-padded, so the greatest
		// name is the newest file.
		if strings.HasPrefix(n, "OPTIONS-") && n > newest {
			newest = n
		}
	}
	if newest == "" {
		t.Fatalf("%s: no OPTIONS file", dir)
	}
	f, err := fs.Open(fs.PathJoin(dir, newest))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memTableSize returns the memtable size recorded in the newest OPTIONS
// file of the Pebble database in dir.
func memTableSize(t *testing.T, fs vfs.FS, dir string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*mem_table_size=(\d+)`).FindSubmatch(optionsFile(t, fs, dir))
	if m == nil {
		t.Fatalf("%s: no mem_table_size", dir)
	}
	v, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return v
}

// TestMainMemTableSize: the main database (UID, index, meta, rollup tables)
// gets the small MainMemTableSize, so that its log goes at each small
// flush, and the data table's database MemTableSize; a data set made
// before the split, whose main database holds the data table, keeps
// MemTableSize for it.
func TestMainMemTableSize(t *testing.T) {
	const big, small = 4 << 20, 1 << 20
	opts := testOptions()
	opts.MemTableSize, opts.MainMemTableSize = big, small
	t.Run("split", func(t *testing.T) {
		fs := vfs.NewMem()
		opts := opts
		opts.FS = fs
		s := openTest(t, "db", opts)
		if !s.split() {
			t.Fatal("a new store has no data database")
		}
		if got := memTableSize(t, fs, "db"); got != small {
			t.Errorf("main database memtable %d, want MainMemTableSize %d", got, small)
		}
		if got := memTableSize(t, fs, "db/data"); got != big {
			t.Errorf("data database memtable %d, want MemTableSize %d", got, big)
		}
	})
	t.Run("before split", func(t *testing.T) {
		fs := vfs.NewMem()
		po, err := opts.pebbleOptions(opts.Logger)
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
		opts := opts
		opts.FS = fs
		s := openTest(t, "db", opts)
		if s.split() {
			t.Fatal("a data set with data cells in the main database was split")
		}
		if got := memTableSize(t, fs, "db"); got != big {
			t.Errorf("main database holding the data table: memtable %d, want MemTableSize %d", got, big)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		fs := vfs.NewMem()
		opts := testOptions()
		opts.MemTableSize, opts.FS = 0, fs
		openTest(t, "db", opts)
		d := DefaultOptions()
		if got := memTableSize(t, fs, "db"); got != d.MainMemTableSize {
			t.Errorf("main database memtable %d, want %d", got, d.MainMemTableSize)
		}
		if got := memTableSize(t, fs, "db/data"); got != d.MemTableSize {
			t.Errorf("data database memtable %d, want %d", got, d.MemTableSize)
		}
	})
}
