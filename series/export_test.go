package series

import (
	"context"
	"weak"

	"hourglass/chunk"
	"hourglass/store"
	"hourglass/uid"
)

// OpenDB loads the index of st and opens a DB over it, as internal/app
// does; for the tests of this directory.
func OpenDB(ctx context.Context, st store.Store, uids *uid.Table, opts Options) (*DB, error) {
	idx, err := LoadIndex(ctx, st, opts.Layout)
	if err != nil {
		return nil, err
	}
	return Open(ctx, st, uids, idx, opts)
}

// StaleTailSlots counts, over every series of the head, the slots past the
// length of its open and pending lists that still point at a chunk: a list
// shrunk without clearing them keeps the chunks' points alive.
func (h *Head) StaleTailSlots() (stale, pending int) {
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, s := range sh.m {
			s.mu.Lock()
			for _, c := range s.open[len(s.open):cap(s.open)] {
				if c != nil {
					stale++
				}
			}
			for _, c := range s.pending[len(s.pending):cap(s.pending)] {
				if c != nil {
					stale++
				}
			}
			pending += len(s.pending)
			s.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	return stale, pending
}

// SealAllWeak seals every open chunk, as DB.Flush does, and returns weak
// pointers to the points of each: once written, nothing may keep them.
func (db *DB) SealAllWeak() []weak.Pointer[chunk.Point] {
	var ws []weak.Pointer[chunk.Point]
	db.sealWhere(func(oc *openChunk) bool {
		if len(oc.pts) > 0 {
			ws = append(ws, weak.Make(&oc.pts[:1][0]))
		}
		return true
	})
	return ws
}

// ForgetIdle runs the sweeper's forgetting of idle series as of now (unix ms).
func (h *Head) ForgetIdle(now int64) { h.forgetIdle(now) }

// HintedRef returns the ref of the series the hint holds for h, 0 if none.
func (x *Hint) HintedRef(h *Head, l Labels) uint64 {
	if s := x.series(h, l); s != nil {
		return s.ref
	}
	return 0
}

// SetRawReadGroup sets how many raw rows one group of rollup writes reads
// back, and returns the function that restores it.
func SetRawReadGroup(n int) func() {
	old := rawReadGroup
	rawReadGroup = n
	return func() { rawReadGroup = old }
}

// SetHistFlushHooks sets the hooks of the histogram flush: afterTake runs
// once a flush took a buffer's samples, afterRead once it read the row
// (the histogram write lock held). Set them before the flush runs.
func (db *DB) SetHistFlushHooks(afterTake, afterRead func()) {
	db.Head.hist.hooks.Store(&histHooks{afterTake: afterTake, afterRead: afterRead})
}

// HistCuts counts the delete ranges the histogram buffers hold for the
// flushes writing them (flushHistBuf).
func (db *DB) HistCuts() int {
	hh := &db.Head.hist
	hh.mu.Lock()
	defer hh.mu.Unlock()
	n := 0
	for _, m := range hh.bufs {
		for _, b := range m {
			b.mu.Lock()
			n += len(b.cuts)
			b.mu.Unlock()
		}
	}
	return n
}
