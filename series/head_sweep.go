package series

import (
	"context"
	"time"
)

// sweeper seals chunks whose hour has passed, bounds the WAL, truncates it
// and forgets idle series.
func (h *Head) sweeper() {
	t := time.NewTicker(h.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.sweep()
		}
	}
}

func (h *Head) sweep() {
	now := h.opts.Now().UnixMilli()
	graceMs := h.opts.Grace.Milliseconds()
	h.sealWhere(func(c *openChunk) bool { return h.due(c, now, graceMs) })
	if h.log.Size() > h.opts.WALMaxBytes {
		oldest := h.lowWater()
		h.sealWhere(func(c *openChunk) bool { return c.minSeg <= oldest })
	}
	_ = h.flushHistograms(context.Background(), h.log.Size() > h.opts.WALMaxBytes) // hook: histogram.go; a failure is retried
	if h.persistExemplars(context.Background()) == nil {                           // hook: exemplar_persist.go; the WAL keeps them until stored
		h.truncateWAL()
	}
	h.forgetIdle(now)
}

// lowWater returns the oldest WAL segment that holds a point not yet in the store.
func (h *Head) lowWater() int {
	low := h.log.Segment()
	h.inflightMu.Lock()
	for seg := range h.inflight {
		low = min(low, seg)
	}
	h.inflightMu.Unlock()
	low = h.fl.lowWater(low)
	low = h.hist.lowWater(low) // hook: histogram samples not yet in the store
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, s := range sh.m {
			s.mu.Lock()
			for _, c := range s.open {
				low = min(low, c.minSeg)
			}
			for _, c := range s.pending {
				low = min(low, c.minSeg)
			}
			s.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	return low
}

func (h *Head) truncateWAL() {
	low := h.lowWater()
	// Index entries of series defined in the segments about to go must be
	// in the store first.
	idx := h.fl.takeIndex()
	if len(idx) > 0 {
		if err := h.fl.writeIndex(context.Background(), idx); err != nil {
			h.fl.queueIndex(idx)
			return
		}
	}
	if low <= h.walLow {
		return // nothing below low is left to remove
	}
	// The chunks that held the segments' points were written without a
	// sync when the store allows it: make them durable first.
	if err := h.fl.syncStore(context.Background()); err != nil {
		h.opts.Logger.Warn("syncing the store before truncating the wal", "err", err)
		return
	}
	if err := h.log.Truncate(low); err != nil {
		h.opts.Logger.Warn("truncating the wal", "err", err)
		return
	}
	h.walLow = low
}

// forgetIdle drops series with nothing in the head that were not written for two hours.
func (h *Head) forgetIdle(now int64) {
	idle := int64(2 * time.Hour / time.Millisecond)
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		for l, s := range sh.m {
			s.mu.Lock()
			gone := len(s.open) == 0 && len(s.pending) == 0 && now-s.lastAppend > idle
			s.gone = gone
			s.mu.Unlock()
			if gone {
				delete(sh.m, l)
				h.m.series.Dec()
			}
		}
		sh.mu.Unlock()
	}
}
