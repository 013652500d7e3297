package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// webTZ is the browser's time zone: not UTC and not a whole number of hours
// from it, so a time shown in UTC, or ticks aligned on UTC hours, show up.
const webTZ = "Asia/Kolkata"

// webChromium returns the path of Chromium, or ends the test: it fails in
// CI (which installs the package) and is skipped elsewhere, saying how to
// get the browser.
func webChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the browser test needs Chromium, which is not installed: run `apt-get install chromium` (Debian's package)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// webBrowser is one headless Chromium with a fresh profile.
type webBrowser struct {
	t      *testing.T
	ctx    context.Context // the first tab
	mu     sync.Mutex
	errors []string // exceptions and console errors of every tab
}

func webStartBrowser(t *testing.T, width, height int) *webBrowser {
	t.Helper()
	exe := webChromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	// Everything the test does is bounded by this context.
	base, cancelBase := context.WithTimeout(context.Background(), 8*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	b := &webBrowser{t: t, ctx: ctx}
	t.Cleanup(func() { cancelCtx(); cancelAlloc(); cancelBase() })
	b.setupTab(ctx, width, height)
	return b
}

// setupTab collects the tab's errors and sets its time zone and size.
func (b *webBrowser) setupTab(ctx context.Context, width, height int) {
	b.t.Helper()
	if err := chromedp.Do(ctx,
		webCall(emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: webTZ}),
		webCall(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: int64(width), Height: int64(height), DeviceScaleFactor: 1}),
	); err != nil {
		b.t.Fatalf("starting Chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			msg = "console.error:"
			for _, a := range e.Args {
				msg += " " + string(a.Value) + a.Description
			}
		default:
			return
		}
		b.mu.Lock()
		b.errors = append(b.errors, msg)
		b.mu.Unlock()
	})
	if err != nil {
		b.t.Fatalf("listening to the tab: %v", err)
	}
}

// newTab opens another tab of the same browser.
func (b *webBrowser) newTab(width, height int) context.Context {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	b.setupTab(ctx, width, height)
	return ctx
}

// checkNoErrors fails the test if the page threw or logged an error.
func (b *webBrowser) checkNoErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		// A failed request for a missing favicon or an API error the page
		// shows is logged by Chromium itself, not the page: those are not
		// console.error calls.
		b.t.Errorf("the page reported an error: %s", e)
	}
	b.errors = nil
}

// webCall is an action that sends one protocol command to the tab.
func webCall[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

// webSetValue sets an input's value as a script would, with no events: the
// keys typed next, or the change event of another control, use it.
func webSetValue(id, v string) chromedp.Action[chromedp.Void] {
	return webJS(fmt.Sprintf(`document.getElementById(%q).value = %q`, id, v))
}

// webJS is an action that runs JavaScript for its effects.
func webJS(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise)(ctx, t)
		return err
	})
}

func webRun(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// webEval evaluates a JavaScript expression (awaiting a promise) into out.
func webEval(t *testing.T, ctx context.Context, js string, out any) {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("evaluating %s: decoding %s: %v", js, raw, err)
		}
	}
}

// webTry evaluates a boolean JavaScript expression; errors are false.
func webTry(ctx context.Context, js string) bool {
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	return err == nil && ok
}

// webWaitFor polls a JavaScript condition until it holds, for at most a minute.
func webWaitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if webTry(ctx, "!!("+cond+")") {
			return
		}
		if time.Now().After(deadline) {
			diag, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({state: document.body && document.body.dataset.state, run: document.body && document.body.dataset.run,
				message: (document.getElementById('message')||{}).textContent,
				errors: [...document.querySelectorAll('.err')].map(e => e.textContent).filter(Boolean), url: location.href})`))
			t.Fatalf("waiting for %s: not so after a minute; page: %s", what, diag)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webRunCount is how many queries the page has finished.
func webRunCount(t *testing.T, ctx context.Context) int {
	t.Helper()
	var s string
	webEval(t, ctx, `document.body.dataset.run`, &s)
	n, _ := strconv.Atoi(s)
	return n
}

// webWaitRun waits for the page to finish a query after the one counted
// as before, and returns the state it ended in: ready, empty or error.
func webWaitRun(t *testing.T, ctx context.Context, before int) string {
	t.Helper()
	webWaitFor(t, ctx, fmt.Sprintf("query %d to finish", before+1),
		fmt.Sprintf(`Number(document.body.dataset.run) > %d && document.body.dataset.state !== 'loading'`, before))
	var st string
	webEval(t, ctx, `document.body.dataset.state`, &st)
	return st
}

// webWaitList waits for the autocomplete list of the input sel to be open
// and to offer exactly the names in want (comma-separated).
func webWaitList(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	webWaitFor(t, ctx, fmt.Sprintf("the autocomplete of %s to offer %s", sel, want), fmt.Sprintf(`(() => {
		const l = document.querySelector(%q).parentElement.querySelector('.ac-list');
		return !l.hidden && [...l.children].map(li => li.textContent).join(',') === %q; })()`, sel, want))
}

// webSeries is a series as the chart holds it.
type webSeries struct {
	ID     string    `json:"id"`
	Label  string    `json:"label"`
	Color  string    `json:"color"`
	Hidden bool      `json:"hidden"`
	T      []int64   `json:"t"`
	V      []float64 `json:"v"`
}

func webChartSeries(t *testing.T, ctx context.Context) []webSeries {
	t.Helper()
	var out []webSeries
	webEval(t, ctx, `hourglass.chart.series.map(s => ({id: s.id, label: s.label, color: s.color,
		hidden: hourglass.chart.hidden.has(s.id), t: Array.from(s.t), v: Array.from(s.v)}))`, &out)
	return out
}

// webPoint is one written point of the test data.
type webPoint struct {
	t int64
	v float64
}

// webLocal formats t as the page does in the browser's time zone.
func webLocal(t *testing.T, ms int64) string {
	t.Helper()
	loc, err := time.LoadLocation(webTZ)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms).In(loc).Format("2006-01-02 15:04:05")
}

// webFormat formats a value as the page's tooltip and table do.
func webFormat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func webPut(t *testing.T, s *server, pts []map[string]any) {
	t.Helper()
	for i := 0; i < len(pts); i += 5000 {
		code, body := s.postJSON("/api/put", pts[i:min(i+5000, len(pts))])
		if code != http.StatusNoContent {
			t.Fatalf("put: %d %s", code, body)
		}
	}
}

// webPixelNear reports whether a pixel within a pixel of (t, v), where the
// chart says it drew that point, has the colour want (#rrggbb).
func webPixelNear(t *testing.T, ctx context.Context, ts int64, v float64, want string) bool {
	t.Helper()
	var px []int
	webEval(t, ctx, fmt.Sprintf(`(() => {
		const c = hourglass.chart, p = c.toPixel(%d, %v), d = c.dpr;
		const x = Math.round(p.x * d), y = Math.round(p.y * d);
		return Array.from(c.canvas.getContext('2d').getImageData(x - 1, y - 1, 3, 3).data);
	})()`, ts, v), &px)
	r, _ := strconv.ParseUint(want[1:3], 16, 8)
	g, _ := strconv.ParseUint(want[3:5], 16, 8)
	b, _ := strconv.ParseUint(want[5:7], 16, 8)
	for i := 0; i+3 < len(px); i += 4 {
		d := abs(px[i]-int(r)) + abs(px[i+1]-int(g)) + abs(px[i+2]-int(b))
		if d <= 40 && px[i+3] > 200 {
			return true
		}
	}
	return false
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// webChartXY is the viewport point where the chart draws (ts, v).
func webChartXY(t *testing.T, ctx context.Context, ts float64, v float64) (float64, float64) {
	t.Helper()
	var xy []float64
	webEval(t, ctx, fmt.Sprintf(`(() => {
		const c = hourglass.chart, r = c.top.getBoundingClientRect(), p = c.toPixel(%v, %v);
		return [r.left + p.x, r.top + p.y];
	})()`, ts, v), &xy)
	return xy[0], xy[1]
}

// webMouse sends one mouse event at viewport (x, y) with the left button
// down (buttons 1) or up (0), and a click count.
func webMouse(typ input.DispatchMouseEventType, x, y float64, buttons int64, clicks int64) chromedp.Action[chromedp.Void] {
	return chromedp.MouseEvent(typ, x, y, func(p *input.DispatchMouseEventParams) {
		if typ != chromedp.MouseMoved || buttons != 0 {
			p.Button = input.MouseButtonLeft
		}
		p.Buttons = buttons
		p.ClickCount = clicks
	})
}

// webTestData writes the test's points: two series per host (core=0, core=1)
// of web.test.cpu, hosts web01 and web02 in dc=lga and web03 in dc=sjc, one
// point a minute for 30 minutes; and a series of another metric whose tags
// the autocomplete must not offer for web.test.cpu. It returns the
// timestamps and, per host, the sum over its cores.
func webTestData(t *testing.T, s *server) ([]int64, map[string][]webPoint) {
	t.Helper()
	base := time.Now().Truncate(time.Minute).Add(-40 * time.Minute).UnixMilli()
	var ts []int64
	sums := map[string][]webPoint{}
	var pts []map[string]any
	add := func(ts int64, v float64, tags map[string]string, metric string) {
		pts = append(pts, map[string]any{"metric": metric, "timestamp": ts, "value": v, "tags": tags})
	}
	for i := 0; i < 30; i++ {
		at := base + int64(i)*60_000
		ts = append(ts, at)
		c := map[string][2]float64{
			"web01": {10 + float64(i), 0.5 * float64(i)},
			"web02": {50 + 2*float64(i), 0.25},
			"web03": {200, 1},
		}
		for h, v := range c {
			dc := "lga"
			if h == "web03" {
				dc = "sjc"
			}
			add(at, v[0], map[string]string{"host": h, "dc": dc, "core": "0"}, "web.test.cpu")
			add(at, v[1], map[string]string{"host": h, "dc": dc, "core": "1"}, "web.test.cpu")
			sums[h] = append(sums[h], webPoint{at, v[0] + v[1]})
		}
		add(at, 7, map[string]string{"host": "web99", "dc": "zzz"}, "web.test.mem")
	}
	webPut(t, s, pts)
	return ts, sums
}

// webRGB turns #rrggbb into CSS's computed form.
func webRGB(hex string) string {
	r, _ := strconv.ParseUint(hex[1:3], 16, 8)
	g, _ := strconv.ParseUint(hex[3:5], 16, 8)
	b, _ := strconv.ParseUint(hex[5:7], 16, 8)
	return fmt.Sprintf("rgb(%d, %d, %d)", r, g, b)
}

// webDownloaded waits for a finished download with the extension and
// returns its content, removing it.
func webDownloaded(t *testing.T, dir, ext string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
		if len(m) == 1 {
			b, err := os.ReadFile(m[0])
			if err == nil && len(b) > 0 {
				os.Remove(m[0])
				return string(b)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s download in %s after a minute (found %v)", ext, dir, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
