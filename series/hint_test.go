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
