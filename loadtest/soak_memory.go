package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// goMemory is the Go runtime's view of the server's memory, read from its
// /metrics (client_golang's Go collector), in bytes, and the store's
// memory outside the Go heap when the server exports it.
type goMemory struct {
	HeapInuse int64 // go_memstats_heap_inuse_bytes: spans holding objects, live or not yet swept
	NextGC    int64 // go_memstats_next_gc_bytes: the heap size the next collection starts at
	Mapped    int64 // go_memstats_sys_bytes − go_memstats_heap_released_bytes: what the runtime holds from the OS
	// FlushQueue is hourglass_head_flush_queue_chunks: sealed chunks
	// waiting for the flusher, their points still in the heap.
	FlushQueue int64
	// Store is Pebble's memory outside the Go heap (storeMemoryNames);
	// zero when the page has none of it.
	Store storeMemory
}

// storeMemory is what Pebble allocates outside the Go heap (with cgo: C
// malloc), from hourglass_store_*: blocks in the block cache, memtables,
// and the cache's capacity, which both share (memtables are counted
// against it).
type storeMemory struct {
	BlockCache, MemTables, Capacity int64
}

// goMemoryNames are the series readGoMemory takes from the page, all
// required; storeMemoryNames those it takes when all are there.
var (
	goMemoryNames = []string{"go_memstats_heap_inuse_bytes", "go_memstats_next_gc_bytes",
		"go_memstats_sys_bytes", "go_memstats_heap_released_bytes", "hourglass_head_flush_queue_chunks"}
	storeMemoryNames = []string{"hourglass_store_block_cache_bytes", "hourglass_store_memtable_bytes",
		"hourglass_store_block_cache_capacity_bytes"}
)

// readGoMemory reads the Go collector's figures, and the store's when
// there, from a /metrics page (at most 16 MiB of it); ok is false when the
// page lacks any of the Go collector's.
func readGoMemory(ctx context.Context, client *http.Client, url string) (m goMemory, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return m, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return m, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, false
	}
	names := slices.Concat(goMemoryNames, storeMemoryNames)
	v, seen, err := scanGauges(io.LimitReader(resp.Body, 16<<20), names)
	goSeen := 1<<len(goMemoryNames) - 1
	if err != nil || seen&goSeen != goSeen {
		return m, false
	}
	m = goMemory{HeapInuse: int64(v[0]), NextGC: int64(v[1]), Mapped: int64(v[2] - v[3]), FlushQueue: int64(v[4])}
	if seen == 1<<len(names)-1 {
		st := v[len(goMemoryNames):]
		m.Store = storeMemory{BlockCache: int64(st[0]), MemTables: int64(st[1]), Capacity: int64(st[2])}
	}
	return m, true
}

// parseGauges returns the values of the unlabelled series names on a page
// in Prometheus' text format, in their order; ok when all were there.
func parseGauges(r io.Reader, names []string) ([]float64, bool) {
	out, seen, err := scanGauges(r, names)
	if err != nil || seen != 1<<len(names)-1 {
		return nil, false
	}
	return out, true
}

// scanGauges returns the values of the unlabelled series names on a page
// in Prometheus' text format, in their order, and a mask of those found
// (bit i: names[i]); an error for a page it cannot read or a bad value.
func scanGauges(r io.Reader, names []string) ([]float64, int, error) {
	out := make([]float64, len(names))
	seen := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, found := strings.Cut(sc.Text(), " ")
		if !found {
			continue
		}
		for i, n := range names {
			if name == n {
				f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					return nil, 0, fmt.Errorf("%s: %w", n, err)
				}
				out[i] = f
				seen |= 1 << i
			}
		}
	}
	return out, seen, sc.Err()
}

// MemoryParts fits, after the warm-up, the parts of the server's memory
// its RSS samples carry (RSSSample's Go fields): which part grows.
type MemoryParts struct {
	Samples int `json:"samples"`
	// Parts holds each part's fit (median, slope) by memoryPartNames.
	Parts map[string]RSSFit `json:"parts"`
}

// memoryPartNames are the parts, in the order reports list them.
// The last two come from the store's figures, when the samples carry
// them: Pebble's block cache and memtables (their sizes as Pebble counts
// them), and what is outside Go beyond those (malloc's own overhead and
// fragmentation, the binary's pages, thread stacks).
var memoryPartNames = []string{"go_heap_inuse", "go_heap_goal", "go_runtime_mapped", "outside_go", "store_cache_memtables", "outside_go_beyond_store"}

// FitMemoryParts fits each part over the samples at or after warmup that
// carry the Go runtime's figures; nil when none does.
func FitMemoryParts(samples []RSSSample, warmup time.Duration) *MemoryParts {
	parts := make([][]RSSSample, len(memoryPartNames))
	for _, s := range samples {
		if s.Seconds < warmup.Seconds() || s.GoMapped == 0 {
			continue
		}
		for i, b := range []int64{s.GoHeapInuse, s.GoNextGC, s.GoMapped, s.Bytes - s.GoMapped} {
			parts[i] = append(parts[i], RSSSample{Seconds: s.Seconds, Bytes: b})
		}
		if s.StoreCapacity > 0 {
			st := s.StoreBlockCache + s.StoreMemTables
			parts[4] = append(parts[4], RSSSample{Seconds: s.Seconds, Bytes: st})
			parts[5] = append(parts[5], RSSSample{Seconds: s.Seconds, Bytes: s.Bytes - s.GoMapped - st})
		}
	}
	if len(parts[0]) == 0 {
		return nil
	}
	mp := &MemoryParts{Samples: len(parts[0]), Parts: map[string]RSSFit{}}
	for i, n := range memoryPartNames {
		if len(parts[i]) > 0 {
			mp.Parts[n] = FitRSS(parts[i], 0)
		}
	}
	return mp
}

// text is the parts as report lines.
func (mp *MemoryParts) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  memory by part after the warm-up (%d samples; median MB, slope MB/min):", mp.Samples)
	desc := map[string]string{"go_heap_inuse": "Go heap in use", "go_heap_goal": "Go heap goal (next GC)",
		"go_runtime_mapped": "Go runtime from the OS", "outside_go": "outside Go's runtime (RSS − that: cgo allocations, e.g. Pebble's block cache and memtables)",
		"store_cache_memtables": "  of which Pebble's block cache and memtables (hourglass_store_*)", "outside_go_beyond_store": "  of which the rest (malloc's overhead and fragmentation, the binary, stacks)"}
	for _, n := range memoryPartNames {
		f, ok := mp.Parts[n]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n    %s: %.1f MB, %+.2f MB/min", desc[n], f.MedianMB, f.SlopeMBPerMin)
	}
	return b.String() + "\n"
}
