package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/internal/warnings"
	"hourglass/model"
	"hourglass/query"
	"hourglass/series"
	"hourglass/store/pebble"
)

// fakeHead is a node's head: points by series, and the deletes it got.
type fakeHead struct {
	mu      sync.Mutex
	pts     map[series.Labels][]chunk.Point
	deletes []string
}

func (h *fakeHead) Snapshot(l series.Labels, start, end int64, dst []chunk.Point) []chunk.Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.pts[l] {
		if p.T >= start && p.T <= end {
			dst = append(dst, p)
		}
	}
	return dst
}

func (h *fakeHead) Stats() model.Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st model.Stats
	for _, pts := range h.pts {
		st.PointsInHead += len(pts)
	}
	return st
}

func (h *fakeHead) Delete(_ context.Context, ls []series.Labels, start, end int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range ls {
		h.deletes = append(h.deletes, l.String())
		var keep []chunk.Point
		for _, p := range h.pts[l] {
			if p.T < start || p.T > end {
				keep = append(keep, p)
			}
		}
		h.pts[l] = keep
	}
	return nil
}

type testNode struct {
	*Node
	head    *fakeHead
	srv     *httptest.Server
	dropped atomic.Int32
}

// cluster3 starts three nodes on one store, each serving the peer
// protocol on a loopback test server, and lets each read the registry.
func cluster3(t *testing.T, expiry time.Duration) []*testNode {
	return clusterOf(t, expiry, clusterOpts{})
}

// clusterOpts changes clusterOf's nodes: now is their clock (nil: the
// wall clock); local wraps a node's fake head (nil: the head itself).
type clusterOpts struct {
	now   func() time.Time
	local func(*fakeHead) Local
}

// clusterOf is cluster3 with o.
func clusterOf(t *testing.T, expiry time.Duration, o clusterOpts) []*testNode {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var nodes []*testNode
	for w := uint16(1); w <= 3; w++ {
		tn := &testNode{head: &fakeHead{pts: map[series.Labels][]chunk.Point{}}}
		var local Local = tn.head
		if o.local != nil {
			local = o.local(tn.head)
		}
		tn.Node = New(st, local, func() { tn.dropped.Add(1) }, Options{WriterID: w, Heartbeat: time.Hour,
			Expiry: expiry, Timeout: time.Second, MaxReplyPoints: 100, Registerer: prometheus.NewRegistry(), Now: o.now})
		tn.srv = httptest.NewServer(tn.Handler())
		t.Cleanup(tn.srv.Close)
		if err := tn.Start(context.Background(), strings.TrimPrefix(tn.srv.URL, "http://")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tn.Close(context.Background(), false) })
		nodes = append(nodes, tn)
	}
	for _, n := range nodes {
		if err := n.readRegistry(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

func TestSnapshotsMergeAndWarn(t *testing.T) {
	ns := cluster3(t, time.Minute)
	a, b, c := ns[0], ns[1], ns[2]
	x, y := lbl("m", "h", "x"), lbl("m", "h", "y")
	a.head.pts[x] = []chunk.Point{{T: 10, V: chunk.Int(1)}, {T: 30, V: chunk.Int(3)}}
	b.head.pts[x] = []chunk.Point{{T: 20, V: chunk.Int(2)}, {T: 30, V: chunk.Int(3)}}
	c.head.pts[y] = []chunk.Point{{T: 15, V: chunk.Float(1.5)}, {T: 99, V: chunk.Int(9)}}
	ctx, ws := warnings.With(context.Background())
	got, err := a.Snapshots(ctx, []series.Labels{x, y}, 0, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 3 || got[0][0].T != 10 || got[0][1].T != 20 || got[0][2].T != 30 || len(got[1]) != 1 || got[1][0].T != 15 {
		t.Fatalf("merged: %v", got)
	}
	if w := ws.Messages(); len(w) != 0 {
		t.Fatalf("warnings with every peer up: %q", w)
	}

	// A peer that does not answer is named; the others' points come.
	c.srv.Close()
	ctx, ws = warnings.With(context.Background())
	got, err = a.Snapshots(ctx, []series.Labels{x, y}, 0, 50, 0)
	if err != nil || len(got[0]) != 3 || len(got[1]) != 0 {
		t.Fatalf("with node 3 gone: %v %v", got, err)
	}
	if w := ws.Messages(); len(w) != 1 || !strings.Contains(w[0], "node 3 ") || !strings.Contains(w[0], "did not answer") {
		t.Fatalf("warnings: %q", w)
	}

	// A peer holding more than the bound fails the query as a limit.
	for i := range 200 {
		b.head.pts[y] = append(b.head.pts[y], chunk.Point{T: int64(i), V: chunk.Int(0)})
	}
	_, err = a.Snapshots(context.Background(), []series.Labels{y}, 0, 1000, 150)
	var le *query.LimitError
	if !errors.As(err, &le) || le.Limit != 100 {
		t.Fatalf("over the bound: %v, want a LimitError of 100 (-peer.max-reply-points)", err)
	}
}

func TestDownPeerAndQueuedDelete(t *testing.T) {
	// The nodes' clock moves only when the test says: on the wall clock, a
	// pause of the expiry between two steps (a loaded machine, -race) made
	// node 2 count as down too.
	clk := &fakeClock{t: time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)}
	ns := clusterOf(t, 50*time.Millisecond, clusterOpts{now: clk.now})
	a, b, c := ns[0], ns[1], ns[2]
	x := lbl("m", "h", "x")
	b.head.pts[x] = []chunk.Point{{T: 10, V: chunk.Int(1)}, {T: 20, V: chunk.Int(2)}}
	c.head.pts[x] = []chunk.Point{{T: 10, V: chunk.Int(1)}}
	// Node 3 beats once more (counting its head: every headEvery beats),
	// then stops: after the expiry it is down, not asked, named.
	c.beats = 0
	if err := c.heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.readRegistry(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.srv.Close()
	if err := b.heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.advance(60 * time.Millisecond)
	if err := b.heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.readRegistry(context.Background()); err != nil {
		t.Fatal(err)
	}
	live, down := a.Peers()
	if len(live) != 1 || live[0].Writer != 2 || len(down) != 1 || down[0].Writer != 3 {
		t.Fatalf("live %v, down %v", live, down)
	}
	ctx, ws := warnings.With(context.Background())
	if got, err := a.Snapshots(ctx, []series.Labels{x}, 0, 50, 0); err != nil || len(got[0]) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	// Its registration said how many points its head held when it started.
	if w := ws.Messages(); len(w) != 1 || !strings.Contains(w[0], "node 3 ") || !strings.Contains(w[0], "no heartbeat") ||
		!strings.Contains(w[0], "; 1 points at ") {
		t.Fatalf("warnings: %q", w)
	}

	// A delete reaches the live peer and is queued for the down one,
	// which applies it when it starts, once.
	ctx, ws = warnings.With(context.Background())
	if err := a.Delete(ctx, []series.Labels{x}, 0, 15); err != nil {
		t.Fatal(err)
	}
	if len(b.head.deletes) != 1 || len(b.head.pts[x]) != 1 || len(a.head.deletes) != 1 {
		t.Fatalf("node 2 after the delete: %v %v; node 1: %v", b.head.deletes, b.head.pts[x], a.head.deletes)
	}
	if w := ws.Messages(); len(w) != 1 || !strings.Contains(w[0], "queued") {
		t.Fatalf("delete warnings: %q", w)
	}
	if len(c.head.deletes) != 0 {
		t.Fatal("node 3 got the delete while down")
	}
	if n, err := c.ApplyQueuedDeletes(context.Background()); err != nil || n != 1 || len(c.head.pts[x]) != 0 {
		t.Fatalf("node 3 applying its queue: %d %v, points left %v", n, err, c.head.pts[x])
	}
	if n, err := c.ApplyQueuedDeletes(context.Background()); err != nil || n != 0 {
		t.Fatalf("the queue after it was applied: %d %v", n, err)
	}
}

func TestGenerationDropsCaches(t *testing.T) {
	ns := cluster3(t, time.Minute)
	if err := ns[0].BumpGeneration(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if err := n.readRegistry(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := n.dropped.Load(); got != 1 {
			t.Fatalf("node %d dropped its caches %d times, want 1", n.opts.WriterID, got)
		}
	}
	// No new bump: nothing more is dropped.
	if err := ns[1].readRegistry(context.Background()); err != nil || ns[1].dropped.Load() != 1 {
		t.Fatalf("%v %d", err, ns[1].dropped.Load())
	}
}

// TestBearerToken: a node sends -peer.bearer-token-file's token; a peer
// that requires it answers only a node that has it.
func TestBearerToken(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x := lbl("m")
	peerHead := &fakeHead{pts: map[series.Labels][]chunk.Point{x: {{T: 1, V: chunk.Int(1)}}}}
	peer := New(st, peerHead, nil, Options{WriterID: 2, Heartbeat: time.Hour, Registerer: prometheus.NewRegistry()})
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		peer.Handler().ServeHTTP(w, r)
	})
	srv := httptest.NewServer(guarded)
	defer srv.Close()
	if err := peer.Start(context.Background(), strings.TrimPrefix(srv.URL, "http://")); err != nil {
		t.Fatal(err)
	}
	defer peer.Close(context.Background(), false)
	for _, c := range []struct {
		token string
		n     int
	}{{"s3cret", 1}, {"", 0}} {
		n := New(st, &fakeHead{pts: map[series.Labels][]chunk.Point{}}, nil, Options{WriterID: 1, Heartbeat: time.Hour,
			BearerToken: c.token, Registerer: prometheus.NewRegistry()})
		if err := n.readRegistry(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, ws := warnings.With(context.Background())
		got, err := n.Snapshots(ctx, []series.Labels{x}, 0, 10, 0)
		if err != nil || len(got[0]) != c.n {
			t.Fatalf("token %q: %v %v", c.token, got, err)
		}
		if w := ws.Messages(); (c.n == 0) != (len(w) == 1 && strings.Contains(w[0], "401")) {
			t.Fatalf("token %q: warnings %q", c.token, w)
		}
	}
}

// TestCloseDeregisters: a clean close removes the registration, so the
// others stop asking and naming the node; a failed one leaves it.
func TestCloseDeregisters(t *testing.T) {
	ns := cluster3(t, time.Minute)
	if err := ns[2].Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := ns[1].Close(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if err := ns[0].readRegistry(context.Background()); err != nil {
		t.Fatal(err)
	}
	live, down := ns[0].Peers()
	if len(live) != 1 || live[0].Writer != 2 || len(down) != 0 {
		t.Fatalf("after node 3's clean close and node 2's failed one: live %v, down %v", live, down)
	}
}
