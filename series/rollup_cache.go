package series

import (
	"sync"

	"hourglass/rollup"
)

// dayCache keeps the day cells (intervals of an hour and above) the
// flusher wrote last, encoded, so that the next hour of the day replaces
// its bucket without reading the cell back from the store. It holds at most
// max bytes of cells (RollupOptions.CacheBytes); past that it forgets
// entries, and a forgotten cell is read back. A write that fails forgets
// the cells it would have written; deletes and retention forget what they
// change. Safe for concurrent use (retention runs on its own goroutine).
type dayCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	m     map[dayKey][]byte
}

func newDayCache(max int64) *dayCache {
	return &dayCache{max: max, m: map[dayKey][]byte{}}
}

// get returns the cell of k and whether it is known (a nil cell: known to
// be absent).
func (c *dayCache) get(k dayKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// put records the cell of k as written (nil: deleted).
func (c *dayCache) put(k dayKey, cell []byte) {
	if c == nil || c.max <= 0 {
		return
	}
	size := int64(len(k.tsuid) + len(cell) + 64)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		c.bytes -= int64(len(k.tsuid) + len(old) + 64)
	}
	c.m[k] = cell
	c.bytes += size
	if c.bytes > c.max {
		// Forget a quarter (map order is random enough to spread it).
		for k2, v := range c.m {
			if c.bytes <= c.max*3/4 {
				break
			}
			delete(c.m, k2)
			c.bytes -= int64(len(k2.tsuid) + len(v) + 64)
		}
	}
}

// forget drops what is known of k.
func (c *dayCache) forget(k dayKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[k]; ok {
		delete(c.m, k)
		c.bytes -= int64(len(k.tsuid) + len(v) + 64)
	}
}

// forgetBefore drops the cells of interval iv (ms) whose day is before day.
func (c *dayCache) forgetBefore(iv, day int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.m {
		if k.iv == iv && k.day < day {
			delete(c.m, k)
			c.bytes -= int64(len(k.tsuid) + len(v) + 64)
		}
	}
}

// cachedDay is a day cell a write will record once it succeeded.
type cachedDay struct {
	key  dayKey
	cell []byte // nil: deleted
}

// decodeDay returns the buckets of a cached day cell; false if it does not
// decode (it is then read back).
func decodeDay(cell []byte, day int64) ([]rollup.Bucket, bool) {
	if cell == nil {
		return nil, true
	}
	bs, err := rollup.DecodeCell(nil, cell, day)
	return bs, err == nil
}
