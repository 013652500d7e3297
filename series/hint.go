package series

import "sync/atomic"

// Hint remembers the head series that a caller's points of one series went
// to, so that its next points skip the head's lookup (hashing the labels
// and a map probe under the shard's lock). Remote write keeps one in each
// series its decoder remembers. A nil or empty Hint is no hint; a stale one
// (another head's, or a series the head has since forgotten) is noticed
// and replaced. Safe for concurrent use.
type Hint struct{ p atomic.Pointer[hinted] }

type hinted struct {
	h *Head
	s *memSeries
}

// series returns the hinted series of l in h, nil if there is none.
func (x *Hint) series(h *Head, l Labels) *memSeries {
	if x == nil {
		return nil
	}
	v := x.p.Load()
	if v == nil || v.h != h || v.s.labels != l {
		return nil
	}
	return v.s
}

// remember records s as the series of the hint's points in h.
func (x *Hint) remember(h *Head, s *memSeries) {
	if x != nil {
		if v := x.p.Load(); v == nil || v.h != h || v.s != s {
			x.p.Store(&hinted{h: h, s: s})
		}
	}
}
