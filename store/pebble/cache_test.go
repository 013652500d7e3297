package pebble

import (
	"context"
	"fmt"
	"testing"

	"hourglass/store"
)

// TestBlockCacheUnderIngest: Pebble counts its memtables against the block
// cache. With the cache sized to CacheSize alone, a store whose memtables
// have grown to full size under sustained writes cached no block at all:
// scanning the same SSTable range twice hit the cache zero times. The
// cache now holds CacheSize beside the memtables' share.
func TestBlockCacheUnderIngest(t *testing.T) {
	opts := testOptions()
	opts.CacheSize = 1 << 20
	opts.MemTableSize = 4 << 20
	s := openTest(t, t.TempDir(), opts)
	ctx := context.Background()
	// Deferred writes, as the server's flusher makes them: to the memtable.
	write := func(prefix string, n int) {
		t.Helper()
		for b := 0; b < n; b++ {
			muts := make([]store.Mutation, 0, 1000)
			for i := range 1000 {
				muts = append(muts, store.Mutation{Row: []byte(fmt.Sprintf("%s%04d-%04d", prefix, b, i)), Qualifier: []byte("q"), Value: make([]byte, 200)})
			}
			if err := s.WriteDeferred(ctx, store.TableData, muts); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Enough writes that Pebble's memtables, which start small and double
	// after each flush, reach MemTableSize; then a flushed range to read,
	// and a memtable left filling as on a server under ingest.
	write("a", 200)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	write("b", 15)
	m := s.Metrics()
	if m.MemTableBytes < uint64(opts.MemTableSize) {
		t.Fatalf("memtables hold %d bytes, want at least one of %d (the test's premise)", m.MemTableBytes, opts.MemTableSize)
	}
	scan := func() {
		t.Helper()
		n := 0
		err := s.Scan(ctx, store.TableData, []store.KeyRange{{Start: []byte("a0100"), End: []byte("a0101")}}, func(store.Cell) bool { n++; return true })
		if err != nil || n != 1000 {
			t.Fatalf("scan: %d cells, %v", n, err)
		}
	}
	scan()
	before := s.Metrics().BlockCacheHits
	scan()
	if hits := s.Metrics().BlockCacheHits - before; hits == 0 {
		t.Fatalf("second scan of the same blocks: 0 block cache hits (memtables %d bytes, cache %d bytes in use)", m.MemTableBytes, s.Metrics().BlockCacheBytes)
	}
}
