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
// clients write and delete, many times over, and then checks that every
// acknowledged point is there, none twice, and nothing that was never sent,
// and that no point of an acknowledged delete came back.
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
	s := start(t, t.TempDir(), "-allow-delete",
		// At 100 rounds (make crash-100) the check reads ~5 M raw points at once.
		"-query-max-output-points", "100000000")
	base := nowMs() - 2*3_600_000 // spans hours, so seals happen while we kill
	// A victim series, a point a second for two hours, from which each
	// round deletes a random range while the writers write.
	var victim []point
	for i := int64(0); i < 7200; i++ {
		victim = append(victim, point{metric: "crash.victim", tags: map[string]string{"host": "v"}, ts: base + i*1000, value: i})
	}
	for i := 0; i < len(victim); i += 1800 {
		if code, body := s.do("POST", "/api/put", "application/json", putBody(victim[i:i+1800])); code != http.StatusNoContent {
			t.Fatalf("victim put: %d %s", code, body)
		}
	}
	type span struct{ from, to int64 }
	var tried, deleted []span // every delete sent; those acknowledged
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
		a := base + rng.Int63n(7200)*1000 + rng.Int63n(1000)
		d := span{a, a + rng.Int63n(600_000)}
		tried = append(tried, d)
		wg.Add(1)
		go func(delay time.Duration) {
			defer wg.Done()
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			body := `{"start":` + strconv.FormatInt(d.from, 10) + `,"end":` + strconv.FormatInt(d.to, 10) +
				`,"delete":true,"queries":[{"metric":"crash.victim","aggregator":"none"}]}`
			req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/api/query", bytesReader([]byte(body)))
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				mu.Lock()
				deleted = append(deleted, d)
				mu.Unlock()
			}
		}(time.Duration(rng.Intn(300)) * time.Millisecond)
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
	// The victim: gone where an acknowledged delete covered it, there
	// where no delete was even tried.
	left := map[int64]bool{}
	for _, dps := range s.raw("crash.victim", base, base+7200_000) {
		for _, dp := range dps {
			ts, _ := strconv.ParseInt(string(dp[0]), 10, 64)
			left[ts] = true
		}
	}
	in := func(ts int64, spans []span) bool {
		for _, d := range spans {
			if ts >= d.from && ts <= d.to {
				return true
			}
		}
		return false
	}
	for _, p := range victim {
		switch {
		case in(p.ts, deleted) && left[p.ts]:
			t.Fatalf("victim point %d came back after an acknowledged delete", p.ts)
		case !in(p.ts, tried) && !left[p.ts]:
			t.Fatalf("victim point %d is missing, and no delete covered it", p.ts)
		}
	}
	t.Logf("%d rounds: %d points sent, %d acknowledged, %d found; %d of %d deletes acknowledged, %d victim points left",
		rounds, len(sent), len(acked), found, len(deleted), len(tried), len(left))
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged: the test proved nothing")
	}
}
