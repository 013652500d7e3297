package series_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// openLimited is openEnv with the series limits lim.
func openLimited(t *testing.T, dir string, lim series.SeriesLimits, mod func(*series.Options)) *env {
	t.Helper()
	e := openEnv(t, dir, mod)
	e.head.SetSeriesLimits(lim, nil)
	return e
}

func node(metric string, i int) series.Labels {
	return series.MakeLabels(metric, []series.Tag{{Key: "node", Value: fmt.Sprintf("n%05d", i)}})
}

// appendSome appends one point per series and returns each point's error.
func appendSome(t *testing.T, h *series.Head, req *series.Request, ls ...series.Labels) []error {
	t.Helper()
	samples := make([]series.Sample, len(ls))
	for i, l := range ls {
		samples[i] = series.Sample{Labels: l, T: t0, V: chunk.Int(int64(i))}
	}
	errs := make([]error, len(samples))
	if err := h.AppendRequest(context.Background(), samples, errs, req); err != nil {
		t.Fatal(err)
	}
	return errs
}

// refusedBy checks that exactly the points at refused were refused, by flag.
func refusedBy(t *testing.T, errs []error, flag string, refused ...int) {
	t.Helper()
	want := map[int]bool{}
	for _, i := range refused {
		want[i] = true
	}
	for i, err := range errs {
		var le *series.SeriesLimitError
		switch {
		case want[i] && !(errors.As(err, &le) && le.Flag == flag && errors.Is(err, series.ErrSeriesLimit)):
			t.Errorf("point %d: got %v, want a refusal by %s", i, err, flag)
		case !want[i] && err != nil:
			t.Errorf("point %d: %v", i, err)
		}
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// assertNothingOf checks that the series l left no trace: no UID for its
// node value, no entry in the index, in memory or in the store.
func assertNothingOf(t *testing.T, e *env, l series.Labels) {
	t.Helper()
	v, _ := l.Get("node")
	if _, err := e.uids.GetID(context.Background(), nil, uid.TagV, v); !errors.Is(err, uid.ErrNoSuchName) {
		t.Errorf("%s: the refused series' tag value has a UID (err %v)", l, err)
	}
	found := false
	e.index.All("", func(en *series.Entry) bool {
		found = en.Labels == l
		return !found
	})
	if found {
		t.Errorf("%s: the refused series is in the index", l)
	}
}

// indexRows counts the series rows in the store's index table.
func indexRows(t *testing.T, e *env) int {
	t.Helper()
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := e.st.Scan(context.Background(), store.TableIndex, []store.KeyRange{{Start: []byte{}}}, func(c store.Cell) bool {
		if string(c.Qualifier) == "l" {
			n++
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMaxSeriesRefusesNewSeriesAndCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	e := openLimited(t, dir, series.SeriesLimits{MaxSeries: 10}, nil)
	var ls []series.Labels
	for i := range 15 {
		ls = append(ls, node("m", i))
	}
	refusedBy(t, appendSome(t, e.head.Head, nil, ls...), "-max-series", seq(10, 15)...)
	if n := e.index.Len(); n != 10 {
		t.Fatalf("index holds %d series, want 10", n)
	}
	for _, l := range ls[10:] {
		assertNothingOf(t, e, l)
	}
	if n := indexRows(t, e); n != 10 {
		t.Fatalf("the store's index has %d series, want 10", n)
	}
	// Points of existing series go on being stored, new ones refused.
	refusedBy(t, appendSome(t, e.head.Head, nil, ls[3], node("m", 99), ls[9]), "-max-series", 1)
	e.close()

	// After a restart the series come from the index, not the head: still
	// existing, still accepted; new ones still refused.
	e = openLimited(t, dir, series.SeriesLimits{MaxSeries: 10}, nil)
	defer e.close()
	refusedBy(t, appendSome(t, e.head.Head, nil, ls[0], ls[12], ls[5]), "-max-series", 1)
	assertNothingOf(t, e, ls[12])
	if n := e.index.Len(); n != 10 {
		t.Fatalf("index holds %d series after the restart, want 10", n)
	}
}

func TestMaxSeriesPerMetric(t *testing.T) {
	e := openLimited(t, t.TempDir(), series.SeriesLimits{MaxSeriesPerMetric: 3}, nil)
	defer e.close()
	errs := appendSome(t, e.head.Head, nil, node("a", 0), node("a", 1), node("b", 0), node("a", 2), node("a", 3), node("b", 1), node("a", 4))
	refusedBy(t, errs, "-max-series-per-metric", 4, 6)
	var le *series.SeriesLimitError
	if errors.As(errs[4], &le); le.Metric != "a" {
		t.Fatalf("the refusal names metric %q, want a: %v", le.Metric, errs[4])
	}
	assertNothingOf(t, e, node("a", 3))
	if n := e.index.Len(); n != 5 {
		t.Fatalf("index holds %d series, want 5", n)
	}
}

func TestMaxNewSeriesPerMinute(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(t0)
	e := openLimited(t, t.TempDir(), series.SeriesLimits{MaxNewSeriesPerMinute: 6}, func(o *series.Options) {
		o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	defer e.close()
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	var ls []series.Labels
	for i := range 20 {
		ls = append(ls, node("m", i))
	}
	refusedBy(t, appendSome(t, e.head.Head, nil, ls[:8]...), "-max-new-series-per-minute", 6, 7)
	// Half a minute refills half the bucket: 3 more.
	advance(30 * time.Second)
	refusedBy(t, appendSome(t, e.head.Head, nil, ls[8:13]...), "-max-new-series-per-minute", 3, 4)
	// Existing series are not rate limited.
	refusedBy(t, appendSome(t, e.head.Head, nil, ls[0], ls[1], ls[8]), "")
	// A long pause fills the bucket, no further than its size.
	advance(time.Hour)
	refusedBy(t, appendSome(t, e.head.Head, nil, ls[13:20]...), "-max-new-series-per-minute", 6)
	if n := e.index.Len(); n != 15 {
		t.Fatalf("index holds %d series, want 15", n)
	}
	assertNothingOf(t, e, ls[19])
}

func TestMaxNewSeriesPerRequest(t *testing.T) {
	e := openLimited(t, t.TempDir(), series.SeriesLimits{MaxNewSeriesPerRequest: 4}, nil)
	defer e.close()
	var req series.Request
	// One request in two appends: four new series in all.
	refusedBy(t, appendSome(t, e.head.Head, &req, node("m", 0), node("m", 1), node("m", 2)), "")
	refusedBy(t, appendSome(t, e.head.Head, &req, node("m", 3), node("m", 4), node("m", 0)), "-max-new-series-per-request", 1)
	if req.Created() != 4 {
		t.Fatalf("the request created %d series, want 4", req.Created())
	}
	assertNothingOf(t, e, node("m", 4))
	// A new request may create four more; no request (nil) is not bounded.
	var req2 series.Request
	refusedBy(t, appendSome(t, e.head.Head, &req2, node("m", 4), node("m", 5), node("m", 6), node("m", 7), node("m", 8)), "-max-new-series-per-request", 4)
	refusedBy(t, appendSome(t, e.head.Head, nil, node("m", 8), node("m", 9), node("m", 10), node("m", 11), node("m", 12)), "")
	if n := e.index.Len(); n != 13 {
		t.Fatalf("index holds %d series, want 13", n)
	}
}

// TestSeriesLimitsHoldUnderConcurrency races appenders that create
// overlapping sets of new series against the total and per-metric limits:
// neither is overshot, and every series that got a point is in the index.
func TestSeriesLimitsHoldUnderConcurrency(t *testing.T) {
	e := openLimited(t, t.TempDir(), series.SeriesLimits{MaxSeries: 100, MaxSeriesPerMetric: 60}, nil)
	defer e.close()
	const workers, each = 8, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[series.Labels]bool{}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two batches each: a batch's series are all admitted before
			// any of them reaches the index.
			for half := range 2 {
				var ls []series.Labels
				for k := half * each / 2; k < (half+1)*each/2; k++ {
					// Workers overlap by pairs: the same series raced by two.
					ls = append(ls, node(fmt.Sprintf("m%d", k%2), (w/2)*each+k))
				}
				for i, err := range appendSome(t, e.head.Head, &series.Request{}, ls...) {
					if err == nil {
						mu.Lock()
						stored[ls[i]] = true
						mu.Unlock()
					} else if !errors.Is(err, series.ErrSeriesLimit) {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := e.index.Len(); n != 100 || len(stored) != 100 {
		t.Fatalf("index holds %d series, %d stored; want 100 of each", n, len(stored))
	}
	perMetric := map[string]int{}
	e.index.All("", func(en *series.Entry) bool {
		perMetric[en.Labels.Metric()]++
		if !stored[en.Labels] {
			t.Errorf("%s is in the index, but its point was refused", en.Labels)
		}
		return true
	})
	if perMetric["m0"] > 60 || perMetric["m1"] > 60 {
		t.Fatalf("series per metric %v, over the limit of 60", perMetric)
	}
	if n := indexRows(t, e); n != 100 {
		t.Fatalf("the store's index has %d series, want 100", n)
	}
}
