package pebble

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Pebble allocates its block cache's blocks and its memtables with C
// calloc when built with cgo (its internal/manual), outside the Go heap.
// glibc's malloc gives every thread that calls it an arena of its own, up
// to 8 × cores of them, and every Go thread that runs a cgo call is such
// a thread; what is freed stays in its arena, returned to the system only
// from the top of each arena's heap. Under a soak's churn — blocks read
// into the cache, evicted when compactions replace their tables, read
// again from the new ones, memtables of 256 KiB to 64 MiB allocated and
// freed — malloc kept far more than Pebble held: in a store with the
// server's defaults churned by 6 readers and a writer, RSS outside the Go
// runtime rose to ~690 MB in 4 minutes and stayed there, 320–530 MB of it
// beyond the ~200 MB in Pebble's cache and memtables; a soak reads less
// and climbs slower (run P: +33.89 MB/min outside Go for 10 minutes;
// docs/benchmarks.md, "Run Q").
//
// Three measures bound it: malloc is limited to mallocArenas arenas (the
// main one and one more: Pebble allocates once per cache miss and per
// memtable, rarely enough not to contend); allocations of
// mallocMmapThreshold or more — every block (32 KiB data blocks, 256 KiB
// index blocks) and memtable — are mmap'd, each its own mapping, unmapped
// when freed, so none leaves free memory in an arena; and a loop returns
// malloc's free pages to the system (malloc_trim) whenever the process's
// anonymous memory exceeds what the Go runtime and Pebble account for by
// more than mallocSlack (checked every trimEvery). With the first and the
// last, the same churn held 274–384 MB outside Go, level from its first
// minute; but blocks evicted and read again at the soak's rate refilled
// the trimmed pages within seconds, so malloc's free memory swung by
// 100–150 MB between two trims (run S; docs/benchmarks.md, "Session 8").
// With blocks mmap'd it is nil and no trim is needed; a cache miss costs
// the mapping (about 40 µs more on the loaded 2-core machine). At most
// mallocMmaps mappings are held (1.1 GiB of 32 KiB blocks, under Linux's
// 65,530 mappings a process); past that blocks come from the arenas.
// MALLOC_ARENA_MAX and MALLOC_MMAP_THRESHOLD_ in the environment are left
// to glibc.
const (
	mallocArenas        = 2
	mallocMmapThreshold = 16 << 10
	mallocMmaps         = 1 << 15
	mallocSlack         = 32 << 20
	trimEvery           = 10 * time.Second
)

var mallocOnce sync.Once

// limitMallocArenas applies mallocArenas and mallocMmapThreshold once per
// process, before Pebble allocates (Open calls it), each unless the
// environment set it.
func limitMallocArenas() {
	mallocOnce.Do(func() {
		if !mallocIsGlibc() {
			return
		}
		if _, set := os.LookupEnv("MALLOC_ARENA_MAX"); !set {
			setMallocArenas(mallocArenas)
		}
		if _, set := os.LookupEnv("MALLOC_MMAP_THRESHOLD_"); !set {
			setMmapThreshold(mallocMmapThreshold, mallocMmaps)
		}
	})
}

// trimmer returns malloc's free memory to the system when the process
// holds more than slack beyond what it accounts for.
type trimmer struct {
	slack int64
	// anon is the process's anonymous resident memory, goMapped what the Go
	// runtime holds from the system, counted what Pebble's cache and
	// memtables hold; trim returns malloc's free pages.
	anon, goMapped, counted func() int64
	trim                    func()

	trims atomic.Int64 // trims done
	// excess is anon − goMapped − counted at the last check.
	excess atomic.Int64
}

// check trims when the memory beyond what is accounted for exceeds the
// slack; it reports whether it did.
func (t *trimmer) check() bool {
	a := t.anon()
	if a <= 0 {
		return false // not known: /proc unreadable
	}
	ex := a - t.goMapped() - t.counted()
	t.excess.Store(ex)
	if ex <= t.slack {
		return false
	}
	t.trim()
	t.trims.Add(1)
	return true
}

// run checks every period until stop is closed.
func (t *trimmer) run(every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			t.check()
		}
	}
}

// newTrimmer returns the trimmer of s: the process's memory from /proc, the
// Go runtime's from runtime/metrics, Pebble's from s.
func newTrimmer(s *Store) *trimmer {
	return &trimmer{slack: mallocSlack, anon: procAnon, goMapped: goMapped, trim: trimMalloc,
		counted: func() int64 {
			m := s.Metrics()
			return m.BlockCacheBytes + int64(m.MemTableBytes+m.ZombieMemTableBytes)
		}}
}

var pageSize = int64(os.Getpagesize())

// procAnon returns the process's resident memory not backed by files
// (/proc/self/statm: resident − shared pages), or 0 when unreadable.
func procAnon() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	res, err1 := strconv.ParseInt(f[1], 10, 64)
	shared, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (res - shared) * pageSize
}

// goMapped returns the memory the Go runtime holds from the system: all it
// mapped less the heap pages it released.
func goMapped() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
