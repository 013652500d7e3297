package series_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"hourglass/rowkey"
	"hourglass/series"
)

func exemplarsOf(e *env, l series.Labels) string {
	return fmt.Sprint(e.head.Exemplars(l, 0, 1<<62))
}

func (e *env) appendExemplars(want int, samples ...series.ExemplarSample) {
	e.t.Helper()
	n, err := e.head.AppendExemplars(context.Background(), samples, &series.Request{})
	if err != nil || n != want {
		e.t.Fatalf("AppendExemplars: %d kept, %v; want %d", n, err, want)
	}
}

func ex(l series.Labels, t int64, v float64, trace string) series.ExemplarSample {
	return series.ExemplarSample{Series: l, Exemplar: series.Exemplar{Labels: []series.Tag{{Key: "trace_id", Value: trace}}, Value: v, T: t}}
}

// TestExemplarsDurableAndBounded: exemplars survive a clean restart (the
// meta table) and a crash (the WAL); a series keeps its newest PerSeries;
// past Max a series with none gets none and one with some replaces its
// oldest; out-of-order and duplicate ones
// are dropped; a delete removes them.
func TestExemplarsDurableAndBounded(t *testing.T) {
	dir := t.TempDir()
	opts := func(o *series.Options) { o.Exemplars = series.ExemplarOptions{Max: 3, PerSeries: 2} }
	e := openEnv(t, dir, opts)
	a := series.MakeLabels("req", []series.Tag{{Key: "job", Value: "a"}})
	b := series.MakeLabels("req", []series.Tag{{Key: "job", Value: "b"}})
	c := series.MakeLabels("req", []series.Tag{{Key: "job", Value: "c"}})
	const t0 = int64(1_767_225_600_000)
	e.appendExemplars(3, ex(a, t0, 1, "a1"), ex(a, t0+1, 2, "a2"), ex(a, t0+2, 3, "a3"))
	if got, want := exemplarsOf(e, a), "[{[{trace_id a2}] 2 1767225600001} {[{trace_id a3}] 3 1767225600002}]"; got != want {
		t.Fatalf("per-series bound: %s, want %s", got, want)
	}
	e.appendExemplars(1, ex(b, t0, 1, "b1"))
	// Max 3 reached (a holds 2, b 1): c gets none; an exemplar older than
	// a's newest and a duplicate of it are dropped.
	e.appendExemplars(0, ex(c, t0, 1, "c1"), ex(a, t0+1, 9, "late"), ex(a, t0+2, 3, "a3"))
	if got := exemplarsOf(e, c); got != "[]" {
		t.Fatalf("past Max a new series got %s", got)
	}
	// Max reached: b's new exemplar replaces b's oldest.
	e.appendExemplars(1, ex(b, t0+5, 2, "b2"))
	if got, want := exemplarsOf(e, b), "[{[{trace_id b2}] 2 1767225600005}]"; got != want {
		t.Fatalf("b: %s, want %s", got, want)
	}
	wantA, wantB := exemplarsOf(e, a), exemplarsOf(e, b)
	e.close()

	e = openEnv(t, dir, opts)
	if exemplarsOf(e, a) != wantA || exemplarsOf(e, b) != wantB {
		t.Fatalf("after a restart: a %s b %s", exemplarsOf(e, a), exemplarsOf(e, b))
	}
	e.appendExemplars(1, ex(b, t0+6, 3, "b3"))
	wantB = exemplarsOf(e, b)
	e.crash()

	e = openEnv(t, dir, opts)
	if exemplarsOf(e, a) != wantA || exemplarsOf(e, b) != wantB {
		t.Fatalf("after a crash: a %s b %s, want %s", exemplarsOf(e, a), exemplarsOf(e, b), wantB)
	}
	e.delete([]series.Labels{b}, t0, t0+10)
	if got := exemplarsOf(e, b); got != "[]" {
		t.Fatalf("after a delete: %s", got)
	}
	e.close()
	e = openEnv(t, dir, opts)
	if got := exemplarsOf(e, b); got != "[]" || exemplarsOf(e, a) != wantA {
		t.Fatalf("the delete after a restart: b %s a %s", got, exemplarsOf(e, a))
	}
	// A delete then a crash before the sweeper writes the meta table: the
	// replayed tombstone still removes them (the meta table holds a's).
	e.delete([]series.Labels{a}, t0+2, t0+2)
	wantA = exemplarsOf(e, a)
	e.crash()
	e = openEnv(t, dir, opts)
	defer e.close()
	if got := exemplarsOf(e, a); got != wantA {
		t.Fatalf("a delete then a crash: a %s, want %s", got, wantA)
	}
}

// TestExemplarsRetention: the retention drops the exemplars older than its
// cutoff as it drops the points, from memory and at once from the meta
// table, so neither a crash right after the pass nor a clean restart
// brings them back; one older than the retention is refused at the door.
func TestExemplarsRetention(t *testing.T) {
	dir := t.TempDir()
	const t0 = int64(1_767_225_600_000)
	now := time.UnixMilli(t0 + 10*24*rowkey.HourMs)
	clock := func(o *series.Options) { o.Now = func() time.Time { return now } }
	ret := func(o *series.Options) { clock(o); o.Retention = 72 * time.Hour; o.RetentionInterval = time.Hour }
	a := series.MakeLabels("req", []series.Tag{{Key: "job", Value: "a"}})
	b := series.MakeLabels("req", []series.Tag{{Key: "job", Value: "b"}})
	recent := now.UnixMilli() - rowkey.HourMs
	e := openEnv(t, dir, clock)
	e.appendExemplars(3, ex(a, t0, 1, "old"), ex(a, recent, 2, "new"), ex(b, t0+1, 3, "old"))
	e.close()

	wantA := fmt.Sprint([]series.Exemplar{{Labels: []series.Tag{{Key: "trace_id", Value: "new"}}, Value: 2, T: recent}})
	check := func(when string) {
		t.Helper()
		if got, gotB := exemplarsOf(e, a), exemplarsOf(e, b); got != wantA || gotB != "[]" {
			t.Fatalf("%s: a %s b %s, want a %s b []", when, got, gotB, wantA)
		}
	}
	apply := func() {
		t.Helper()
		if _, err := e.head.ApplyRetention(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	e = openEnv(t, dir, ret)
	apply()
	check("after the retention")
	e.appendExemplars(0, ex(b, t0+2, 4, "too old"))
	// The pass wrote the meta table at once: a crash right after it, opened
	// without a retention (nothing drops them again), shows what the store
	// and the WAL hold.
	e.crash()
	e = openEnv(t, dir, clock)
	check("after a crash, reopened without a retention")
	e.close()
	e = openEnv(t, dir, ret)
	defer e.close()
	apply()
	check("after a clean restart")
}
