package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestSnapshotRestore takes a snapshot through the API while clients
// write, kills the original with SIGKILL, copies the snapshot away as an
// operator would (cp -a) and starts a second binary on the copy: every
// point acknowledged before the call is there, every point there was sent,
// and no point of a batch begun after the call returned is there.
// With -wal-fsync=interval a point is acknowledged once written to the OS,
// before its fsync: the snapshot's links see it all the same.
func TestSnapshotRestore(t *testing.T) {
	for _, mode := range []string{"always", "interval"} {
		t.Run("wal-fsync="+mode, func(t *testing.T) { snapshotRestore(t, mode) })
	}
}

func snapshotRestore(t *testing.T, fsync string) {
	dataDir := t.TempDir()
	// Small WAL segments: truncation runs while the snapshot links them.
	s := start(t, dataDir, "-allow-delete", "-wal-segment-size", "65536", "-wal-max-bytes", "262144", "-wal-fsync", fsync)
	if code, body := s.do("POST", "/api/v1/admin/tsdb/snapshot", "", nil); code != 200 {
		t.Fatalf("snapshot of an empty store: %d %s", code, body)
	}
	const writers = 3
	base := nowMs() - 2*3_600_000 // spans hours, so chunks seal and flush during the run
	var mu sync.Mutex
	sent := map[string]point{}
	acked := map[string]point{}
	batchOf := map[string]int{} // point → the number of its batch in its writer's order
	var begun [writers]int      // batches begun per writer, under mu
	key := func(p point) string { return p.seriesKey() + "@" + strconv.FormatInt(p.ts, 10) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < 2000 && ctx.Err() == nil; b++ {
				var batch []point
				for i := range 100 {
					n := int64(b*100 + i)
					batch = append(batch, point{metric: "snap.test",
						tags: map[string]string{"writer": strconv.Itoa(w), "host": "h" + strconv.FormatInt(n%7, 10)},
						ts:   base + n*50, value: n})
				}
				mu.Lock()
				begun[w] = b + 1
				for _, p := range batch {
					sent[key(p)] = p
					batchOf[key(p)] = b
				}
				mu.Unlock()
				req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/api/put", bytesReader(putBody(batch)))
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					mu.Lock()
					for _, p := range batch {
						acked[key(p)] = p
					}
					mu.Unlock()
				}
			}
		}()
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 20_000 })
	mu.Lock()
	before := make(map[string]bool, len(acked))
	for k := range acked {
		before[k] = true
	}
	mu.Unlock()
	code, body := s.do("POST", "/api/v1/admin/tsdb/snapshot", "", nil)
	if code != 200 {
		t.Fatalf("snapshot: %d %s", code, body)
	}
	mu.Lock()
	after := begun // batches numbered from these on began after the snapshot
	mu.Unlock()
	var reply struct {
		Status string `json:"status"`
		Data   struct {
			Name string `json:"name"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &reply); err != nil || reply.Status != "success" || reply.Data.Name == "" {
		t.Fatalf("snapshot reply %s: %v", body, err)
	}
	time.Sleep(300 * time.Millisecond) // writes go on after the snapshot...
	s.kill()                           // ...until the original dies
	cancel()
	wg.Wait()

	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := exec.Command("cp", "-a", filepath.Join(dataDir, "snapshots", reply.Data.Name), restored).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	r := start(t, restored)
	present := map[string]bool{}
	var late int
	for series, dps := range r.raw("snap.test", base, base+2000*100*50) {
		for _, dp := range dps {
			k := series + "@" + string(dp[0])
			p, ok := sent[k]
			if !ok {
				t.Fatalf("the restored copy holds a point never sent: %s=%s", k, dp[1])
			}
			if !sameValue(dp[1], p.value) {
				t.Fatalf("%s: %s, sent %v", k, dp[1], p.value)
			}
			var w int
			w, _ = strconv.Atoi(p.tags["writer"])
			if batchOf[k] >= after[w] {
				late++
			}
			present[k] = true
		}
	}
	if late > 0 {
		t.Fatalf("the restored copy holds %d points of batches begun after the snapshot returned", late)
	}
	for k := range before {
		if !present[k] {
			t.Fatalf("point %s, acknowledged before the snapshot, is missing from it (%d of %d there)", k, len(present), len(before))
		}
	}
	t.Logf("snapshot %s: %d points acknowledged before it, %d in it, %d sent in all", reply.Data.Name, len(before), len(present), len(sent))
}

// waitFor polls cond every 10 ms for at most 60 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached within 60s")
}
