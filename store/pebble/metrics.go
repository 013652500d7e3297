package pebble

import "github.com/prometheus/client_golang/prometheus"

// RegisterMetrics registers on reg the store's memory and LSM figures
// (hourglass_store_*), read from Pebble at each scrape: the block cache,
// the memtables (zombie ones included: flushed but still read by an
// iterator), the file cache and open table iterators, and with glibc the
// trims of malloc's free memory (malloc.go). Pebble allocates the
// block cache's blocks and the memtables outside the Go heap (with cgo: C
// malloc), so these are what RSS holds beyond the Go runtime's figures.
func (s *Store) RegisterMetrics(reg prometheus.Registerer) {
	reg.MustRegister(collector{s})
}

type collector struct{ s *Store }

type storeGauge struct {
	desc  *prometheus.Desc
	value func(m *Metrics) float64
}

var storeGauges = []storeGauge{
	{prometheus.NewDesc("hourglass_store_block_cache_bytes", "Bytes of blocks in Pebble's block cache (allocated outside the Go heap).", nil, nil),
		func(m *Metrics) float64 { return float64(m.BlockCacheBytes) }},
	{prometheus.NewDesc("hourglass_store_block_cache_capacity_bytes", "The block cache's capacity: -store-cache-bytes plus the share of the filling memtable of each database; memtables are counted against it.", nil, nil),
		func(m *Metrics) float64 { return float64(m.BlockCacheCapacity) }},
	{prometheus.NewDesc("hourglass_store_block_cache_blocks", "Blocks in Pebble's block cache.", nil, nil),
		func(m *Metrics) float64 { return float64(m.BlockCacheCount) }},
	{prometheus.NewDesc("hourglass_store_memtable_bytes", "Bytes allocated by Pebble's memtables (allocated outside the Go heap), zombie ones included.", nil, nil),
		func(m *Metrics) float64 { return float64(m.MemTableBytes + m.ZombieMemTableBytes) }},
	{prometheus.NewDesc("hourglass_store_memtables", "Pebble memtables, the filling one included.", nil, nil),
		func(m *Metrics) float64 { return float64(m.MemTables) }},
	{prometheus.NewDesc("hourglass_store_zombie_memtable_bytes", "Bytes of Pebble memtables already flushed but still referenced (by an iterator) or waiting to be recycled.", nil, nil),
		func(m *Metrics) float64 { return float64(m.ZombieMemTableBytes) }},
	{prometheus.NewDesc("hourglass_store_file_cache_bytes", "Bytes of Pebble's file cache (open SSTable readers).", nil, nil),
		func(m *Metrics) float64 { return float64(m.FileCacheBytes) }},
	{prometheus.NewDesc("hourglass_store_table_iterators", "Open SSTable iterators.", nil, nil),
		func(m *Metrics) float64 { return float64(m.TableIters) }},
	{prometheus.NewDesc("hourglass_store_table_bytes", "Bytes in live SSTables.", nil, nil),
		func(m *Metrics) float64 { return float64(m.TableBytes) }},
	{prometheus.NewDesc("hourglass_store_l0_sublevels", "SSTable sublevels in L0 (what stalls writes when it grows).", nil, nil),
		func(m *Metrics) float64 { return float64(m.L0Sublevels) }},
}

var (
	trimsDesc = prometheus.NewDesc("hourglass_store_malloc_trims_total",
		"Times malloc's free pages were returned to the system (malloc_trim) because the process held more than 32 MiB beyond what the Go runtime and Pebble account for (glibc only).", nil, nil)
	missesDesc = prometheus.NewDesc("hourglass_store_block_cache_misses_total",
		"Blocks read from SSTables because the block cache did not hold them (each a C allocation of the block).", nil, nil)
	errorsDesc = prometheus.NewDesc("hourglass_store_errors_total",
		"Errors Pebble reported (background errors of flushes and compactions, corruption, its error log lines), counted whether or not the rate-limited log wrote them.", nil, nil)
	excessDesc = prometheus.NewDesc("hourglass_store_malloc_excess_bytes",
		"At the last check (every 10 s), the process's anonymous resident memory less the Go runtime's and Pebble's cache and memtables: malloc's overhead and free memory, thread stacks (glibc only).", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range storeGauges {
		ch <- g.desc
	}
	ch <- trimsDesc
	ch <- excessDesc
	ch <- missesDesc
	ch <- errorsDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.Metrics()
	for _, g := range storeGauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(&m))
	}
	ch <- prometheus.MustNewConstMetric(missesDesc, prometheus.CounterValue, float64(m.BlockCacheMisses))
	ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(c.s.log.errors.Load()))
	if t := c.s.trimmer; t != nil {
		ch <- prometheus.MustNewConstMetric(trimsDesc, prometheus.CounterValue, float64(t.trims.Load()))
		ch <- prometheus.MustNewConstMetric(excessDesc, prometheus.GaugeValue, float64(t.excess.Load()))
	}
}
