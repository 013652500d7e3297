package series_test

import (
	"context"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestHint: points carrying a Hint reach their series, the hint learns the
// series, and a stale hint (the series forgotten by the head, or another
// head's) sends points to the right series and is replaced.
func TestHint(t *testing.T) {
	now := t0 + 1000
	clock := func() time.Time { return time.UnixMilli(now) }
	e := openEnv(t, t.TempDir(), func(o *series.Options) { o.Now = clock })
	defer e.close()
	l := host(1)
	var hint series.Hint
	add := func(e *env, tm int64, v int64) {
		t.Helper()
		errs := make([]error, 1)
		if err := e.head.Append(context.Background(), []series.Sample{{Labels: l, T: tm, V: chunk.Int(v), Hint: &hint}}, errs); err != nil || errs[0] != nil {
			t.Fatal(err, errs[0])
		}
	}
	add(e, t0, 1)
	ref := hint.HintedRef(e.head.Head, l)
	if ref == 0 {
		t.Fatal("the hint did not learn the series")
	}
	add(e, t0+10_000, 2)
	if got := hint.HintedRef(e.head.Head, l); got != ref {
		t.Fatalf("hint holds ref %d, then %d", ref, got)
	}
	// Forgotten: everything in the store, then two idle hours.
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.head.ForgetIdle(now + 3*rowkey.HourMs)
	add(e, t0+20_000, 3)
	if got := hint.HintedRef(e.head.Head, l); got == 0 || got == ref {
		t.Fatalf("after the series was forgotten the hint holds ref %d (was %d)", got, ref)
	}
	want := map[string][]chunk.Point{l.String(): {{T: t0, V: chunk.Int(1)}, {T: t0 + 10_000, V: chunk.Int(2)}, {T: t0 + 20_000, V: chunk.Int(3)}}}
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	// Another head: the hint is not its, the point goes to its own series.
	e2 := openEnv(t, t.TempDir(), func(o *series.Options) { o.Now = clock })
	defer e2.close()
	add(e2, t0+30_000, 4)
	if hint.HintedRef(e2.head.Head, l) == 0 {
		t.Fatal("the hint did not learn the second head's series")
	}
	equalPoints(t, e2.read("sys.cpu", t0, t0+rowkey.HourMs), map[string][]chunk.Point{l.String(): {{T: t0 + 30_000, V: chunk.Int(4)}}})
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
}

// TestAppendRuns: a batch whose points come in runs of one series (one
// hint and labels, as remote write sends a series with its samples) puts in
// the head what the same points appended one at a time put there: runs that
// cross hours, go back in time, seal a full chunk midway, and runs of the
// same series split by another's points; a point before the retention is
// refused alone.
func TestAppendRuns(t *testing.T) {
	now := t0 + 3*rowkey.HourMs
	clock := func() time.Time { return time.UnixMilli(now) }
	mod := func(o *series.Options) { o.Now = clock; o.ChunkMaxPoints = 5; o.Retention = 30 * 24 * time.Hour }
	runs, alone := openEnv(t, t.TempDir(), mod), openEnv(t, t.TempDir(), mod)
	defer runs.close()
	defer alone.close()
	hints := make([]series.Hint, 3)
	var batch []series.Sample
	add := func(h int, ts ...int64) {
		for _, tm := range ts {
			batch = append(batch, series.Sample{Labels: host(h), T: tm, V: chunk.Int(tm / 1000 % 977), Hint: &hints[h]})
		}
	}
	for round := range 3 {
		r := int64(round) * 7 * 10_000
		add(0, t0+r, t0+r+10_000, t0+r+20_000, t0+rowkey.HourMs+r, t0+r+30_000)                    // into the next hour and back
		add(1, t0+r, t0+r+10_000, t0+r+20_000, t0+r+30_000, t0+r+40_000, t0+r+50_000, t0+r+60_000) // past 5 points
		add(0, t0+r+40_000, t0+r+50_000)
		add(2, t0+r, t0-40*24*rowkey.HourMs, t0+r+10_000) // one before the retention
		errs := make([]error, len(batch))
		if err := runs.head.Append(context.Background(), batch, errs); err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if (err != nil) != (batch[i].T < t0-30*24*rowkey.HourMs) {
				t.Fatalf("round %d, point %d (%v at %d): %v", round, i, batch[i].Labels, batch[i].T, err)
			}
			if err != nil {
				continue
			}
			one := []series.Sample{{Labels: batch[i].Labels, T: batch[i].T, V: batch[i].V}}
			if err := alone.head.Append(context.Background(), one, make([]error, 1)); err != nil {
				t.Fatal(err)
			}
		}
		batch = batch[:0]
		// The series and index agree at once; the points are compared
		// through reads, since a chunk sealed at ChunkMaxPoints leaves the
		// head's count when the background flusher writes it, at a time
		// of its own in each environment.
		got, want := runs.head.Stats(), alone.head.Stats()
		if got.Series != want.Series || got.IndexSeries != want.IndexSeries {
			t.Fatalf("round %d: the head holds %+v, appended one at a time %+v", round, got, want)
		}
		equalPoints(t, runs.read("sys.cpu", t0, t0+2*rowkey.HourMs), alone.read("sys.cpu", t0, t0+2*rowkey.HourMs))
	}
	equalPoints(t, runs.read("sys.cpu", t0, t0+2*rowkey.HourMs), alone.read("sys.cpu", t0, t0+2*rowkey.HourMs))
}
