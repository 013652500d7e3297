package downsample

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"hourglass/chunk"
)

// TestBucketsBoundsDownsample checks Spec.Buckets against what Downsample
// emits for a series with a point in range and fill zero: exactly that
// many for fixed buckets and 0all, between lo and hi for calendar ones
// (months, DST, and intervals that do not divide their minute or hour
// included); with fill none, no more than hi.
func TestBucketsBoundsDownsample(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	specs := []string{"1ms", "7ms", "1s", "7s", "1m", "13m", "1h", "5h", "1d", "1w", "1n", "1y",
		"7msc", "1sc", "7sc", "1mc", "13mc", "1hc", "5hc", "1dc", "2dc", "1wc", "1nc", "2nc", "1yc", "0all"}
	locs := []*time.Location{time.UTC, mustLocation(t, "America/New_York"), mustLocation(t, "Australia/Lord_Howe")}
	for n := range 1000 {
		iv := specs[r.IntN(len(specs))]
		spec, err := ParseSpec(iv + "-count-zero")
		if err != nil {
			t.Fatal(iv, err)
		}
		loc := locs[r.IntN(len(locs))]
		start := int64(1_700_000_000_000) + r.Int64N(4e10) - 2e10
		// Keep each case below some 20,000 buckets.
		width := max(spec.Interval, 1)
		end := start + r.Int64N(min(20_000*width, 3*366*86400*1000))
		pts := []chunk.Point{{T: start + r.Int64N(end-start+1), V: chunk.Int(1)}}
		got := int64(len(Downsample(nil, pts, spec, start, end, loc)))
		lo, hi := spec.Buckets(start, end)
		if got < lo || got > hi || (!spec.Calendar && got != lo) {
			t.Fatalf("case %d: %s over [%d, %d] in %s: %d buckets, Buckets says [%d, %d]", n, iv, start, end, loc, got, lo, hi)
		}
		spec.Fill = FillNone
		if none := int64(len(Downsample(nil, pts, spec, start, end, loc))); none > hi {
			t.Fatalf("case %d: %s-none: %d > %d", n, iv, none, hi)
		}
	}
}

func TestBucketsEdges(t *testing.T) {
	ms := Spec{Interval: 1, Unit: "ms", N: 1, Agg: mustLookup(t, "avg"), Fill: FillZero}
	if lo, hi := ms.Buckets(0, 86_400_000-1); lo != 86_400_000 || hi != lo {
		t.Errorf("a day of 1 ms: %d, %d", lo, hi)
	}
	if lo, hi := ms.Buckets(5, 4); lo != 0 || hi != 0 {
		t.Errorf("empty range: %d, %d", lo, hi)
	}
	if lo, hi := ms.Buckets(math.MinInt64, math.MaxInt64); lo != math.MaxInt64 || hi != lo {
		t.Errorf("whole range: %d, %d, want saturated", lo, hi)
	}
	cal := ms
	cal.Calendar, cal.Unit, cal.Interval = true, "y", 365*86_400_000
	if _, hi := cal.Buckets(math.MinInt64, math.MaxInt64); hi <= 0 {
		t.Errorf("calendar whole range: hi %d", hi)
	}
}

// A Downsampler held to a limit emits a prefix of what it would emit
// without it, and says so when it stopped short.
func TestDownsamplerLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var d Downsampler
	for n := range 500 {
		spec, err := ParseSpec([]string{"1m-avg", "1m-sum-zero", "7s-max-nan", "1hc-count-null", "0all-sum"}[r.IntN(5)])
		if err != nil {
			t.Fatal(err)
		}
		pts := randomStream(r)
		if len(pts) == 0 {
			continue
		}
		start, end := pts[0].T, pts[len(pts)-1].T
		want := Downsample(nil, pts, spec, start, end, time.UTC)
		limit := r.Int64N(int64(len(want)) + 2)
		// Point by point, and in runs (AddPoints), which turn buckets
		// on a path of their own.
		for _, runs := range []bool{false, true} {
			d.Reset(nil, spec, start, end, time.UTC)
			d.Limit(limit)
			if runs {
				for i := 0; i < len(pts); i += 16 {
					d.AddPoints(pts[i:min(i+16, len(pts))])
				}
			} else {
				for _, p := range pts {
					d.Add(p.T, p.V)
				}
			}
			got := d.Finish()
			over := d.Over()
			if wantOver := int64(len(want)) > limit; over != wantOver {
				t.Fatalf("case %d runs %v: %s limit %d of %d: over %v", n, runs, spec, limit, len(want), over)
			}
			if int64(len(got)) > limit || !identical(got, want[:len(got)]) {
				t.Fatalf("case %d runs %v: %s limit %d: got %d points, not a prefix of %d", n, runs, spec, limit, len(got), len(want))
			}
			if !over && len(got) != len(want) {
				t.Fatalf("case %d runs %v: not over but %d of %d points", n, runs, len(got), len(want))
			}
		}
	}
}

// expiringCtx's Err turns to DeadlineExceeded after a number of looks.
type expiringCtx struct {
	context.Context
	looks int
}

func (c *expiringCtx) Err() error {
	if c.looks--; c.looks < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// AggregateContext answers as Aggregate does, and stops within 16,384
// output points of its context's deadline.
func TestAggregateContext(t *testing.T) {
	in := make([][]chunk.Point, 3)
	for i := range in {
		for ts := int64(0); ts < 100_000; ts++ {
			in[i] = append(in[i], chunk.Point{T: ts*3 + int64(i), V: chunk.Int(ts)})
		}
	}
	agg := mustLookup(t, "sum")
	want := Aggregate(nil, in, agg, false)
	got, err := AggregateContext(context.Background(), nil, in, agg, false)
	if err != nil || !identical(got, want) {
		t.Fatalf("without a deadline: %v, %d points, want %d", err, len(got), len(want))
	}
	got, err = AggregateContext(&expiringCtx{Context: context.Background(), looks: 2}, nil, in, agg, false)
	if !errors.Is(err, context.DeadlineExceeded) || len(got) > 3*ctxEvery {
		t.Fatalf("with a deadline after 2 looks: %v after %d points", err, len(got))
	}
}
