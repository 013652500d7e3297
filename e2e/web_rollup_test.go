package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebRollups: over a long range the page downsamples by itself in
// whole hours, the server answers from its 1h rollups, and the page says
// so beside the chart; over a short one it says nothing.
func TestWebRollups(t *testing.T) {
	webChromium(t)
	s := start(t, t.TempDir())
	defer s.stop()
	hour := int64(3_600_000)
	end := time.Now().UnixMilli()/hour*hour - 2*hour
	first := end - 8*24*hour
	var pts []map[string]any
	for ts := first; ts < end; ts += 10 * 60_000 {
		for h := range 2 {
			pts = append(pts, map[string]any{"metric": "web.rollup", "timestamp": ts,
				"value": float64((ts/60_000)%97) / 4, "tags": map[string]string{"host": fmt.Sprintf("h%d", h)}})
		}
	}
	webPut(t, s, pts)
	s.stop()
	s.restart() // the hours settle: their rollups are written

	// The server's own word first: the header names the rollups it read.
	body := fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"aggregator":"sum","metric":"web.rollup","downsample":"1h-avg"}]}`, first, end)
	resp, err := http.Post(s.url+"/api/query", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Hourglass-Rollup"); resp.StatusCode != 200 || got != "1h" {
		t.Fatalf("/api/query 1h-avg: %d, X-Hourglass-Rollup %q", resp.StatusCode, got)
	}

	b := webStartBrowser(t, 1200, 900)
	ctx := b.ctx
	webRun(t, ctx, "opening the page over 7 days", chromedp.Navigate(s.url+"/?m=web.rollup&agg=sum&range=7d"))
	webWaitFor(t, ctx, "the 7-day chart", `document.body.dataset.state === 'ready'`)
	var note, points string
	webEval(t, ctx, `document.getElementById('rollup-note').hidden ? '' : document.getElementById('rollup-note').textContent`, &note)
	webEval(t, ctx, `document.getElementById('chart').dataset.points`, &points)
	if !strings.HasPrefix(note, "from 1h rollups (downsample 1h-avg picked") {
		t.Errorf("7 days: the note says %q", note)
	}
	// One series (summed), a point an hour over 7 days (the first and the
	// last hours, which have no data, are not drawn).
	if n, _ := strconv.Atoi(points); n < 160 || n > 169 {
		t.Errorf("7 days: %s points, want one an hour", points)
	}

	n := webRunCount(t, ctx)
	webRun(t, ctx, "a 6-hour range", chromedp.Navigate(s.url+"/?m=web.rollup&agg=sum&range=6h"))
	if st := webWaitRun(t, ctx, n-1); st == "error" {
		t.Fatalf("6 hours: the query failed")
	}
	webWaitFor(t, ctx, "the note to go", `document.getElementById('rollup-note').hidden`)
	b.checkNoErrors()
}
