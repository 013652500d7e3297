package series_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/dbtest"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
)

// TestSnapshotThin: SnapshotThin appends what Snapshot does thinned, the
// last point before each evaluation time and every one past the last,
// and counts what Snapshot appends, over open chunks that froze blocks
// (the clock at the points' time), late points and rewrites left raw, and
// evaluation times before, within and after the points.
func TestSnapshotThin(t *testing.T) {
	var clock int64 = t0
	e := dbtest.Open(t, t.TempDir(), func(o *series.Options) {
		o.WAL.Sync = wal.SyncInterval
		o.Now = func() time.Time { return time.UnixMilli(clock) }
	}, nil)
	defer e.Close()
	h := e.DB
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	ls := make([]series.Labels, 6)
	for i := range ls {
		ls[i] = series.MakeLabels("thin", []series.Tag{{Key: "host", Value: fmt.Sprintf("h%d", i)}})
	}
	for p := range 400 {
		clock = t0 + int64(p)*10_000
		var batch []series.Sample
		for i, l := range ls {
			tt := clock
			if i%3 == 1 && r.IntN(4) == 0 {
				tt -= r.Int64N(300_000) // late, maybe at a timestamp it has
			}
			batch = append(batch, series.Sample{Labels: l, T: tt, V: chunk.Float(float64(r.IntN(1000)) / 100)})
		}
		if err := h.Append(ctx, batch, make([]error, len(batch))); err != nil {
			t.Fatal(err)
		}
	}
	thinned := 0
	for n := range 300 {
		th := series.Thin{T0: t0 - 600_000 + r.Int64N(rowkey.HourMs+1_200_000), Step: []int64{0, 7_000, 10_000, 15_000, 60_000, 420_000}[r.IntN(6)]}
		th.End = th.T0 + r.Int64N(rowkey.HourMs)
		if th.Step == 0 {
			th.End = th.T0
		}
		start := th.T0 - r.Int64N(600_000)
		end := th.End + r.Int64N(3)*r.Int64N(60_000)
		for _, l := range ls {
			all := h.Snapshot(l, start, end, nil)
			dst := []chunk.Point{{T: 1, V: chunk.Int(7)}}
			got, raw := h.SnapshotThin(l, start, end, th, dst)
			want := append(dst, thinRef(all, th)...)
			if raw != len(all) || !slices.Equal(got, want) {
				t.Fatalf("case %d %s, [%d, %d] %+v: %d points (%d counted), want %d of %d\n%v\n%v", n, l, start, end, th, len(got), raw, len(want), len(all), got, want)
			}
			thinned += len(all) - len(got) + 1
		}
	}
	if thinned == 0 {
		t.Fatal("nothing was thinned")
	}
}

// thinRef is what SnapshotThin keeps of pts, one evaluation time at a
// time.
func thinRef(pts []chunk.Point, th series.Thin) []chunk.Point {
	var out []chunk.Point
	last := th.T0
	if th.Step > 0 {
		last += (th.End - th.T0) / th.Step * th.Step
	}
	for i, p := range pts {
		if p.T > last {
			out = append(out, p)
			continue
		}
		// The evaluation time p is before: kept if the next point is not.
		r := th.T0
		for r < p.T {
			r += th.Step
		}
		if i+1 == len(pts) || pts[i+1].T > r {
			out = append(out, p)
		}
	}
	return out
}
