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
	m     map[dayKey]dayCell
}

// dayCell is a day cell as written, and its end (rollup.AppendBucket).
type dayCell struct {
	cell []byte // nil: there is none
	end  rollup.CellEnd
}

func newDayCache(max int64) *dayCache {
	return &dayCache{max: max, m: map[dayKey]dayCell{}}
}

// get returns the cell of k and whether it is known (a nil cell: known to
// be absent).
func (c *dayCache) get(k dayKey) (dayCell, bool) {
	if c == nil {
		return dayCell{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

// getAll sets cached and cell of each of work from the cache, under one lock.
func (c *dayCache) getAll(work []dayWork) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range work {
		work[i].cell, work[i].cached = c.m[work[i].key]
	}
}

// putLocked records the cell of k as written; c.mu is held.
func (c *dayCache) putLocked(k dayKey, d dayCell) {
	if old, ok := c.m[k]; ok {
		c.bytes -= int64(len(k.tsuid) + len(old.cell) + 96)
	}
	c.m[k] = d
	c.bytes += int64(len(k.tsuid) + len(d.cell) + 96)
	if c.bytes > c.max {
		// Forget a quarter (map order is random enough to spread it).
		for k2, v := range c.m {
			if c.bytes <= c.max*3/4 {
				break
			}
			delete(c.m, k2)
			c.bytes -= int64(len(k2.tsuid) + len(v.cell) + 96)
		}
	}
}

// putAll records the cells of days as written, under one lock.
func (c *dayCache) putAll(days []cachedDay) {
	if c == nil || c.max <= 0 || len(days) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range days {
		c.putLocked(d.key, d.dayCell)
	}
}

// size returns the bytes the cache holds, as it counts them.
func (c *dayCache) size() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return float64(c.bytes)
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
		c.bytes -= int64(len(k.tsuid) + len(v.cell) + 96)
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
			c.bytes -= int64(len(k.tsuid) + len(v.cell) + 96)
		}
	}
}

// cachedDay is a day cell a write will record once it succeeded.
type cachedDay struct {
	key dayKey
	dayCell
}

// appendDay returns d with the buckets of its edits (the list from
// edits[first]) appended, when every edit comes after the cell's last
// bucket (the hours of a day settling in order); false otherwise.
func appendDay(d dayCell, iv int64, edits []dayEdit, first int) (dayCell, bool) {
	if d.cell == nil {
		return d, false
	}
	for e := first; e >= 0; e = edits[e].next {
		if edits[e].from < d.end.Next {
			return d, false
		}
		for i := range edits[e].bs {
			// Room for the bucket (tens of bytes) and a longer header.
			dst := make([]byte, 0, len(d.cell)+96)
			cell, end, err := rollup.AppendBucket(dst, d.cell, iv, d.end, &edits[e].bs[i])
			if err != nil {
				return d, false
			}
			d = dayCell{cell, end}
		}
	}
	return d, true
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
