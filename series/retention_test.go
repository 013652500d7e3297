package series_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	now := time.UnixMilli(t0 + 10*24*rowkey.HourMs + 30*60_000) // day 10 after t0, half past the hour
	clock := func() time.Time { return now }
	old := series.MakeLabels("ret.m", []series.Tag{{Key: "host", Value: "old"}})   // only old data
	both := series.MakeLabels("ret.m", []series.Tag{{Key: "host", Value: "both"}}) // old and recent
	e := openEnv(t, dir, func(o *series.Options) { o.Now = clock })
	var ss []series.Sample
	for d := int64(0); d < 10; d++ { // a point an hour for ten days
		for h := int64(0); h < 24; h++ {
			ts := t0 + d*24*rowkey.HourMs + h*rowkey.HourMs
			ss = append(ss, series.Sample{Labels: both, T: ts, V: chunk.Int(ts)})
			if d < 5 {
				ss = append(ss, series.Sample{Labels: old, T: ts, V: chunk.Int(-ts)})
			}
		}
	}
	e.append(ss...)
	e.close()

	// Three days of retention: the cutoff is the hour three days before now.
	ret := func(o *series.Options) { o.Now = clock; o.Retention = 72 * time.Hour; o.RetentionInterval = time.Hour }
	e = openEnv(t, dir, ret)
	rep, err := e.head.ApplyRetention(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cutoff := rowkey.HourOf(now.Add(-72 * time.Hour).UnixMilli())
	if rep.Cutoff != cutoff {
		t.Fatalf("cutoff %d, want %d", rep.Cutoff, cutoff)
	}
	check := func(when string) {
		t.Helper()
		got := e.readNonEmpty("ret.m", t0, now.UnixMilli())
		if len(got) != 1 {
			t.Fatalf("%s: %d series with data, want 1 (%v)", when, len(got), got)
		}
		pts := got[both.String()]
		if len(pts) == 0 || pts[0].T != cutoff || pts[len(pts)-1].T != t0+10*24*rowkey.HourMs-rowkey.HourMs {
			t.Fatalf("%s: host=both holds %d points from %d, want from the cutoff %d", when, len(pts), pts[0].T, cutoff)
		}
		if n := len(e.index.Select("ret.m", nil, false, 0, now.UnixMilli())); n != 1 {
			t.Fatalf("%s: the index selects %d series, want 1 (host=old has no data left)", when, n)
		}
		// Nothing before the cutoff is left in the data table.
		cells := 0
		err := e.st.Scan(context.Background(), store.TableData, []store.KeyRange{{Start: []byte{}}}, func(c store.Cell) bool {
			if _, hour, _, err := e.opts.Layout.ParseRowKey(nil, c.Row); err == nil && hour < cutoff {
				cells++
			}
			return true
		})
		if err != nil || cells != 0 {
			t.Fatalf("%s: %d cells before the cutoff (%v)", when, cells, err)
		}
	}
	check("after the retention")
	// The series with nothing left is gone from the index (the pass that
	// Open starts may have been the one to drop it).
	n := 0
	e.index.All("ret.m", func(*series.Entry) bool { n++; return true })
	if n != 1 {
		t.Fatalf("the index holds %d series of ret.m, want 1", n)
	}
	// A point older than the retention is refused; a newer one is not.
	errs := make([]error, 2)
	err = e.head.Append(context.Background(), []series.Sample{
		{Labels: both, T: cutoff - 1, V: chunk.Int(1)}, {Labels: both, T: cutoff, V: chunk.Int(2)}}, errs)
	if err != nil || !errors.Is(errs[0], series.ErrOutOfRetention) || errs[1] != nil {
		t.Fatalf("append across the cutoff: %v, %v", err, errs)
	}
	e.close()
	e = openEnv(t, dir, ret) // the index read back from the store agrees
	check("after a restart")
	if rep, err := e.head.ApplyRetention(context.Background()); err != nil || rep.SeriesDropped != 0 {
		t.Fatalf("a second pass: %+v %v", rep, err)
	}
	e.close()
}
