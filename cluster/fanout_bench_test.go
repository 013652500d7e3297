package cluster

import (
	"context"
	"fmt"
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

// BenchmarkFanout prices the design issue 14 took: a query on one node asks
// two peers (loopback HTTP, in this process) for their heads' points of
// its series. Each peer holds, for every series, 60 points (10 minutes of
// a 10 s series); the query reads the last 10 minutes of 1, 100 or 1,000
// series. ns/op is the query's wait for its peers; cpu-ns/op the process's
// CPU time (both sides of the calls) per query.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			st, err := pebble.Open(b.TempDir(), pebble.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
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
							h.pts[l] = append(h.pts[l], chunk.Point{T: int64(k) * 10_000, V: chunk.Float(float64(i+k) / 7)})
						}
					}
				}
				node := New(st, h, nil, Options{WriterID: w, Heartbeat: time.Hour, Registerer: prometheus.NewRegistry()})
				srv := httptest.NewServer(node.Handler())
				defer srv.Close()
				if err := node.Start(context.Background(), strings.TrimPrefix(srv.URL, "http://")); err != nil {
					b.Fatal(err)
				}
				defer node.Close(context.Background(), false)
				nodes = append(nodes, node)
			}
			a := nodes[0]
			if err := a.readRegistry(context.Background()); err != nil {
				b.Fatal(err)
			}
			if live, down := a.Peers(); len(live) != 2 {
				b.Fatalf("live %v down %v", live, down)
			}
			cpu0 := cputime.Used()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx, ws := warnings.With(context.Background())
				out, err := a.Snapshots(ctx, ls, 0, 600_000, 0)
				if err != nil || len(out[n-1]) != 60 {
					b.Fatalf("%v %d %q", err, len(out[n-1]), ws.Messages())
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
