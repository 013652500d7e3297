package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"hourglass/store"
	"hourglass/store/bigtable"
)

// TestBigtableTwoNodes runs two hourglass nodes (the real binary, distinct
// writer ids, a WAL each) on one Bigtable: the emulator, in this process,
// on loopback. Both receive writes for overlapping new metrics, tags and
// series at once; the UID tables stay consistent and both nodes name every
// series with the same TSUID; once a node has flushed (SIGTERM: it writes
// its head to the store), every point written to it reads back from the
// other node, which learned the series it had never seen through the index
// sync, without a restart. Then an outage: writes that need the store get
// 503, the others go to the WAL and reach Bigtable when it is back.
func TestBigtableTwoNodes(t *testing.T) {
	var down atomic.Bool // the outage switch: every RPC fails with Unavailable
	refuse := func(ctx context.Context) error {
		if down.Load() {
			return status.Error(codes.Unavailable, "injected outage")
		}
		return nil
	}
	emu, err := bttest.NewServer("127.0.0.1:0",
		grpc.MaxRecvMsgSize(64<<20),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := refuse(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := refuse(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	t.Setenv("BIGTABLE_EMULATOR_HOST", emu.Addr) // the nodes inherit it

	common := []string{"-storage", "bigtable", "-bigtable.project", "proj", "-bigtable.instance", "inst",
		"-bigtable.table-prefix", "e2e", "-bigtable.timeout", "2s", "-index-sync-interval", "100ms"}
	a := start(t, t.TempDir(), append([]string{"-writer-id", "1"}, common...)...)
	b := start(t, t.TempDir(), append([]string{"-writer-id", "2"}, common...)...)

	// One hour of points around a midnight (UTC), so series have data on
	// two days; A writes on whole minutes, B on half minutes.
	midnight := time.Now().UTC().Truncate(24 * time.Hour).UnixMilli()
	base := midnight - 30*60_000
	end := base + 60*60_000
	want := map[string]map[int64]int64{} // series → ts → value: every point acknowledged
	var mu sync.Mutex
	gen := func(node int, hosts []int, metric string) []point {
		var pts []point
		for i := int64(0); i < 60; i++ {
			for _, h := range hosts {
				p := point{
					metric: metric,
					tags:   map[string]string{"host": fmt.Sprintf("h%d", h), "dc": fmt.Sprintf("dc%d", h%2)},
					ts:     base + i*60_000 + int64(node-1)*30_000,
					value:  int64(node)*1_000_000 + int64(h)*1000 + i,
				}
				pts = append(pts, p)
			}
		}
		return pts
	}
	// The race: the same 100 new series (new tag values) to both nodes at
	// the same moment.
	race := func(node int) []point {
		var pts []point
		for v := 0; v < 100; v++ {
			pts = append(pts, point{metric: "bt.race", tags: map[string]string{"k": fmt.Sprintf("r%03d", v)},
				ts: base + int64(node)*1000, value: int64(node*1000 + v)})
		}
		return pts
	}
	// Points of the current hour: only a node's SIGTERM writes them to
	// Bigtable (the sweeper seals an hour 10 minutes after it ends).
	now := time.Now().UnixMilli()
	current := func(node int) []point {
		var pts []point
		for i := int64(0); i < 10; i++ {
			for _, h := range []int{node - 1, node} {
				pts = append(pts, point{metric: "bt.now", tags: map[string]string{"host": fmt.Sprintf("h%d", h)},
					ts: now - 60_000 + i*2000 + int64(node-1)*1000, value: int64(node*100) + i})
			}
		}
		return pts
	}
	writes := map[*server][][]point{
		a: {race(1), gen(1, []int{0, 1, 2, 3}, "bt.shared"), gen(1, []int{0, 1}, "bt.only.a"), current(1)},
		b: {race(2), gen(2, []int{2, 3, 4, 5}, "bt.shared"), gen(2, []int{0, 1}, "bt.only.b"), current(2)},
	}
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	for s, batches := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			for _, batch := range batches {
				code, body := s.do("POST", "/api/put?details", "application/json", putBody(batch))
				if code != http.StatusOK {
					t.Errorf("put to %s: %d %s", s.url, code, body)
					return
				}
				mu.Lock()
				for _, p := range batch {
					k := p.seriesKey()
					if want[k] == nil {
						want[k] = map[int64]int64{}
					}
					want[k][p.ts] = p.value.(int64)
				}
				mu.Unlock()
			}
		}()
	}
	close(startLine)
	wg.Wait()
	if t.Failed() {
		return
	}
	metrics := []string{"bt.race", "bt.shared", "bt.only.a", "bt.only.b"}
	nowMetric := []string{"bt.now"}

	// UIDs agree: one UID per name, in both directions, in the store.
	checkUIDs(t, "e2e")

	// A flushes (SIGTERM writes its head to the store) and comes back. B,
	// running all along, reads every point either node was sent: its own
	// from its head or the store, A's from the store, for series it never
	// saw and days it never wrote, through the index sync.
	a.stop()
	a.restart()
	waitAllPoints(t, b, "B after A flushed", metrics, base, end, want)
	waitAllPoints(t, b, "B after A flushed, the current hour", nowMetric, now-120_000, now+60_000, want)

	// B flushes; A (up since before that) reads everything too, and so
	// does B after its restart.
	b.stop()
	b.restart()
	waitAllPoints(t, a, "A after B flushed", metrics, base, end, want)
	waitAllPoints(t, b, "B after its restart", metrics, base, end, want)
	waitAllPoints(t, a, "A after B flushed, the current hour", nowMetric, now-120_000, now+60_000, want)

	// Both nodes name every series by the same TSUID.
	for _, m := range metrics {
		ta, tb := tsuids(t, a, m, base, end), tsuids(t, b, m, base, end)
		if len(ta) == 0 || fmt.Sprint(ta) != fmt.Sprint(tb) {
			t.Fatalf("%s: TSUIDs on A %v, on B %v", m, ta, tb)
		}
	}

	// An outage. A known series (its names resolved in this process) goes
	// on into the WAL; a new name needs the store and gets 503, which
	// clients retry.
	known := point{metric: "bt.shared", tags: map[string]string{"host": "h0", "dc": "dc0"}, ts: end + 60_000, value: int64(7)}
	a.put([]point{known})
	down.Store(true)
	known2 := known
	known2.ts, known2.value = end+120_000, int64(8)
	if code, body := a.do("POST", "/api/put", "application/json", putBody([]point{known2})); code != http.StatusNoContent {
		t.Fatalf("a known series during the outage: %d %s; want 204 (in the WAL)", code, body)
	}
	fresh := point{metric: "bt.outage", tags: map[string]string{"host": "new"}, ts: end + 60_000, value: int64(9)}
	if code, body := a.do("POST", "/api/put", "application/json", putBody([]point{fresh})); code != http.StatusServiceUnavailable {
		t.Fatalf("a new series during the outage: %d %s; want 503", code, body)
	}
	down.Store(false)
	a.put([]point{fresh}) // the client's retry
	a.stop()
	a.restart()
	for _, p := range []point{known, known2, fresh} {
		if want[p.seriesKey()] == nil {
			want[p.seriesKey()] = map[int64]int64{}
		}
		want[p.seriesKey()][p.ts] = p.value.(int64)
	}
	waitAllPoints(t, b, "B after the outage", append(metrics, "bt.outage"), base, end+120_000, want)
}

// waitAllPoints polls s until it returns exactly the wanted points of the
// metrics: the index sync runs on its own clock, so the test waits for it
// (it asserts what becomes visible, not how soon).
func waitAllPoints(t *testing.T, s *server, what string, metrics []string, start, end int64, want map[string]map[int64]int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		diff := diffPoints(s, metrics, start, end, want)
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, diff)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// diffPoints describes the first difference between what s returns and want.
func diffPoints(s *server, metrics []string, start, end int64, want map[string]map[int64]int64) string {
	got := map[string][][2]json.Number{}
	for _, m := range metrics {
		for k, v := range s.raw(m, start, end) {
			got[k] = v
		}
	}
	var keys []string
	for k := range want {
		if k := strings.SplitN(k, ",", 2)[0]; !contains(metrics, k) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := 0
	for _, k := range keys {
		dps, ok := got[k]
		if !ok {
			return fmt.Sprintf("series %s missing (%d of %d series returned)", k, len(got), len(keys))
		}
		w := want[k]
		if len(dps) != len(w) {
			return fmt.Sprintf("series %s: %d points, want %d", k, len(dps), len(w))
		}
		for _, dp := range dps {
			ts, _ := strconv.ParseInt(string(dp[0]), 10, 64)
			v, ok := w[ts]
			if !ok || !sameValue(dp[1], v) {
				return fmt.Sprintf("series %s: %s=%s, want %v (present: %v)", k, dp[0], dp[1], v, ok)
			}
		}
		n++
	}
	if len(got) != n {
		return fmt.Sprintf("%d series returned, want %d", len(got), n)
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tsuids returns "series=TSUID" for every series of metric, sorted.
func tsuids(t *testing.T, s *server, metric string, start, end int64) []string {
	t.Helper()
	body := fmt.Sprintf(`{"start":%d,"end":%d,"showTSUIDs":true,"queries":[{"aggregator":"none","metric":%q}]}`, start, end, metric)
	var out []string
	for _, r := range otsQuery(t, s, "/api/query", body) {
		out = append(out, point{metric: r.Metric, tags: r.Tags}.seriesKey()+"="+strings.Join(r.TSUIDs, ","))
	}
	sort.Strings(out)
	return out
}

// checkUIDs reads the UID table from the emulator: every name has one UID,
// whose reverse entry names it back, and no UID has two names.
func checkUIDs(t *testing.T, prefix string) {
	t.Helper()
	ctx := context.Background()
	st, err := bigtable.Open(ctx, bigtable.Options{Project: "proj", Instance: "inst", TablePrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	forward := map[string]string{} // kind|name → uid
	reverse := map[string]string{} // kind|uid → name
	err = st.Scan(ctx, store.TableUID, []store.KeyRange{{}}, func(c store.Cell) bool {
		switch {
		case c.Row[0] == 'f' && string(c.Qualifier) == "i":
			forward[string(c.Row[1:])] = string(c.Value)
		case c.Row[0] == 'r' && string(c.Qualifier) == "n":
			reverse[string(c.Row[1:])] = string(c.Value)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for kn, id := range forward {
		kind, name := kn[:1], kn[1:]
		if got := reverse[kind+id]; got != name {
			t.Errorf("UID %x of %q (kind %d) names %q in the reverse map", id, name, kind[0], got)
		}
		names++
	}
	if len(reverse) != len(forward) {
		t.Errorf("%d reverse entries for %d names: a UID has two names or a lost race left one behind", len(reverse), len(forward))
	}
	// 5 metrics, 3 tag keys; tag values: h0-h5, dc0, dc1, r000-r099.
	if want := 5 + 3 + 6 + 2 + 100; names != want {
		t.Errorf("%d names have UIDs, want %d", names, want)
	}
}
