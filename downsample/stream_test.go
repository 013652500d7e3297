package downsample

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"hourglass/chunk"
)

// TestDownsamplerMatchesDownsample feeds random series to the streaming
// Downsampler and requires Downsample's output bit for bit: every
// aggregator, every fill policy, fixed, calendar (with DST) and 0all
// buckets, ranges that cut buckets and ranges without points.
func TestDownsamplerMatchesDownsample(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	specs := []string{"1m", "5m", "7s", "1h", "3h", "1d", "1dc", "1hc", "15mc", "6hc", "1wc", "1nc", "0all"}
	fills := []string{"", "-none", "-nan", "-null", "-zero"}
	locs := []*time.Location{time.UTC, mustLocation(t, "America/New_York"), mustLocation(t, "Australia/Lord_Howe")}
	var d Downsampler
	for n := range 4000 {
		iv := specs[r.IntN(len(specs))]
		agg := Names()[r.IntN(len(Names()))]
		if agg == "none" {
			agg = "avg"
		}
		text := iv + "-" + agg + fills[r.IntN(len(fills))]
		spec, err := ParseSpec(text)
		if err != nil {
			t.Fatal(text, err)
		}
		loc := locs[r.IntN(len(locs))]
		pts := randomStream(r)
		var start, end int64
		switch {
		case len(pts) == 0 || r.IntN(8) == 0:
			start = 1_700_000_000_000 + r.Int64N(1e9)
			end = start + r.Int64N(3e8)
		default:
			lo, hi := pts[0].T-3e6, pts[len(pts)-1].T+3e6
			start = lo + r.Int64N(hi-lo)
			end = start + r.Int64N(hi-start+1)
			if r.IntN(20) == 0 {
				end = start - 1 // empty range
			}
		}
		// Calendar specs over long ranges make many buckets with fill:
		// keep the range to a few weeks.
		if end-start > 40*86400*1000 {
			end = start + 40*86400*1000
		}
		want := Downsample(nil, pts, spec, start, end, loc)
		d.Reset(nil, spec, start, end, loc)
		for _, p := range pts {
			d.Add(p.T, p.V)
		}
		got := d.Finish()
		if !identical(got, want) {
			t.Fatalf("case %d: %s over [%d, %d] in %s, %d points:\ngot  %v\nwant %v", n, text, start, end, loc, len(pts), got, want)
		}
		// The same points a decoded block at a time (AddBlock).
		d.Reset(nil, spec, start, end, loc)
		addByBlocks(t, &d, pts)
		if got := d.Finish(); !identical(got, want) {
			t.Fatalf("case %d by blocks: %s over [%d, %d] in %s, %d points:\ngot  %v\nwant %v", n, text, start, end, loc, len(pts), got, want)
		}
		// The same points in runs of a random length (AddPoints), with
		// single points between them, as the head's points come.
		d.Reset(nil, spec, start, end, loc)
		for i := 0; i < len(pts); {
			j := min(len(pts), i+r.IntN(100))
			if j == i {
				d.Add(pts[i].T, pts[i].V)
				j++
			} else {
				d.AddPoints(pts[i:j])
			}
			i = j
		}
		if got := d.Finish(); !identical(got, want) {
			t.Fatalf("case %d by runs: %s over [%d, %d] in %s, %d points:\ngot  %v\nwant %v", n, text, start, end, loc, len(pts), got, want)
		}
	}
}

// addByBlocks adds pts to d as the read path does: each hour's points
// encoded as a chunk, decoded and added a block at a time.
func addByBlocks(t *testing.T, d *Downsampler, pts []chunk.Point) {
	t.Helper()
	var it chunk.Iterator
	for i := 0; i < len(pts); {
		hour := pts[i].T - pts[i].T%chunk.HourMillis
		j := i
		for j < len(pts) && pts[j].T < hour+chunk.HourMillis {
			j++
		}
		b, err := chunk.Append(nil, hour, pts[i:j])
		if err != nil {
			t.Fatal(err)
		}
		if err := it.Reset(b, hour); err != nil {
			t.Fatal(err)
		}
		for ok := it.Next(); ok; ok = it.Next() {
			blk := it.Block()
			d.AddBlock(&blk)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		i = j
	}
}

// randomStream returns a sorted series with strictly increasing
// timestamps: regular or irregular steps, gaps of hours, integers and
// floats, NaN now and then.
func randomStream(r *rand.Rand) []chunk.Point {
	n := r.IntN(400)
	t := int64(1_700_000_000_000) + r.Int64N(4e9)
	step := []int64{1, 1000, 10_000, 60_000, 3_600_000}[r.IntN(5)]
	pts := make([]chunk.Point, 0, n)
	for range n {
		switch r.IntN(20) {
		case 0:
			t += r.Int64N(6 * 3_600_000) // a gap
		case 1:
			t += 1 + r.Int64N(step)
		default:
			t += step
		}
		var v chunk.Value
		switch r.IntN(10) {
		case 0:
			v = chunk.Float(math.NaN())
		case 1, 2, 3:
			v = chunk.Int(r.Int64N(1000) - 100)
		default:
			v = chunk.Float(r.Float64()*1000 - 100)
		}
		pts = append(pts, chunk.Point{T: t, V: v})
	}
	return pts
}

func identical(a, b []chunk.Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].T != b[i].T || !a[i].V.Identical(b[i].V) {
			return false
		}
	}
	return true
}

func mustLocation(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s: %v", name, err)
	}
	return loc
}

func TestDownsamplerPanicsOutOfOrder(t *testing.T) {
	spec, err := ParseSpec("1m-avg")
	if err != nil {
		t.Fatal(err)
	}
	var d Downsampler
	d.Reset(nil, spec, 0, 1e6, nil)
	d.Add(10, chunk.Int(1))
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on a repeated timestamp")
		}
	}()
	d.Add(10, chunk.Int(2))
}

// TestDownsamplerKeepBefore feeds random series with KeepBefore(from, n)
// and requires Downsample's output less some of its first buckets: every
// bucket from `from` on and the last n before it kept, those before them
// kept or not, but never one in the middle dropped.
func TestDownsamplerKeepBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	specs := []string{"1m", "5m", "7s", "1h", "3h", "1hc", "0all"}
	fills := []string{"", "", "", "-nan", "-zero"}
	var d Downsampler
	dropped := 0
	for n := range 4000 {
		agg := Names()[r.IntN(len(Names()))]
		if agg == "none" {
			agg = "avg"
		}
		text := specs[r.IntN(len(specs))] + "-" + agg + fills[r.IntN(len(fills))]
		spec, err := ParseSpec(text)
		if err != nil {
			t.Fatal(text, err)
		}
		pts := randomStream(r)
		if len(pts) < 2 {
			continue
		}
		lo, hi := pts[0].T-3e6, pts[len(pts)-1].T+3e6
		start := lo + r.Int64N(hi-lo)
		end := start + r.Int64N(hi-start+1)
		from := start + r.Int64N(end-start+1)
		if r.IntN(10) == 0 {
			from = end + 1 + r.Int64N(1e6) // past the range
		}
		keep := 1 + r.IntN(3)
		want := Downsample(nil, pts, spec, start, end, time.UTC)
		check := func(how string, got []chunk.Point) {
			t.Helper()
			k := len(want) - len(got)
			if k < 0 || !identical(got, want[k:]) {
				t.Fatalf("case %d %s: %s over [%d, %d] keeping %d before %d:\ngot  %v\nwant %v", n, how, text, start, end, keep, from, got, want)
			}
			before := 0 // want's buckets before from that got keeps
			for _, p := range got {
				if p.T < from {
					before++
				}
			}
			all := 0
			for _, p := range want {
				if p.T < from {
					all++
				}
			}
			if before < min(keep, all) {
				t.Fatalf("case %d %s: %s keeps %d buckets before %d, want at least %d of %d:\ngot  %v\nwant %v", n, how, text, before, from, keep, all, got, want)
			}
			if k > 0 {
				dropped++
			}
		}
		d.Reset(nil, spec, start, end, time.UTC)
		d.KeepBefore(from, keep)
		addByBlocks(t, &d, pts)
		check("by blocks", d.Finish())
		d.Reset(nil, spec, start, end, time.UTC)
		d.KeepBefore(from, keep)
		for i := 0; i < len(pts); {
			j := min(len(pts), i+r.IntN(100))
			if j == i {
				d.Add(pts[i].T, pts[i].V)
				j++
			} else {
				d.AddPoints(pts[i:j])
			}
			i = j
		}
		check("by runs", d.Finish())
	}
	if dropped < 100 {
		t.Fatalf("buckets dropped in %d runs only", dropped)
	}
}

// TestDownsamplerKeepBeforeLimit: the buckets KeepBefore drops give their
// points back to the Limit. Two hours of 10 s points into 1 m buckets, the
// last ten minutes wanted: 11 buckets (the one before and ten), where all
// would be 120.
func TestDownsamplerKeepBeforeLimit(t *testing.T) {
	spec, err := ParseSpec("1m-sum")
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_700_006_400_000) // a whole hour
	var pts []chunk.Point
	for k := range 720 {
		pts = append(pts, chunk.Point{T: t0 + int64(k)*10_000, V: chunk.Int(int64(k))})
	}
	end := pts[len(pts)-1].T
	from := t0 + 110*60_000
	want := Downsample(nil, pts, spec, t0, end, nil)
	var d Downsampler
	d.Reset(nil, spec, t0, end, nil)
	d.Limit(11)
	d.KeepBefore(from, 1)
	for i := 0; i < len(pts); i += 64 {
		d.AddPoints(pts[i:min(i+64, len(pts))])
	}
	got := d.Finish()
	if d.Over() || !identical(got, want[len(want)-11:]) {
		t.Fatalf("over %v, got %v\nwant %v", d.Over(), got, want[len(want)-11:])
	}
	// Without KeepBefore the limit stops it.
	d.Reset(nil, spec, t0, end, nil)
	d.Limit(11)
	for i := 0; i < len(pts); i += 64 {
		d.AddPoints(pts[i:min(i+64, len(pts))])
	}
	if d.Finish(); !d.Over() {
		t.Fatal("not over its limit without KeepBefore")
	}
}
