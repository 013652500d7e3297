package e2e

import (
	"context"
	"testing"
)

// webCheckCardinality opens the page's cardinality panel and checks its
// tables against the series webTestData wrote: web.test.cpu has 6 series
// and web.test.mem 1; host has 4 values, dc 3, core and __name__ 2.
func webCheckCardinality(t *testing.T, ctx context.Context) {
	t.Helper()
	webRun(t, ctx, "opening the cardinality panel", webJS(`document.getElementById('cardinality').open = true`))
	webWaitFor(t, ctx, "the cardinality panel to load", `document.getElementById('cardinality').dataset.state === 'done'`)
	rows := func(id string) [][2]string {
		var out [][2]string
		webEval(t, ctx, `[...document.querySelectorAll('#`+id+` tr')].map(tr => [tr.cells[0].textContent, tr.cells[1].textContent])`, &out)
		return out
	}
	wantRows := func(id string, want [][2]string) {
		t.Helper()
		got := rows(id)
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", id, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s row %d: %v, want %v", id, i, got[i], want[i])
			}
		}
	}
	wantRows("card-metrics", [][2]string{{"web.test.cpu", "6"}, {"web.test.mem", "1"}})
	wantRows("card-labels", [][2]string{{"host", "4"}, {"dc", "3"}, {"__name__", "2"}, {"core", "2"}})
	var msg, href string
	webEval(t, ctx, `document.getElementById('card-message').textContent`, &msg)
	webEval(t, ctx, `document.querySelector('#card-metrics a').getAttribute('href')`, &href)
	if msg == "" || href != "/?m=web.test.cpu" {
		t.Errorf("panel message %q, first metric's link %q", msg, href)
	}
}
