package e2e

import (
	"context"
	"math/rand"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

func nowMs() int64 { return time.Now().UnixMilli() }

// TestCrash kills the real binary with SIGKILL at random moments while
// clients write, many times over, and then checks that every acknowledged
// point is there, none twice, and nothing that was never sent.
func TestCrash(t *testing.T) {
	rounds := 20
	if v := os.Getenv("HOURGLASS_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("HOURGLASS_CRASH_ROUNDS=%q: %v", v, err)
		}
		rounds = n
	}
	const writers = 4
	rng := rand.New(rand.NewSource(1))
	s := start(t, t.TempDir())
	base := nowMs() - 2*3_600_000 // spans hours, so seals happen while we kill
	var mu sync.Mutex
	sent := map[string]point{} // by series and timestamp: every point ever sent
	acked := map[string]point{}
	key := func(p point) string { return p.seriesKey() + "@" + strconv.FormatInt(p.ts, 10) }
	seq := make([]int64, writers)
	for round := 0; round < rounds; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for ctx.Err() == nil {
					var batch []point
					for i := 0; i < 200; i++ {
						seq[w]++
						n := seq[w]
						batch = append(batch, point{
							metric: "crash.test",
							tags:   map[string]string{"writer": strconv.Itoa(w), "host": "h" + strconv.FormatInt(n%5, 10)},
							ts:     base + n*37, // ms timestamps, unique per writer
							value:  n*1000 + int64(w),
						})
					}
					mu.Lock()
					for _, p := range batch {
						sent[key(p)] = p
					}
					mu.Unlock()
					req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/api/put", bytesReader(putBody(batch)))
					resp, err := client.Do(req)
					if err != nil {
						return // killed, or cancelled
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
			}(w)
		}
		time.Sleep(time.Duration(50+rng.Intn(400)) * time.Millisecond)
		s.kill()
		cancel()
		wg.Wait()
		s.restart()
	}
	got := s.raw("crash.test", base, base+int64(rounds)*writers*1_000_000)
	found := 0
	present := map[string]bool{}
	for series, dps := range got {
		var prev int64 = -1
		for _, dp := range dps {
			ts, _ := strconv.ParseInt(string(dp[0]), 10, 64)
			if ts <= prev {
				t.Fatalf("%s: timestamp %d after %d: duplicated or out of order", series, ts, prev)
			}
			prev = ts
			k := series + "@" + string(dp[0])
			p, ok := sent[k]
			if !ok {
				t.Fatalf("%s holds a point that was never sent: %s=%s", series, dp[0], dp[1])
			}
			if !sameValue(dp[1], p.value) {
				t.Fatalf("%s: %s=%s, sent %v", series, dp[0], dp[1], p.value)
			}
			present[k] = true
			found++
		}
	}
	for k := range acked {
		if !present[k] {
			t.Fatalf("acknowledged point %s is missing after %d kills", k, rounds)
		}
	}
	t.Logf("%d rounds: %d points sent, %d acknowledged, %d found", rounds, len(sent), len(acked), found)
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged: the test proved nothing")
	}
}
