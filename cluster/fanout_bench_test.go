package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/internal/warnings"
	"hourglass/series"
	"hourglass/store/pebble"
)

// fanoutNodes starts three nodes on one store, the last two holding, for
// each of n series, 60 points (10 minutes of a 10 s series) from t0 on;
// wrap (nil: none) makes a node's Local of its fake head. It returns the
// first node, its registry read, and the series.
func fanoutNodes(b *testing.B, n int, t0 int64, wrap func(*fakeHead) Local) (*Node, []series.Labels) {
	st, err := pebble.Open(b.TempDir(), pebble.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ls := make([]series.Labels, n)
	for i := range ls {
		ls[i] = lbl("cpu.user", "host", fmt.Sprintf("h%05d", i), "dc", "dc1")
	}
	var nodes []*Node
	for w := uint16(1); w <= 3; w++ {
		h := &fakeHead{pts: map[series.Labels][]chunk.Point{}}
		if w > 1 {
			for i, l := range ls {
				for k := range 60 {
					h.pts[l] = append(h.pts[l], chunk.Point{T: t0 + int64(k)*10_000, V: chunk.Float(float64(i+k) / 7)})
				}
			}
		}
		var local Local = h
		if wrap != nil {
			local = wrap(h)
		}
		node := New(st, local, nil, Options{WriterID: w, Heartbeat: time.Hour, Registerer: prometheus.NewRegistry()})
		srv := httptest.NewServer(node.Handler())
		b.Cleanup(srv.Close)
		if err := node.Start(context.Background(), strings.TrimPrefix(srv.URL, "http://")); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { node.Close(context.Background(), false) })
		nodes = append(nodes, node)
	}
	a := nodes[0]
	if err := a.readRegistry(context.Background()); err != nil {
		b.Fatal(err)
	}
	if live, down := a.Peers(); len(live) != 2 {
		b.Fatalf("live %v down %v", live, down)
	}
	return a, ls
}

// runFanout runs b.N queries of ls over [start, end] on a, each returning
// want points for the last series, and reports the process' CPU time per
// query as cpu-ns/op.
func runFanout(b *testing.B, a *Node, ls []series.Labels, start, end int64, want int) {
	cpu0 := cputime.Used()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, ws := warnings.With(context.Background())
		out, err := a.Snapshots(ctx, ls, start, end, 0)
		if err != nil || len(out[len(ls)-1]) != want {
			b.Fatalf("%v %d %q", err, len(out[len(ls)-1]), ws.Messages())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkFanout prices the design issue 14 took: a query on one node asks
// two peers (loopback HTTP, in this process) for their heads' points of
// its series. Each peer holds, for every series, 60 points (10 minutes of
// a 10 s series); the query reads the last 10 minutes of 1, 100 or 1,000
// series. ns/op is the query's wait for its peers; cpu-ns/op the process's
// CPU time (both sides of the calls) per query.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			a, ls := fanoutNodes(b, n, 0, nil)
			runFanout(b, a, ls, 0, 600_000, 60)
		})
	}
}

// BenchmarkFanoutPastRange: the query reads an hour a day ago, which no
// head holds (the peers hold the last 10 minutes). head_min=off is a peer
// that does not report its head's oldest point (asked all the same, as
// every query asked before the registrations carried it); head_min=on
// reports it, and the peers are not called.
func BenchmarkFanoutPastRange(b *testing.B) {
	now := time.Now().UnixMilli()
	for _, on := range []bool{false, true} {
		var wrap func(*fakeHead) Local
		if on {
			wrap = func(h *fakeHead) Local { return minHead{h} }
		}
		for _, n := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("head_min=%v/series=%d", map[bool]string{false: "off", true: "on"}[on], n), func(b *testing.B) {
				a, ls := fanoutNodes(b, n, now-600_000, wrap)
				runFanout(b, a, ls, now-25*3_600_000, now-24*3_600_000, 0)
			})
		}
	}
}
