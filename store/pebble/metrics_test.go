package pebble

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/store"
)

// TestRegisterMetrics: the store's memory outside the Go heap is on
// /metrics: the cache's capacity is CacheSize plus a memtable for each of
// the two databases, and after a scan of flushed data the block cache
// holds blocks and the memtables their bytes.
func TestRegisterMetrics(t *testing.T) {
	opts := testOptions()
	opts.CacheSize = 1 << 20
	opts.MemTableSize = 4 << 20
	s := openTest(t, t.TempDir(), opts)
	ctx := context.Background()
	muts := make([]store.Mutation, 0, 1000)
	for i := range 1000 {
		muts = append(muts, store.Mutation{Row: []byte(fmt.Sprintf("r%04d", i)), Qualifier: []byte("q"), Value: make([]byte, 200)})
	}
	if err := s.WriteDeferred(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Scan(ctx, store.TableData, []store.KeyRange{{Start: []byte("r"), End: []byte("s")}}, func(store.Cell) bool { return true }); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s.RegisterMetrics(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	extra := 2 // the block cache's misses, the errors
	if s.trimmer != nil {
		extra += 2 // the trims and the excess
	}
	if len(got) != len(storeGauges)+extra {
		t.Fatalf("%d series, want %d: %v", len(got), len(storeGauges), got)
	}
	// Blocks, and the filling memtable of each database (the main one's at most MainMemTableSize).
	wantCap := opts.CacheSize + int64(opts.MemTableSize) + int64(min(opts.MemTableSize, opts.mainMemTableSize()))
	if c := got["hourglass_store_block_cache_capacity_bytes"]; c != float64(wantCap) {
		t.Fatalf("cache capacity %v, want %d", c, wantCap)
	}
	if got["hourglass_store_block_cache_bytes"] <= 0 || got["hourglass_store_block_cache_blocks"] <= 0 || got["hourglass_store_table_bytes"] <= 0 {
		t.Fatalf("after a scan of flushed data: %v", got)
	}
	if got["hourglass_store_memtable_bytes"] < got["hourglass_store_zombie_memtable_bytes"] || got["hourglass_store_memtable_bytes"] <= 0 {
		t.Fatalf("memtables: %v", got)
	}
}
