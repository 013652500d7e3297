package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// goMemory is the Go runtime's view of the server's memory, read from its
// /metrics (client_golang's Go collector), in bytes.
type goMemory struct {
	HeapInuse int64 // go_memstats_heap_inuse_bytes: spans holding objects, live or not yet swept
	NextGC    int64 // go_memstats_next_gc_bytes: the heap size the next collection starts at
	Mapped    int64 // go_memstats_sys_bytes − go_memstats_heap_released_bytes: what the runtime holds from the OS
	// FlushQueue is hourglass_head_flush_queue_chunks: sealed chunks
	// waiting for the flusher, their points still in the heap.
	FlushQueue int64
}

// goMemoryNames are the series readGoMemory takes from the page.
var goMemoryNames = []string{"go_memstats_heap_inuse_bytes", "go_memstats_next_gc_bytes",
	"go_memstats_sys_bytes", "go_memstats_heap_released_bytes", "hourglass_head_flush_queue_chunks"}

// readGoMemory reads the Go collector's figures from a /metrics page (at
// most 16 MiB of it); ok is false when the page lacks any of them.
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
	v, ok := parseGauges(io.LimitReader(resp.Body, 16<<20), goMemoryNames)
	if !ok {
		return m, false
	}
	return goMemory{HeapInuse: int64(v[0]), NextGC: int64(v[1]), Mapped: int64(v[2] - v[3]), FlushQueue: int64(v[4])}, true
}

// parseGauges returns the values of the unlabelled series names on a page
// in Prometheus' text format, in their order; ok when all were there.
func parseGauges(r io.Reader, names []string) ([]float64, bool) {
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
					return nil, false
				}
				out[i] = f
				seen |= 1 << i
			}
		}
	}
	return out, sc.Err() == nil && seen == 1<<len(names)-1
}

// MemoryParts fits, after the warm-up, the parts of the server's memory
// its RSS samples carry (RSSSample's Go fields): which part grows.
type MemoryParts struct {
	Samples int `json:"samples"`
	// Parts holds each part's fit (median, slope) by memoryPartNames.
	Parts map[string]RSSFit `json:"parts"`
}

// memoryPartNames are the parts, in the order reports list them.
var memoryPartNames = []string{"go_heap_inuse", "go_heap_goal", "go_runtime_mapped", "outside_go"}

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
	}
	if len(parts[0]) == 0 {
		return nil
	}
	mp := &MemoryParts{Samples: len(parts[0]), Parts: map[string]RSSFit{}}
	for i, n := range memoryPartNames {
		mp.Parts[n] = FitRSS(parts[i], 0)
	}
	return mp
}

// text is the parts as report lines.
func (mp *MemoryParts) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  memory by part after the warm-up (%d samples; median MB, slope MB/min):", mp.Samples)
	desc := map[string]string{"go_heap_inuse": "Go heap in use", "go_heap_goal": "Go heap goal (next GC)",
		"go_runtime_mapped": "Go runtime from the OS", "outside_go": "outside Go's runtime (RSS − that: cgo allocations, e.g. Pebble's block cache and memtables)"}
	for _, n := range memoryPartNames {
		f := mp.Parts[n]
		fmt.Fprintf(&b, "\n    %s: %.1f MB, %+.2f MB/min", desc[n], f.MedianMB, f.SlopeMBPerMin)
	}
	return b.String() + "\n"
}
