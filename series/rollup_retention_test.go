package series_test

import (
	"context"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestRollupRetention: raw rows expire after three days while 1h rollups
// live on; 10m rollups expire after five days, a UTC day at a time; the
// index keeps the series whose raw rows are all gone, so rollup queries
// still find them.
func TestRollupRetention(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	now := time.UnixMilli(t0 + 10*24*rowkey.HourMs + 30*60_000)
	clock := func() time.Time { return now }
	old := series.MakeLabels("ret.m", []series.Tag{{Key: "host", Value: "old"}}) // only old data
	rollups := series.RollupOptions{Intervals: []time.Duration{10 * time.Minute, time.Hour},
		Retention: map[time.Duration]time.Duration{10 * time.Minute: 5 * 24 * time.Hour}}
	e := openEnv(t, dir, func(o *series.Options) { o.Now = clock; o.Rollup = rollups })
	var ss []series.Sample
	for d := int64(0); d < 10; d++ {
		for h := int64(0); h < 24; h++ {
			ts := t0 + d*24*rowkey.HourMs + h*rowkey.HourMs
			if d < 2 {
				ss = append(ss, series.Sample{Labels: old, T: ts, V: chunk.Int(ts)})
			}
			ss = append(ss, series.Sample{Labels: host(0), T: ts, V: chunk.Int(-ts)})
		}
	}
	e.append(ss...)
	e.close()

	e = openEnv(t, dir, func(o *series.Options) {
		o.Now = clock
		o.Rollup = rollups
		o.Retention = 72 * time.Hour
		o.RetentionInterval = time.Hour
	})
	defer e.close()
	rep, err := e.head.ApplyRetention(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RollupRanges == 0 {
		t.Fatalf("no rollup range deleted: %+v", rep)
	}
	entries := e.index.Select("ret.m", nil, false, t0, t0+rowkey.HourMs)
	if len(entries) != 1 {
		t.Fatalf("the index selects %d series of ret.m in the first hour, want 1 (its rollups live on)", len(entries))
	}
	if got := e.readNonEmpty("ret.m", t0, now.UnixMilli()); len(got) != 0 {
		t.Fatalf("raw points of host=old left: %v", got)
	}
	ids := [][]byte{entries[0].TSUID}
	count := func(iv time.Duration) (n int, first int64) {
		first = -1
		err := rollup.Scan(ctx, e.st, e.opts.Layout, iv.Milliseconds(), ids, 0, now.UnixMilli(), func(_ int, b *rollup.Bucket) bool {
			if first < 0 {
				first = b.Start
			}
			n++
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, first
	}
	if n, first := count(time.Hour); n != 48 || first != t0 {
		t.Fatalf("1h rollups of host=old: %d from %d, want 48 from %d (kept for ever)", n, first, t0)
	}
	if n, _ := count(10 * time.Minute); n != 0 {
		t.Fatalf("10m rollups of host=old: %d, want none (older than five days)", n)
	}
	// host=web00's 10m rollups start at the first UTC day the retention keeps.
	ids = [][]byte{e.index.Select("sys.cpu", nil, false, t0, now.UnixMilli())[0].TSUID}
	keep := rollup.RowBase(now.Add(-5 * 24 * time.Hour).UnixMilli())
	if _, first := count(10 * time.Minute); first != keep {
		t.Fatalf("10m rollups of web00 start at %d, want %d", first, keep)
	}
	if n, first := count(time.Hour); n != 240 || first != t0 {
		t.Fatalf("1h rollups of web00: %d from %d, want 240 from %d", n, first, t0)
	}
}
