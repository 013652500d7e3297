package api

import (
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"hourglass/store"
)

// metricLine reports whether /metrics has the line (a series and its value).
func (ps *promServer) metricLine(line string) bool {
	ps.t.Helper()
	r := ps.do("GET", "/metrics", nil, nil)
	for _, l := range strings.Split(string(r.body), "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestTSDBStatusBounds: -prom-status-tsdb-max-limit refuses a larger limit
// (400 naming the flag, counted) and -prom-status-tsdb-cache-ttl decides
// whether a second request walks the index again.
func TestTSDBStatusBounds(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.StatusTSDBMaxLimit, c.Prom.StatusTSDBCacheTTL = 5, time.Hour })
	code, r := ps.api("GET", "/api/v1/status/tsdb", url.Values{"limit": {"6"}})
	if code != 400 || r.ErrorType != "bad_data" || !strings.Contains(r.Error, "-prom-status-tsdb-max-limit") {
		t.Fatalf("limit=6 over a max of 5: %d %+v", code, r)
	}
	if !ps.metricLine("hourglass_status_tsdb_limit_refused_total 1") {
		t.Fatal("the refusal is not counted")
	}
	if !ps.metricLine("hourglass_remote_write_series_cache_resets_total 0") {
		t.Fatal("remote write's series cache resets are not in /metrics")
	}
	for range 3 {
		if code, r := ps.api("GET", "/api/v1/status/tsdb", url.Values{"limit": {"5"}}); code != 200 {
			t.Fatalf("limit=5: %d %+v", code, r)
		}
	}
	if !ps.metricLine("hourglass_status_tsdb_computations_total 1") {
		t.Fatal("with a TTL of 1h, three requests walked the index more than once")
	}
	short := newPromServer(t, func(c *Config) { c.Prom.StatusTSDBCacheTTL = time.Nanosecond })
	for range 3 {
		if code, _ := short.api("GET", "/api/v1/status/tsdb", nil); code != 200 {
			t.Fatalf("status: %d", code)
		}
		time.Sleep(time.Millisecond)
	}
	if !short.metricLine("hourglass_status_tsdb_computations_total 3") {
		t.Fatal("with a TTL of 1ns, three requests did not walk the index three times")
	}
}

// blockingCheckpointStore holds Checkpoint until release is closed.
type blockingCheckpointStore struct {
	store.Store
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingCheckpointStore) Checkpoint(dir string) error {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return b.Store.(interface{ Checkpoint(string) error }).Checkpoint(dir)
}

// TestSnapshotWait: snapshots are taken one at a time; a request that
// waited -prom-snapshot-wait for the one under way gets 503 with
// Retry-After, counted as result "busy"; the first then completes.
func TestSnapshotWait(t *testing.T) {
	bs := &blockingCheckpointStore{started: make(chan struct{}), release: make(chan struct{})}
	ps := newPromServerOver(t, func(st store.Store) store.Store { bs.Store = st; return bs },
		func(c *Config) { c.AllowDelete, c.Prom.SnapshotWait = true, 100*time.Millisecond })
	first := make(chan int, 1)
	go func() {
		code, _ := ps.api("POST", "/api/v1/admin/tsdb/snapshot", nil)
		first <- code
	}()
	select {
	case <-bs.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the first snapshot did not start")
	}
	t0 := time.Now()
	r := ps.do("POST", "/api/v1/admin/tsdb/snapshot", nil, nil)
	if r.code != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "-prom-snapshot-wait") {
		t.Fatalf("a second snapshot while one is under way: %d %q %s", r.code, r.header.Get("Retry-After"), r.body)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("the second request waited %v, past the 100 ms asked", d)
	}
	close(bs.release)
	if code := <-first; code != 200 {
		t.Fatalf("the first snapshot: %d", code)
	}
	if !ps.metricLine(`hourglass_snapshots_total{result="busy"} 1`) {
		t.Fatal("the refusal is not counted as busy")
	}
}
