package pebble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"hourglass/store"
	"hourglass/store/storetest"
)

// testOptions keeps test stores small and quiet.
func testOptions() Options {
	return Options{
		CacheSize:    8 << 20,
		MemTableSize: 4 << 20,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func openTest(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, t.TempDir(), testOptions())
	})
}

func TestContractPersistent(t *testing.T) {
	storetest.RunPersistent(t, func(t *testing.T, dir string) store.Store {
		return openTest(t, dir, testOptions())
	})
}

// TestContractFlushed runs the contract on stores whose data is in SSTables,
// not only in the memtable: every Write is followed by a flush.
func TestContractFlushed(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return flushingStore{openTest(t, t.TempDir(), testOptions())}
	})
}

type flushingStore struct{ *Store }

func (f flushingStore) Write(ctx context.Context, t store.Table, muts []store.Mutation) error {
	if err := f.Store.Write(ctx, t, muts); err != nil {
		return err
	}
	return f.Store.Flush()
}

func TestScanCancelStopsPromptly(t *testing.T) {
	s := openTest(t, t.TempDir(), testOptions())
	var muts []store.Mutation
	for i := 0; i < 10000; i++ {
		muts = append(muts, store.Mutation{Row: []byte(fmt.Sprintf("row%05d", i)), Qualifier: []byte("q"), Value: []byte("v")})
	}
	if err := s.Write(context.Background(), store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	err := s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(store.Cell) bool {
		if n++; n == 10 {
			cancel()
		}
		return true
	})
	if !errors.Is(err, context.Canceled) || n > 10+ctxCheckEvery {
		t.Fatalf("Scan = %v after %d cells; want context.Canceled within %d cells", err, n, 10+ctxCheckEvery)
	}
}

func TestScanRejectsUnsortedRanges(t *testing.T) {
	s := openTest(t, t.TempDir(), testOptions())
	tests := []struct {
		name   string
		ranges []store.KeyRange
		ok     bool
	}{
		{"Sorted", []store.KeyRange{{Start: []byte("a"), End: []byte("b")}, {Start: []byte("b")}}, true},
		{"EmptyOutOfOrder", []store.KeyRange{{Start: []byte("c"), End: []byte("d")}, {Start: []byte("b"), End: []byte("a")}}, true},
		{"Unsorted", []store.KeyRange{{Start: []byte("c"), End: []byte("d")}, {Start: []byte("a"), End: []byte("b")}}, false},
		{"Overlapping", []store.KeyRange{{Start: []byte("a"), End: []byte("c")}, {Start: []byte("b"), End: []byte("d")}}, false},
		{"AfterUnbounded", []store.KeyRange{{Start: []byte("a")}, {Start: []byte("b"), End: []byte("d")}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Scan(context.Background(), store.TableData, tc.ranges, func(store.Cell) bool { return true })
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrRangeOrder)) {
				t.Fatalf("Scan = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	s := openTest(t, t.TempDir(), testOptions())
	ctx := context.Background()
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"WriteEmptyRow", func() error {
			return s.Write(ctx, store.TableData, []store.Mutation{{Row: []byte("r")}, {Row: nil, Qualifier: []byte("q")}})
		}, errEmptyRow},
		{"ReadRowEmptyRow", func() error { _, err := s.ReadRow(ctx, store.TableData, nil); return err }, errEmptyRow},
		{"IncrementEmptyRow", func() error { _, err := s.Increment(ctx, store.TableUID, nil, nil, 1); return err }, errEmptyRow},
		{"PutIfAbsentEmptyRow", func() error { _, _, err := s.PutIfAbsent(ctx, store.TableUID, []byte{}, nil, nil); return err }, errEmptyRow},
		{"Table255", func() error { _, err := s.ReadRow(ctx, 255, []byte("r")); return err }, errReservedTable},
		{"DeleteRangeTable255", func() error { return s.DeleteRange(ctx, 255, store.KeyRange{}) }, errReservedTable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// The rejected Write wrote nothing.
	if cs, err := s.ReadRow(ctx, store.TableData, []byte("r")); err != nil || len(cs) != 0 {
		t.Fatalf("ReadRow after a rejected Write = %v, %v; want nothing", cs, err)
	}
}

func TestAdmin(t *testing.T) {
	s := openTest(t, t.TempDir(), testOptions())
	ctx := context.Background()
	var muts []store.Mutation
	for i := 0; i < 2000; i++ {
		muts = append(muts, store.Mutation{Row: []byte(fmt.Sprintf("row%05d", i)), Qualifier: []byte("q"), Value: make([]byte, 200)})
	}
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	m := s.Metrics()
	if m.TableCount == 0 || m.TableBytes == 0 || m.Flushes == 0 {
		t.Fatalf("after Flush: %+v; want tables and a flush", m)
	}
	if du := s.DiskUsage(); du < m.TableBytes {
		t.Fatalf("DiskUsage = %d < table bytes %d", du, m.TableBytes)
	}
	if err := s.DeleteRange(ctx, store.TableData, store.KeyRange{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if m := s.Metrics(); m.TableBytes != 0 {
		t.Fatalf("after DeleteRange of everything and Compact: %d table bytes, want 0", m.TableBytes)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Flush after Close = %v", err)
	}
	if err := s.Compact(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Compact after Close = %v", err)
	}
	if du := s.DiskUsage(); du != 0 {
		t.Fatalf("DiskUsage after Close = %d", du)
	}
}

func TestOpenBadCompression(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{Compression: 99}); err == nil {
		t.Fatal("Open with compression 99 succeeded")
	}
}

// TestCloseWaits checks that Close waits for an operation under way (here a
// Scan whose callback blocks) and that the operation completes normally,
// while operations started after Close began get store.ErrClosed.
func TestCloseWaits(t *testing.T) {
	s := openTest(t, t.TempDir(), testOptions())
	ctx := context.Background()
	muts := []store.Mutation{{Row: []byte("a"), Value: []byte("1")}, {Row: []byte("b"), Value: []byte("2")}}
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	inScan, release := make(chan struct{}), make(chan struct{})
	scanDone := make(chan error, 1)
	var cells []string
	go func() {
		scanDone <- s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
			if len(cells) == 0 {
				close(inScan)
				<-release
			}
			cells = append(cells, string(c.Row))
			return true
		})
	}()
	<-inScan
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Wait until Close has marked the store closed.
	for {
		if _, err := s.ReadRow(ctx, store.TableData, []byte("a")); errors.Is(err, store.ErrClosed) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a Scan was under way", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-scanDone; err != nil || len(cells) != 2 {
		t.Fatalf("Scan = %v with cells %q; want both cells", err, cells)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}
