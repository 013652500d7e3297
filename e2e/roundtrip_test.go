package e2e

import (
	"fmt"
	"math"
	"testing"
)

// Values that break lesser encodings: int64 extremes and beyond 2^53,
// floats that are not short decimals, tiny and huge magnitudes, -0.
var awkward = []any{
	int64(0), int64(42), int64(-42), int64(math.MaxInt64), int64(math.MinInt64 + 1), int64(1<<53 + 1),
	0.1 + 0.2, 1e-300, -1.7976931348623157e308, math.Copysign(0, -1), 12.34, 5e-324, 3.0,
}

func roundTripPoints(base int64) (http, telnet []point) {
	for h := 0; h < 40; h++ { // 40 hosts spread over the 20 salt buckets
		for i, v := range awkward {
			p := point{metric: "rt.http", tags: map[string]string{"host": fmt.Sprintf("h%02d", h), "dc": "lga"},
				ts: base + int64(i)*1000 + int64(h), value: v}
			http = append(http, p)
			p.metric = "rt.telnet"
			telnet = append(telnet, p)
		}
	}
	return http, telnet
}

func TestPutQueryRoundTripAcrossRestarts(t *testing.T) {
	s := start(t, t.TempDir())
	base := int64(1_700_000_000_000)
	httpPts, telnetPts := roundTripPoints(base)
	s.put(httpPts)
	s.telnetPut(telnetPts)
	end := base + 3_600_000
	check := func(stage string) {
		t.Run(stage, func(t *testing.T) {
			s.t = t
			s.checkExact("rt.http", base, end, httpPts)
			s.checkExact("rt.telnet", base, end, telnetPts)
		})
	}
	check("live")
	s.stop()
	s.restart()
	check("after SIGTERM and restart")
	s.kill()
	s.restart()
	check("after SIGKILL and restart")
}

func TestKill9RightAfterAck(t *testing.T) {
	// Points in the current hour stay in the head (WAL only) until killed.
	s := start(t, t.TempDir())
	now := nowMs()
	var pts []point
	for i := 0; i < 500; i++ {
		pts = append(pts, point{metric: "k9", tags: map[string]string{"host": fmt.Sprintf("h%d", i%7)}, ts: now - int64(i)*10, value: int64(i)})
	}
	s.put(pts)
	s.kill()
	s.restart()
	s.checkExact("k9", now-10_000, now, pts)
}
