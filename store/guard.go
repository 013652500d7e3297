package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
)

// Guard is the closed-guard both backends share: it counts the operations
// under way and refuses new ones once Close has begun, so that a backend
// closes its database only after the last of them. The zero value is an
// open guard.
type Guard struct {
	// mu guards closed; inflight counts the operations under way.
	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
}

// Enter registers an operation, or returns ErrClosed. Every Enter that
// returns nil must be paired with Leave.
func (g *Guard) Enter() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return ErrClosed
	}
	g.inflight.Add(1)
	return nil
}

// Leave ends an operation Enter registered.
func (g *Guard) Leave() { g.inflight.Done() }

// Close refuses new operations and waits for those under way; a second
// Close returns ErrClosed at once.
func (g *Guard) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.closed = true
	g.mu.Unlock()
	g.inflight.Wait()
	return nil
}

// Empty reports whether r holds no row key (an unbounded End holds all).
func (r KeyRange) Empty() bool {
	return len(r.End) > 0 && bytes.Compare(r.Start, r.End) >= 0
}

// ErrRangeOrder is wrapped by CheckRanges' error: Scan's ranges must be
// sorted by Start and must not overlap.
var ErrRangeOrder = errors.New("scan ranges not sorted or overlapping")

// CheckRanges checks what Scan requires of its ranges: the non-empty ones
// sorted by Start and not overlapping, only the last unbounded. Its error
// wraps ErrRangeOrder and names the first range out of order.
func CheckRanges(ranges []KeyRange) error {
	var prev *KeyRange
	for i := range ranges {
		r := &ranges[i]
		if r.Empty() {
			continue
		}
		if prev != nil && (len(prev.End) == 0 || bytes.Compare(r.Start, prev.End) < 0) {
			return fmt.Errorf("%w: range %d [%q, %q) after [%q, %q)", ErrRangeOrder, i, r.Start, r.End, prev.Start, prev.End)
		}
		prev = r
	}
	return nil
}
