package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the browser's time zone is set by name; Go must know it too

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The browser test drives the page served at / in headless Chromium
// (Debian's chromium package), as a person would: it types into the
// controls, picks from the autocomplete lists, hovers, drags and clicks, and
// checks what the page shows against the points it wrote. What the chart
// drew is read back from the canvas's pixels at the places the chart says
// the points are.

func TestWebPage(t *testing.T) {
	webChromium(t)
	s := start(t, t.TempDir())
	ts, sums := webTestData(t, s)
	b := webStartBrowser(t, 1440, 1100)
	ctx := b.ctx

	// With a range in the URL the page does not pick a metric itself (see
	// "opens on data" for a page opened bare).
	webRun(t, ctx, "opening the page", chromedp.Navigate(s.url+"/?range=1h"), chromedp.WaitVisible(chromedp.ID("metric")))

	t.Run("status panel", func(t *testing.T) {
		var st struct {
			Version        string   `json:"version"`
			Series         int      `json:"series"`
			PointsStored   float64  `json:"pointsStored"`
			PointsRejected float64  `json:"pointsRejected"`
			WALBytes       int64    `json:"walBytes"`
			StoreBytes     *float64 `json:"storeBytes"`
			UptimeSeconds  float64  `json:"uptimeSeconds"`
		}
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/status", nil), &st)
		// 30 minutes of 6 series of web.test.cpu and one of web.test.mem.
		if st.Series != 7 || st.PointsStored != 7*30 || st.PointsRejected != 0 || st.WALBytes <= 0 || st.StoreBytes == nil || st.UptimeSeconds <= 0 {
			t.Errorf("/api/status: %+v, want 7 series, 210 points stored, none rejected, a WAL and a store size", st)
		}
		webWaitFor(t, ctx, "the status panel to show the series count", `document.getElementById('status').dataset.series === '7'`)
		var version, series string
		webEval(t, ctx, `document.getElementById('st-version').textContent`, &version)
		webEval(t, ctx, `document.getElementById('st-series').textContent`, &series)
		if !strings.HasPrefix(version, st.Version) || series != "7" {
			t.Errorf("status panel: version %q series %q, want version %q and 7 series", version, series, st.Version)
		}
	})

	t.Run("cardinality panel", func(t *testing.T) { webCheckCardinality(t, ctx) })

	// A page opened bare (no URL state) on a server holding the README's
	// points shows them: the newest written metric, over a range that holds
	// its newest point (absolute when it is older than the default hour);
	// and once a metric is written now, that one over the last hour.
	t.Run("opens on data", func(t *testing.T) {
		s2 := start(t, t.TempDir())
		ctx1 := b.newTab(1440, 1100)
		webRun(t, ctx1, "opening the page bare on an empty store", chromedp.Navigate(s2.url+"/"))
		webWaitFor(t, ctx1, "the page to say nothing is stored", `document.getElementById('message').textContent.startsWith('Nothing is stored yet')`)
		readme := []map[string]any{
			{"metric": "sys.cpu.user", "timestamp": 1700000000, "value": 42, "tags": map[string]string{"host": "web01", "dc": "lga"}},
			{"metric": "sys.cpu.user", "timestamp": 1700000010, "value": 42.5, "tags": map[string]string{"host": "web01", "dc": "lga"}},
			{"metric": "sys.cpu.user", "timestamp": 1700000020, "value": 43, "tags": map[string]string{"host": "web01", "dc": "lga"}},
		}
		webPut(t, s2, readme)
		open := func(what string) context.Context {
			ctx2 := b.newTab(1440, 1100)
			webRun(t, ctx2, what, chromedp.Navigate(s2.url+"/"))
			if st := webWaitRun(t, ctx2, 0); st != "ready" {
				t.Fatalf("%s: the page ends %q, want ready", what, st)
			}
			return ctx2
		}
		ctx2 := open("opening the page bare on the README's points")
		var got struct {
			Metric string
			From   float64
			To     float64
		}
		webEval(t, ctx2, `({metric: document.getElementById('metric').value, from: hourglass.state.from, to: hourglass.state.to})`, &got)
		if got.Metric != "sys.cpu.user" || got.From > 1700000000e3 || got.To < 1700000020e3 {
			t.Errorf("bare page on the README's points: metric %q over [%v, %v], want sys.cpu.user over a range holding 1700000000-1700000020 s", got.Metric, got.From, got.To)
		}
		if sr := webChartSeries(t, ctx2); len(sr) != 1 || fmt.Sprint(sr[0].T, sr[0].V) != "[1700000000000 1700000010000 1700000020000] [42 42.5 43]" {
			t.Errorf("bare page on the README's points: chart %+v, want the three points", sr)
		}
		now := time.Now().Unix()
		webPut(t, s2, []map[string]any{{"metric": "sys.net.bytes", "timestamp": now - 60, "value": 1000, "tags": map[string]string{"host": "web01", "dc": "lga"}}})
		ctx3 := open("opening the page bare after a point written now")
		var got2 struct {
			Metric, Range, Search string
			From                  *float64
		}
		webEval(t, ctx3, `({metric: document.getElementById('metric').value, range: hourglass.state.range, from: hourglass.state.from, search: location.search})`, &got2)
		if got2.Metric != "sys.net.bytes" || got2.From != nil || got2.Range != "1h" || !strings.Contains(got2.Search, "m=sys.net.bytes") {
			t.Errorf("bare page after a point written now: %+v, want sys.net.bytes over the last hour, in the URL", got2)
		}
		if sr := webChartSeries(t, ctx3); len(sr) != 1 || len(sr[0].T) != 1 || sr[0].T[0] != (now-60)*1000 {
			t.Errorf("bare page after a point written now: chart %+v, want the point at %d", sr, (now-60)*1000)
		}
		b.checkNoErrors()
	})

	// The metric, typed and picked from the autocomplete list.
	webRun(t, ctx, "typing the metric", chromedp.SendKeys(chromedp.ID("metric"), "web.test.c"))
	webWaitList(t, ctx, "#metric", "web.test.cpu")
	n := webRunCount(t, ctx)
	webRun(t, ctx, "picking the metric", chromedp.SendKeys(chromedp.ID("metric"), kb.ArrowDown+kb.Enter))
	if st := webWaitRun(t, ctx, n); st != "ready" {
		t.Fatalf("after picking the metric the page is %q, want ready", st)
	}
	// The default aggregator, sum, makes one series of all six.
	if got := webChartSeries(t, ctx); len(got) != 1 || len(got[0].T) != 30 {
		t.Fatalf("sum over web.test.cpu: %d series, want 1 with 30 points: %+v", len(got), got)
	}

	// A tag filter dc = lga: the key and the value from the autocomplete,
	// scoped to the metric.
	webRun(t, ctx, "adding a filter", chromedp.Click(chromedp.ID("add-filter")))
	webRun(t, ctx, "typing a tag key", chromedp.SendKeys(chromedp.CSS("#filters .tagk"), "d"))
	webWaitList(t, ctx, "#filters .tagk", "dc")
	webRun(t, ctx, "picking the tag key", chromedp.SendKeys(chromedp.CSS("#filters .tagk"), kb.ArrowDown+kb.Enter))
	webWaitFor(t, ctx, "focus on the tag value", `document.activeElement === document.querySelector('#filters .tagv')`)
	// The values of dc among web.test.cpu's series, not zzz (web.test.mem's).
	webWaitList(t, ctx, "#filters .tagv", "lga,sjc")
	webRun(t, ctx, "typing the tag value", chromedp.SendKeys(chromedp.CSS("#filters .tagv"), "l"))
	webWaitList(t, ctx, "#filters .tagv", "lga")
	n = webRunCount(t, ctx)
	webRun(t, ctx, "picking the tag value", chromedp.SendKeys(chromedp.CSS("#filters .tagv"), kb.ArrowDown+kb.Enter))
	webWaitRun(t, ctx, n)

	// Group by host, typed with the autocomplete's help.
	n = webRunCount(t, ctx)
	webRun(t, ctx, "typing the group-by key", chromedp.SendKeys(chromedp.ID("groupby"), "ho"))
	webWaitList(t, ctx, "#groupby", "host")
	webRun(t, ctx, "picking the group-by key", chromedp.SendKeys(chromedp.ID("groupby"), kb.ArrowDown+kb.Enter))
	if st := webWaitRun(t, ctx, n); st != "ready" {
		t.Fatalf("after group by host the page is %q, want ready", st)
	}

	wantLabels := []string{"dc=lga, host=web01", "dc=lga, host=web02"}
	wantPts := [][]webPoint{sums["web01"], sums["web02"]}
	checkSeries := func(t *testing.T, ctx context.Context, from, to int) []webSeries {
		t.Helper()
		got := webChartSeries(t, ctx)
		if len(got) != len(wantLabels) {
			t.Fatalf("chart has %d series, want %d: %+v", len(got), len(wantLabels), got)
		}
		for i, g := range got {
			if g.Label != wantLabels[i] || g.ID != wantLabels[i] {
				t.Errorf("series %d is %q (id %q), want %q", i, g.Label, g.ID, wantLabels[i])
			}
			want := wantPts[i][from:to]
			if len(g.T) != len(want) {
				t.Errorf("series %s has %d points, want %d", g.Label, len(g.T), len(want))
				continue
			}
			for j, p := range want {
				if g.T[j] != p.t || g.V[j] != p.v {
					t.Errorf("series %s point %d is (%d, %v), want (%d, %v)", g.Label, j, g.T[j], g.V[j], p.t, p.v)
				}
			}
		}
		return got
	}

	var series []webSeries
	t.Run("chart series", func(t *testing.T) {
		series = checkSeries(t, ctx, 0, 30)
		var ds struct{ Series, Points string }
		webEval(t, ctx, `({series: document.getElementById('chart').dataset.series, points: document.getElementById('chart').dataset.points})`, &ds)
		if ds.Series != "2" || ds.Points != "60" {
			t.Errorf("chart data attributes: %+v, want 2 series and 60 points", ds)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("drawn", func(t *testing.T) {
		// Every series is drawn in its colour where the chart puts its points,
		// and nothing is drawn half way between the two series.
		for _, s := range series {
			for _, j := range []int{0, 7, 15, 29} {
				if !webPixelNear(t, ctx, s.T[j], s.V[j], s.Color) {
					t.Errorf("series %s: no pixel of its colour %s at point %d (%d, %v)", s.Label, s.Color, j, s.T[j], s.V[j])
				}
			}
		}
		mid := (series[0].V[0] + series[1].V[0]) / 2
		for _, s := range series {
			if webPixelNear(t, ctx, s.T[0], mid, s.Color) {
				t.Errorf("a pixel of %s's colour at (%d, %v), where no series has a point", s.Label, s.T[0], mid)
			}
		}
	})

	t.Run("legend", func(t *testing.T) {
		var items []struct{ ID, Label, Color string }
		webEval(t, ctx, `[...document.querySelectorAll('#legend li')].map(li => ({id: li.dataset.id,
			label: li.querySelector('.legend-label').textContent, color: getComputedStyle(li.querySelector('.swatch')).backgroundColor}))`, &items)
		if len(items) != 2 {
			t.Fatalf("legend has %d items, want 2: %+v", len(items), items)
		}
		for i, it := range items {
			if it.Label != wantLabels[i] || it.Color != webRGB(series[i].Color) {
				t.Errorf("legend item %d: %q in %s, want %q in %s", i, it.Label, it.Color, wantLabels[i], webRGB(series[i].Color))
			}
		}
		// Hovering an item highlights its series.
		var xy []float64
		webEval(t, ctx, `(() => { const r = document.querySelector('#legend li:nth-child(2) button').getBoundingClientRect(); return [r.left + 10, r.top + r.height / 2]; })()`, &xy)
		webRun(t, ctx, "hovering the legend", webMouse(chromedp.MouseMoved, xy[0], xy[1], 0, 0))
		webWaitFor(t, ctx, "the hovered series to be highlighted", `hourglass.chart.hl === 'dc=lga, host=web02'`)
		webRun(t, ctx, "leaving the legend", webMouse(chromedp.MouseMoved, 2, 2, 0, 0))
		webWaitFor(t, ctx, "the highlight to go", `hourglass.chart.hl === null`)

		// A click hides the series: gone from the chart's pixels and in the URL.
		webRun(t, ctx, "hiding web02", chromedp.Click(chromedp.CSS(`#legend li:nth-child(2) button`)))
		webWaitFor(t, ctx, "web02 to be hidden", `hourglass.chart.hidden.has('dc=lga, host=web02') && location.search.includes('hide=')`)
		for _, j := range []int{0, 15, 29} {
			if webPixelNear(t, ctx, series[1].T[j], series[1].V[j], series[1].Color) {
				t.Errorf("hidden series web02 is still drawn at point %d", j)
			}
			if !webPixelNear(t, ctx, series[0].T[j], series[0].V[j], series[0].Color) {
				t.Errorf("series web01 is not drawn at point %d while web02 is hidden", j)
			}
		}
		webRun(t, ctx, "showing web02", chromedp.Click(chromedp.CSS(`#legend li:nth-child(2) button`)))
		webWaitFor(t, ctx, "web02 to be shown", `!hourglass.chart.hidden.has('dc=lga, host=web02') && !location.search.includes('hide=')`)
		if !webPixelNear(t, ctx, series[1].T[15], series[1].V[15], series[1].Color) {
			t.Errorf("web02 is not drawn again after a second click")
		}
	})

	t.Run("tooltip", func(t *testing.T) {
		for _, j := range []int{3, 20} {
			x, y := webChartXY(t, ctx, float64(ts[j])+10_000, series[0].V[j])
			webRun(t, ctx, "hovering the chart", webMouse(chromedp.MouseMoved, x, y, 0, 0))
			webWaitFor(t, ctx, "the tooltip", fmt.Sprintf(`!document.querySelector('.chart-tip').hidden && document.querySelector('.chart-tip .tip-time').dataset.t === '%d'`, ts[j]))
			var tip struct {
				Time string
				Rows [][2]string
			}
			webEval(t, ctx, `({time: document.querySelector('.chart-tip .tip-time').textContent,
				rows: [...document.querySelectorAll('.chart-tip .tip-row')].map(r => [r.querySelector('.tip-label').textContent, r.querySelector('.tip-value').textContent])})`, &tip)
			if want := webLocal(t, ts[j]); tip.Time != want {
				t.Errorf("tooltip time %q, want %q (local time in %s)", tip.Time, want, webTZ)
			}
			// Sorted by value, highest first: web02 is above web01.
			want := [][2]string{{wantLabels[1], webFormat(sums["web02"][j].v)}, {wantLabels[0], webFormat(sums["web01"][j].v)}}
			if fmt.Sprint(tip.Rows) != fmt.Sprint(want) {
				t.Errorf("tooltip at point %d: %q, want %q", j, tip.Rows, want)
			}
		}
		webRun(t, ctx, "leaving the chart", webMouse(chromedp.MouseMoved, 2, 2, 0, 0))
		webWaitFor(t, ctx, "the tooltip to go", `document.querySelector('.chart-tip').hidden`)
	})

	checkTable := func(t *testing.T, ctx context.Context) {
		t.Helper()
		var tab struct {
			Head []string
			Rows [][]string
		}
		webEval(t, ctx, `({head: [...document.querySelectorAll('#table thead th')].map(th => th.textContent.trim()),
			rows: [...document.querySelectorAll('#table tbody tr')].map(tr => [...tr.children].map(td => td.textContent))})`, &tab)
		var zone string
		webEval(t, ctx, `Intl.DateTimeFormat().resolvedOptions().timeZone`, &zone)
		wantHead := []string{"time (" + zone + ")", wantLabels[0], wantLabels[1]}
		if fmt.Sprint(tab.Head) != fmt.Sprint(wantHead) {
			t.Errorf("table header %q, want %q", tab.Head, wantHead)
		}
		if len(tab.Rows) != len(ts) {
			t.Fatalf("table has %d rows, want %d", len(tab.Rows), len(ts))
		}
		for i, r := range tab.Rows {
			want := []string{webLocal(t, ts[i]), webFormat(sums["web01"][i].v), webFormat(sums["web02"][i].v)}
			if fmt.Sprint(r) != fmt.Sprint(want) {
				t.Errorf("table row %d: %q, want %q", i, r, want)
			}
		}
	}

	t.Run("table", func(t *testing.T) {
		webRun(t, ctx, "opening the table", chromedp.Click(chromedp.ID("view-table")))
		webWaitFor(t, ctx, "the table", `document.querySelectorAll('#table tbody tr').length > 0 && location.search.includes('view=table')`)
		checkTable(t, ctx)
	})

	t.Run("downloads", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
			t.Fatalf("allowing downloads: %v", err)
		}
		webRun(t, ctx, "downloading CSV", chromedp.Click(chromedp.ID("dl-csv")))
		csv := webDownloaded(t, dir, ".csv")
		var sb strings.Builder
		sb.WriteString("time,timestamp_ms," + `"` + wantLabels[0] + `","` + wantLabels[1] + `"` + "\n")
		for i, at := range ts {
			fmt.Fprintf(&sb, "%s,%d,%s,%s\n", time.UnixMilli(at).UTC().Format("2006-01-02T15:04:05.000Z"), at,
				webFormat(sums["web01"][i].v), webFormat(sums["web02"][i].v))
		}
		if csv != sb.String() {
			t.Errorf("CSV download:\n%s\nwant:\n%s", csv, sb.String())
		}
		webRun(t, ctx, "downloading JSON", chromedp.Click(chromedp.ID("dl-json")))
		var doc struct {
			Series []struct {
				Name string
				Tags map[string]string
				Dps  [][2]float64
			}
		}
		if err := json.Unmarshal([]byte(webDownloaded(t, dir, ".json")), &doc); err != nil {
			t.Fatalf("JSON download: %v", err)
		}
		if len(doc.Series) != 2 {
			t.Fatalf("JSON download has %d series, want 2", len(doc.Series))
		}
		for i, s := range doc.Series {
			if s.Name != wantLabels[i] || s.Tags["host"] != []string{"web01", "web02"}[i] || len(s.Dps) != len(ts) {
				t.Errorf("JSON series %d: %q %v with %d points", i, s.Name, s.Tags, len(s.Dps))
				continue
			}
			for j, p := range wantPts[i] {
				if s.Dps[j] != [2]float64{float64(p.t), p.v} {
					t.Errorf("JSON series %d point %d: %v, want [%d %v]", i, j, s.Dps[j], p.t, p.v)
				}
			}
		}
	})

	// The page's URL, opened in another tab, gives the same view.
	var shared string
	webEval(t, ctx, `location.href`, &shared)
	t.Run("shared URL", func(t *testing.T) {
		ctx2 := b.newTab(1440, 1100)
		webRun(t, ctx2, "opening the shared URL", chromedp.Navigate(shared))
		if st := webWaitRun(t, ctx2, 0); st != "ready" {
			t.Fatalf("the shared URL %s ends %q, want ready", shared, st)
		}
		checkSeries(t, ctx2, 0, 30)
		checkTable(t, ctx2)
		var controls []string
		webEval(t, ctx2, `[document.getElementById('metric').value, document.getElementById('agg').value,
			document.querySelector('#filters .tagk').value, document.querySelector('#filters .ftype').value,
			document.querySelector('#filters .tagv').value, document.getElementById('groupby').value]`, &controls)
		if want := []string{"web.test.cpu", "sum", "dc", "literal_or", "lga", "host"}; fmt.Sprint(controls) != fmt.Sprint(want) {
			t.Errorf("the shared URL's controls: %q, want %q", controls, want)
		}
		var legend []string
		webEval(t, ctx2, `[...document.querySelectorAll('#legend .legend-label')].map(l => l.textContent)`, &legend)
		if fmt.Sprint(legend) != fmt.Sprint(wantLabels) {
			t.Errorf("the shared URL's legend: %q, want %q", legend, wantLabels)
		}
	})

	// Back to the chart: zoom by dragging, reset by double-clicking.
	webRun(t, ctx, "opening the chart", chromedp.Click(chromedp.ID("view-chart")))
	webWaitFor(t, ctx, "the chart", `!document.getElementById('chart-pane').hidden && hourglass.chart.plot.width > 500`)
	t.Run("zoom", func(t *testing.T) {
		x0, y := webChartXY(t, ctx, float64(ts[5]+ts[4])/2, series[0].V[10])
		x1, _ := webChartXY(t, ctx, float64(ts[15]+ts[16])/2, series[0].V[10])
		n := webRunCount(t, ctx)
		webRun(t, ctx, "dragging across the chart",
			webMouse(chromedp.MouseMoved, x0, y, 0, 0),
			webMouse(chromedp.MousePressed, x0, y, 1, 1),
			webMouse(chromedp.MouseMoved, (x0+x1)/2, y, 1, 0),
			webMouse(chromedp.MouseMoved, x1, y, 1, 0),
			webMouse(chromedp.MouseReleased, x1, y, 0, 1))
		if st := webWaitRun(t, ctx, n); st != "ready" {
			t.Fatalf("after the zoom the page is %q", st)
		}
		checkSeries(t, ctx, 5, 16)
		var q struct{ From, To string }
		webEval(t, ctx, `({from: new URLSearchParams(location.search).get('from'), to: new URLSearchParams(location.search).get('to')})`, &q)
		from, err1 := time.Parse(time.RFC3339, q.From)
		to, err2 := time.Parse(time.RFC3339, q.To)
		if err1 != nil || err2 != nil || from.UnixMilli() <= ts[4] || from.UnixMilli() >= ts[5] || to.UnixMilli() <= ts[15] || to.UnixMilli() >= ts[16] {
			t.Errorf("zoomed URL range %q – %q, want between points 4-5 and 15-16", q.From, q.To)
		}
		n = webRunCount(t, ctx)
		webRun(t, ctx, "double-clicking the chart",
			webMouse(chromedp.MousePressed, x0, y, 1, 1), webMouse(chromedp.MouseReleased, x0, y, 0, 1),
			webMouse(chromedp.MousePressed, x0, y, 1, 2), webMouse(chromedp.MouseReleased, x0, y, 0, 2))
		if st := webWaitRun(t, ctx, n); st != "ready" {
			t.Fatalf("after the double click the page is %q", st)
		}
		checkSeries(t, ctx, 0, 30)
		webWaitFor(t, ctx, "the relative range back in the URL", `location.search.includes('range=1h') && !location.search.includes('from=')`)
	})

	t.Run("refresh", func(t *testing.T) {
		// With a refresh period, a range that ends now is queried again by
		// itself, and the period is in the URL.
		n := webRunCount(t, ctx)
		webRun(t, ctx, "refreshing every 5s", webJS(`(() => { const r = document.getElementById('refresh');
			r.value = '5s'; r.dispatchEvent(new Event('change')); })()`))
		webWaitFor(t, ctx, "the refresh period in the URL", `location.search.includes('refresh=5s')`)
		if st := webWaitRun(t, ctx, n); st != "ready" {
			t.Fatalf("the refreshed query ends %q", st)
		}
		checkSeries(t, ctx, 0, 30)
		webRun(t, ctx, "no refresh", webJS(`(() => { const r = document.getElementById('refresh');
			r.value = ''; r.dispatchEvent(new Event('change')); })()`))
		webWaitFor(t, ctx, "no refresh period in the URL", `!location.search.includes('refresh=')`)
	})

	t.Run("errors", func(t *testing.T) {
		// A metric never written: said next to the metric field.
		n := webRunCount(t, ctx)
		webRun(t, ctx, "typing an unknown metric", webSetValue("metric", ""),
			chromedp.SendKeys(chromedp.ID("metric"), "web.test.nosuch"+kb.Enter))
		if st := webWaitRun(t, ctx, n); st != "error" {
			t.Fatalf("an unknown metric ends %q, want error", st)
		}
		var msg string
		webEval(t, ctx, `document.querySelector('.err[data-for=metric]').textContent`, &msg)
		if !strings.Contains(msg, "No metric named “web.test.nosuch” has been written") {
			t.Errorf("error next to the metric: %q", msg)
		}
		// A bad regular expression: said in the filter's row.
		n = webRunCount(t, ctx)
		webRun(t, ctx, "a regexp filter",
			webSetValue("metric", "web.test.cpu"),
			webJS(`(() => { const s = document.querySelector('#filters .ftype'); s.value = 'regexp';
				document.querySelector('#filters .tagv').value = 'l[a'; s.dispatchEvent(new Event('change')); })()`))
		if st := webWaitRun(t, ctx, n); st != "error" {
			t.Fatalf("a bad regexp ends %q, want error", st)
		}
		webEval(t, ctx, `document.querySelector('#filters .filter .err').textContent`, &msg)
		if !strings.Contains(msg, "This is not a valid regular expression") {
			var all []string
			webEval(t, ctx, `[...document.querySelectorAll('.err')].map(e => e.textContent).filter(Boolean)`, &all)
			t.Errorf("error in the filter row: %q; the page's errors: %q", msg, all)
		}
		// A time range with no data: the page says so.
		n = webRunCount(t, ctx)
		webRun(t, ctx, "a range with no data", webJS(fmt.Sprintf(`(() => {
			document.querySelector('#filters .ftype').value = 'literal_or';
			document.querySelector('#filters .tagv').value = 'lga';
			const f = document.getElementById('from'), to = document.getElementById('to');
			to.value = %q; f.value = %q; f.dispatchEvent(new Event('change')); })()`,
			strings.Replace(webLocal(t, ts[0]-3_600_000), " ", "T", 1), strings.Replace(webLocal(t, ts[0]-7_200_000), " ", "T", 1))))
		if st := webWaitRun(t, ctx, n); st != "empty" {
			t.Fatalf("a range with no data ends %q, want empty", st)
		}
		webEval(t, ctx, `document.getElementById('message').textContent`, &msg)
		if !strings.HasPrefix(msg, "No data: no series of “web.test.cpu” match") {
			t.Errorf("message for no data: %q", msg)
		}
	})

	t.Run("PromQL", func(t *testing.T) {
		n := webRunCount(t, ctx)
		webRun(t, ctx, "switching to PromQL", chromedp.Click(chromedp.ID("mode-promql")))
		webWaitRun(t, ctx, n) // the empty expression is refused
		var msg string
		webEval(t, ctx, `document.querySelector('.err[data-for=expr]').textContent`, &msg)
		if !strings.Contains(msg, "Write a PromQL expression") {
			t.Errorf("error for an empty expression: %q", msg)
		}
		n = webRunCount(t, ctx)
		webRun(t, ctx, "a bad expression", chromedp.SendKeys(chromedp.ID("expr"), `sum(web.test.cpu`+kb.Enter),
			chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		if st := webWaitRun(t, ctx, n); st != "error" {
			t.Fatalf("a bad expression ends %q, want error", st)
		}
		webEval(t, ctx, `document.querySelector('.err[data-for=expr]').textContent`, &msg)
		if !strings.Contains(msg, "syntax error") || !strings.Contains(msg, `{__name__="sys.cpu.user"}`) {
			t.Errorf("error for a bad expression: %q", msg)
		}
		// A good one over the data's range, one step a minute.
		n = webRunCount(t, ctx)
		webRun(t, ctx, "a PromQL query", webSetValue("expr", ""),
			chromedp.SendKeys(chromedp.ID("expr"), `sum by (host) ({__name__="web.test.cpu", dc="lga"})`),
			webSetValue("step", "1m"),
			webJS(fmt.Sprintf(`(() => { const f = document.getElementById('from'), to = document.getElementById('to');
				to.value = %q; f.value = %q; f.dispatchEvent(new Event('change')); })()`,
				strings.Replace(webLocal(t, ts[len(ts)-1]), " ", "T", 1), strings.Replace(webLocal(t, ts[0]), " ", "T", 1))))
		if st := webWaitRun(t, ctx, n); st != "ready" {
			t.Fatalf("the PromQL query ends %q, want ready", st)
		}
		got := webChartSeries(t, ctx)
		wantProm := []string{`{host="web01"}`, `{host="web02"}`}
		if len(got) != 2 {
			t.Fatalf("PromQL: %d series, want 2: %+v", len(got), got)
		}
		for i, g := range got {
			if g.Label != wantProm[i] || len(g.T) != len(ts) {
				t.Errorf("PromQL series %d: %q with %d points, want %q with %d", i, g.Label, len(g.T), wantProm[i], len(ts))
				continue
			}
			for j, p := range wantPts[i] {
				if g.T[j] != p.t || g.V[j] != p.v {
					t.Errorf("PromQL series %s point %d: (%d, %v), want (%d, %v)", g.Label, j, g.T[j], g.V[j], p.t, p.v)
				}
			}
		}
		// Its URL gives the same view in another tab.
		var u string
		webEval(t, ctx, `location.href`, &u)
		ctx3 := b.newTab(1440, 1100)
		webRun(t, ctx3, "opening the PromQL URL", chromedp.Navigate(u))
		if st := webWaitRun(t, ctx3, 0); st != "ready" {
			t.Fatalf("the PromQL URL ends %q", st)
		}
		if fmt.Sprint(webChartSeries(t, ctx3)) != fmt.Sprint(got) {
			t.Errorf("the PromQL URL shows other series than the page it came from")
		}
	})

	t.Run("formatting", func(t *testing.T) {
		// The axes' pure functions, in the browser's time zone.
		var r struct {
			SI     []string
			Axis   []string
			Small  []string
			Ticks  []int64
			Labels []string
		}
		from := time.Date(2026, 3, 1, 10, 7, 0, 0, time.UTC).UnixMilli()
		webEval(t, ctx, fmt.Sprintf(`import('/web/format.js').then(f => ({
			si: [f.formatSI(1500), f.formatSI(0.002), f.formatSI(-2.5e9), f.formatSI(0)],
			axis: f.valueAxis(0, 1.4e6, 300, 30).labels,
			small: f.valueAxis(0.001, 0.0042, 300, 60).labels,
			ticks: f.timeAxis(%d, %d, 1000, 90).ticks.map(k => k.t),
			labels: f.timeAxis(%d, %d, 1000, 90).ticks.map(k => k.label + (k.date ? '|' + k.date : '')),
		}))`, from, from+6*3_600_000, from, from+6*3_600_000), &r)
		if want := []string{"1.5k", "2m", "-2.5G", "0"}; fmt.Sprint(r.SI) != fmt.Sprint(want) {
			t.Errorf("formatSI: %q, want %q", r.SI, want)
		}
		if want := []string{"0", "0.2M", "0.4M", "0.6M", "0.8M", "1M", "1.2M", "1.4M"}; fmt.Sprint(r.Axis) != fmt.Sprint(want) {
			t.Errorf("value axis 0..1.4e6: %q, want %q", r.Axis, want)
		}
		if want := []string{"1m", "2m", "3m", "4m", "5m"}; fmt.Sprint(r.Small) != fmt.Sprint(want) {
			t.Errorf("value axis 0.001..0.0042: %q, want %q", r.Small, want)
		}
		loc, _ := time.LoadLocation(webTZ)
		if len(r.Ticks) < 6 || len(r.Ticks) != len(r.Labels) {
			t.Fatalf("time axis over 6h: ticks %v labels %q", r.Ticks, r.Labels)
		}
		for i, tk := range r.Ticks {
			lt := time.UnixMilli(tk).In(loc)
			if lt.Second() != 0 || lt.Minute()%30 != 0 {
				t.Errorf("tick %d at %s: not on a whole local half hour", i, lt)
			}
			want := lt.Format("15:04")
			if i == 0 {
				want += "|" + lt.Format("Jan 2")
			}
			if r.Labels[i] != want {
				t.Errorf("tick %d label %q, want %q", i, r.Labels[i], want)
			}
		}
	})

	t.Run("themes and widths", func(t *testing.T) {
		for _, c := range []struct {
			scheme string
			width  int64
			dark   bool
		}{{"light", 1280, false}, {"dark", 1366, true}, {"dark", 1920, true}} {
			webRun(t, ctx, "emulating "+c.scheme,
				webCall(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: c.scheme}}}),
				webCall(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: c.width, Height: 800, DeviceScaleFactor: 1}))
			webWaitFor(t, ctx, "the chart to fit the width", fmt.Sprintf(`hourglass.chart.w > 0 && hourglass.chart.w <= %d && document.documentElement.scrollWidth <= innerWidth`, c.width))
			var lum float64
			webEval(t, ctx, `(() => { const m = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
				return (0.2126*m[0] + 0.7152*m[1] + 0.0722*m[2]) / 255; })()`, &lum)
			if (lum < 0.5) != c.dark {
				t.Errorf("%s theme: page background luminance %.2f", c.scheme, lum)
			}
		}
		webRun(t, ctx, "back to light", webCall(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}}))
	})

	t.Run("100 series of 10,000 points", func(t *testing.T) {
		// Measured, not asserted: the time to draw a million points, and that
		// decimation keeps the path to a few segments per pixel column.
		var st struct {
			Ms, HoverMs, PixelsMs, HighlightMs float64
			Points, Segs, Cols                 int
			Width, Series, Rasterized          int
		}
		webEval(t, ctx, `(() => {
			const c = hourglass.chart, n = 10000, end = Date.now(), start = end - n * 1000, ss = [];
			for (let k = 0; k < 100; k++) {
				const t = new Float64Array(n), v = new Float64Array(n);
				for (let i = 0; i < n; i++) { t[i] = start + i * 1000; v[i] = k * 10 + 5 * Math.sin(i / 300 + k) + (i * 7919 % 13) / 13; }
				ss.push({id: 's' + k, label: 'series ' + k, color: '#336699', t, v});
			}
			c.setData(ss, [start, end]);
			const t0 = performance.now();
			for (let i = 0; i < 5; i++) c.render();
			const ms = (performance.now() - t0) / 5;
			const h0 = performance.now();
			for (let i = 0; i < 20; i++) { c.hover = {x: c.plot.left + i * c.plot.width / 20, y: c.plot.top + 10}; c.drawTop(); }
			const hoverMs = (performance.now() - h0) / 20;
			c.hover = null; c.drawTop();
			// The time a frame takes to reach the canvas's pixels, too.
			const f0 = performance.now();
			for (let i = 0; i < 3; i++) { c.render(); c.canvas.getContext('2d').getImageData(0, 0, 1, 1); }
			const pixelsMs = (performance.now() - f0) / 3;
			const hl0 = performance.now();
			c.highlight('s50'); c.canvas.getContext('2d').getImageData(0, 0, 1, 1);
			const highlightMs = performance.now() - hl0;
			c.highlight(null);
			const st = c.stats;
			return {ms, hoverMs, pixelsMs, highlightMs, points: st.points, segs: st.segments, cols: st.columns,
				width: Math.round(c.plot.width), series: st.series, rasterized: st.rasterized};
		})()`, &st)
		t.Logf("100 series × 10,000 points: %.1f ms a frame (%.1f ms to the pixels, %.1f ms to highlight one series), %.2f ms a crosshair move; "+
			"%d points drawn as %d path segments and %d pixel columns over %d px",
			st.Ms, st.PixelsMs, st.HighlightMs, st.HoverMs, st.Points, st.Segs, st.Cols, st.Width)
		if st.Points < 1_000_000 || st.Series != 100 || st.Rasterized != 100 {
			t.Errorf("drew %d points of %d series (%d as pixel columns), want 1,000,000 of 100, all as columns", st.Points, st.Series, st.Rasterized)
		}
		if st.Segs+st.Cols > 100*3*(st.Width+2) {
			t.Errorf("%d path segments and %d columns for %d px: not decimated per pixel column", st.Segs, st.Cols, st.Width)
		}
		// What is drawn is where the points are: series 50 alone, in its
		// colour at its points and nowhere 40 px above or below them.
		webRun(t, ctx, "showing one series", webJS(`(() => { const c = hourglass.chart;
			c.setHidden(c.series.filter(s => s.id !== 's50').map(s => s.id)); })()`))
		var probe struct{ On, Off int }
		webEval(t, ctx, `(() => {
			const c = hourglass.chart, s = c.series[50], g = c.canvas.getContext('2d');
			const near = (x, y) => Array.from(g.getImageData(Math.round(x) - 1, Math.round(y) - 1, 3, 3).data)
				.some((v, i, a) => i % 4 === 0 && Math.abs(a[i] - 0x33) + Math.abs(a[i+1] - 0x66) + Math.abs(a[i+2] - 0x99) < 40 && a[i+3] > 200);
			let on = 0, off = 0;
			for (let i = 100; i < 10000; i += 99) {
				const p = c.toPixel(s.t[i], s.v[i]);
				if (near(p.x, p.y)) on++;
				if (near(p.x, p.y - 40) || near(p.x, p.y + 40)) off++;
			}
			return {on, off};
		})()`, &probe)
		if probe.On != 100 || probe.Off != 0 {
			t.Errorf("series 50 alone: drawn at %d of 100 of its points, and at %d places 40 px away", probe.On, probe.Off)
		}
	})

	b.checkNoErrors()
}

// TestWebScreenshot writes the README's screenshot of the page with real
// data when HOURGLASS_WEB_SCREENSHOT names the file:
//
//	HOURGLASS_WEB_SCREENSHOT=$PWD/docs/web.png go test ./e2e -run TestWebScreenshot
func TestWebScreenshot(t *testing.T) {
	out := os.Getenv("HOURGLASS_WEB_SCREENSHOT")
	if out == "" {
		t.Skip("set HOURGLASS_WEB_SCREENSHOT to the PNG to write")
	}
	webChromium(t)
	s := start(t, t.TempDir())
	// Six hosts in two data centres, a point every 30 s for six hours.
	now := time.Now().Truncate(30 * time.Second)
	var pts []map[string]any
	for h := 0; h < 6; h++ {
		host, dc := fmt.Sprintf("web%02d", h+1), []string{"lga", "sjc"}[h/3]
		for i := 0; i < 720; i++ {
			at := now.Add(time.Duration(i-720) * 30 * time.Second)
			day := math.Sin(2*math.Pi*float64(i)/720 + float64(h))
			noise := math.Sin(float64(i*(h+3))*1.7) * 2.5
			pts = append(pts, map[string]any{"metric": "sys.cpu.user", "timestamp": at.Unix(),
				"value": math.Round((30+float64(h)*6+14*day+noise)*100) / 100, "tags": map[string]string{"host": host, "dc": dc}})
		}
	}
	webPut(t, s, pts)
	b := webStartBrowser(t, 1440, 980)
	ctx := b.ctx
	webRun(t, ctx, "opening the page", chromedp.Navigate(s.url+"/?m=sys.cpu.user&agg=avg&ds=2m-avg-none&fg=dc~literal_or~lga|sjc&g=host&range=6h"))
	if st := webWaitRun(t, ctx, 0); st != "ready" {
		t.Fatalf("the page ends %q", st)
	}
	webWaitFor(t, ctx, "the status panel", `document.getElementById('status').dataset.series === '6'`)
	x, y := webChartXY(t, ctx, float64(now.Add(-150*time.Minute).UnixMilli()), 40)
	webRun(t, ctx, "hovering", webMouse(chromedp.MouseMoved, x, y, 0, 0))
	webWaitFor(t, ctx, "the tooltip", `!document.querySelector('.chart-tip').hidden`)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("taking the screenshot: %v", err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	b.checkNoErrors()
}
