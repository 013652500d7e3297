package query

import (
	"context"
	"errors"
	"testing"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/rowkey"
	"hourglass/series"
)

// countingHead counts the series a query snapshots.
type countingHead struct {
	Head
	n int
}

func (c *countingHead) Snapshot(l series.Labels, start, end int64, dst []chunk.Point) []chunk.Point {
	c.n++
	return c.Head.Snapshot(l, start, end, dst)
}

// TestHeadLimitStopsCopy: a query over more of the head than
// -query-max-points allows stops copying the head's points within one
// series of the bound, not after copying every series' points.
func TestHeadLimitStopsCopy(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 5)
	spec, _ := downsample.ParseSpec("1h-sum")
	// The head's hours (the store's end at 4 h): every series has more
	// than 10 points there.
	req := Request{Selector: Selector{Metric: "m", Start: env.first + 4*rowkey.HourMs, End: env.last}, Downsample: &spec}
	for _, c := range []struct {
		max       int
		fail      bool
		snapshots int
	}{{10, true, 1}, {1_000_000, false, len(env.entries)}} {
		h := &countingHead{Head: env.head.Head}
		eng := NewEngine(h, env.eng.index, env.st, env.layout, Limits{MaxPoints: c.max})
		_, err := eng.Fetch(ctx, req)
		if c.fail != errors.Is(err, ErrLimit) {
			t.Fatalf("limit %d: %v", c.max, err)
		}
		if h.n != c.snapshots {
			t.Errorf("limit %d: %d series' head points copied, want %d", c.max, h.n, c.snapshots)
		}
	}
}
