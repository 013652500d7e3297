package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"hourglass/chunk"
	"hourglass/internal/warnings"
	"hourglass/series"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// minHead is a fakeHead that tells its oldest point (series.DB tells the
// oldest chunk's hour).
type minHead struct{ *fakeHead }

func (h minHead) HeadMinTime() (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m int64
	ok := false
	for _, pts := range h.pts {
		for _, p := range pts {
			if !ok || p.T < m {
				m, ok = p.T, true
			}
		}
	}
	return m, ok
}

// TestSnapshotsSkipPeersPastRange: a query whose range ends before a peer's
// head's oldest point (as its last heartbeat said, and never after the
// hour before it) does not call that peer; a late point older than that
// is asked for once the peer's next heartbeat has been read.
func TestSnapshotsSkipPeersPastRange(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)}
	ns := clusterOf(t, time.Minute, clusterOpts{now: clk.now, local: func(h *fakeHead) Local { return minHead{h} }})
	a, b, c := ns[0], ns[1], ns[2]
	at := func(hh, mm int) int64 { return time.Date(2026, 1, 1, hh, mm, 0, 0, time.UTC).UnixMilli() }
	x := lbl("m", "h", "x")
	b.head.pts[x] = []chunk.Point{{T: at(8, 15), V: chunk.Int(1)}, {T: at(10, 5), V: chunk.Int(2)}}
	c.head.pts[x] = []chunk.Point{{T: at(10, 20), V: chunk.Int(3)}}
	beat := func() {
		t.Helper()
		clk.advance(time.Second)
		for _, n := range []*testNode{b, c, a} {
			if err := n.heartbeat(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.readRegistry(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	beat()
	live, _ := a.Peers()
	for _, p := range live {
		want := map[uint16]int64{2: at(8, 15), 3: at(9, 0)}[p.Writer] // node 3: the hour before 10:30
		if p.HeadMin != want {
			t.Fatalf("node %d's HeadMin %v, want %v", p.Writer, time.UnixMilli(p.HeadMin).UTC(), time.UnixMilli(want).UTC())
		}
	}
	calls := func(result string) float64 { return testutil.ToFloat64(a.m.calls.WithLabelValues("snapshot", result)) }
	for _, q := range []struct {
		what       string
		start, end int64
		points     int
		asked      float64 // peers called
	}{
		{"before both heads", at(6, 0), at(8, 0), 0, 0},
		{"node 2's head only", at(8, 0), at(8, 30), 1, 1},
		{"both heads", at(8, 0), at(10, 30), 3, 2},
		{"ending at node 2's oldest point", at(8, 0), at(8, 15), 1, 1},
	} {
		ok0, skipped0 := calls("ok"), calls("skipped")
		ctx, ws := warnings.With(context.Background())
		got, err := a.Snapshots(ctx, []series.Labels{x}, q.start, q.end, 0)
		if err != nil || len(got[0]) != q.points || len(ws.Messages()) != 0 {
			t.Fatalf("%s: %v %v, warnings %q; want %d points", q.what, got, err, ws.Messages(), q.points)
		}
		if ok, skipped := calls("ok")-ok0, calls("skipped")-skipped0; ok != q.asked || skipped != 2-q.asked {
			t.Fatalf("%s: %v peers called, %v skipped; want %v called", q.what, ok, skipped, q.asked)
		}
	}

	// A late point on node 3, older than its head held: unseen until its
	// next heartbeat is read, then asked for.
	c.head.mu.Lock()
	c.head.pts[x] = append(c.head.pts[x], chunk.Point{T: at(8, 20), V: chunk.Int(4)})
	c.head.mu.Unlock()
	if got, err := a.Snapshots(context.Background(), []series.Labels{x}, at(8, 0), at(8, 30), 0); err != nil || len(got[0]) != 1 {
		t.Fatalf("before node 3's heartbeat: %v %v; want node 2's point alone", got, err)
	}
	beat()
	if got, err := a.Snapshots(context.Background(), []series.Labels{x}, at(8, 0), at(8, 30), 0); err != nil || len(got[0]) != 2 {
		t.Fatalf("after node 3's heartbeat: %v %v; want both points", got, err)
	}
}
