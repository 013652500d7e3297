package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// The read path decodes each series' cells as it is consumed, straight
// into a downsampler or the PromQL engine's iterator (cells.go). These
// tests hold it to what reads did when they materialised every point
// (readSlow below, the code they replaced): the same points, the same
// results for every kind of request, the same counts against the limits,
// over random data in which a series has several cells in a row, cells
// that overlap (another writer's, some with qualifiers that do not match
// their first point), and head points over store points.

const equivBase = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z

type equivEnv struct {
	head    *series.DB
	st      store.Store
	eng     *Engine
	layout  rowkey.Layout
	entries []*series.Entry
	first   int64 // the data's span
	last    int64
}

func openEquiv(t *testing.T, seed uint64) *equivEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := series.RecordLayout(ctx, st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	// A clock at the data's end and a long grace: nothing seals by itself,
	// so the head holds the same points for every read of a test. The
	// first head writes the store's part in cells of at most 50 points;
	// the second holds the head's part, in chunks that never fill.
	now := time.UnixMilli(equivBase + 7*rowkey.HourMs)
	openHead := func(wdir string, maxPoints int) (*series.DB, *series.Index) {
		idx, err := series.LoadIndex(ctx, st, layout)
		if err != nil {
			t.Fatal(err)
		}
		h, err := series.Open(ctx, st, uid.New(st, layout, uid.Options{}), idx, series.Options{
			Layout: layout, Logger: quiet, WAL: wal.Options{Dir: filepath.Join(dir, wdir)},
			ChunkMaxPoints: maxPoints, Grace: 1000 * time.Hour, SweepInterval: time.Hour,
			Now: func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		return h, idx
	}
	h, idx := openHead("wal1", 50)
	env := &equivEnv{head: h, st: st, eng: NewEngine(h.Head, idx, st, layout, Limits{}), layout: layout, first: equivBase, last: equivBase + 6*rowkey.HourMs}
	r := rand.New(rand.NewPCG(seed, 99))

	const nSeries = 13
	ls := make([]series.Labels, nSeries)
	data := make([][]chunk.Point, nSeries)
	for i := range ls {
		ls[i] = series.MakeLabels("m", []series.Tag{
			{Key: "host", Value: fmt.Sprintf("h%02d", i)},
			{Key: "dc", Value: fmt.Sprintf("d%d", i%3)},
		})
		data[i] = equivSeries(r, i%4 == 0, env.first, env.last)
	}
	// The last series has points in the first hour only: a day bucket in
	// New York (from 05:00 UTC) gets none of them, yet the series is a
	// member of its group.
	data[nSeries-1] = equivSeries(r, false, env.first, env.first+rowkey.HourMs-1)
	appendPts := func(i int, pts []chunk.Point) {
		t.Helper()
		samples := make([]series.Sample, len(pts))
		for j, p := range pts {
			samples[j] = series.Sample{Labels: ls[i], T: p.T, V: p.V}
		}
		errs := make([]error, len(samples))
		if err := h.Append(ctx, samples, errs); err != nil {
			t.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first four hours go to the store, in cells of at most 50 points.
	split := equivBase + 4*rowkey.HourMs
	for i := range ls {
		n := sort.Search(len(data[i]), func(j int) bool { return data[i][j].T >= split })
		appendPts(i, data[i][:n])
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h, idx = openHead("wal2", 1<<20)
	t.Cleanup(func() {
		h.Close()
		st.Close()
	})
	env.head, env.eng = h, NewEngine(h.Head, idx, st, layout, Limits{})
	env.entries = env.eng.index.Select("m", nil, false, env.first, env.last+rowkey.HourMs)
	if len(env.entries) != nSeries {
		t.Fatalf("%d entries", len(env.entries))
	}
	// Cells of another writer over some rows: points at timestamps the
	// row has (they overwrite or not, by qualifier order) and between them;
	// some with a qualifier that claims a later first point than the cell's.
	var muts []store.Mutation
	for _, en := range env.entries {
		for range r.IntN(4) {
			hour := equivBase + r.Int64N(4)*rowkey.HourMs
			var pts []chunk.Point
			tt := hour + r.Int64N(rowkey.HourMs/2)
			for range 1 + r.IntN(60) {
				if r.IntN(2) == 0 {
					tt += 10_000 // the series' own grid, most of the time
				} else {
					tt += 1 + r.Int64N(20_000)
				}
				if tt >= hour+rowkey.HourMs {
					break
				}
				pts = append(pts, chunk.Point{T: tt, V: equivValue(r, false, 0)})
			}
			if len(pts) == 0 {
				continue
			}
			off := pts[0].T - hour
			if r.IntN(4) == 0 {
				off += r.Int64N(rowkey.HourMs - off) // a qualifier that lies
			}
			b, err := chunk.Append(nil, hour, pts)
			if err != nil {
				t.Fatal(err)
			}
			muts = append(muts, store.Mutation{
				Row:       layout.AppendRowKey(nil, en.TSUID, hour),
				Qualifier: rowkey.AppendQualifier(nil, uint32(off), uint16(1+r.IntN(3))),
				Value:     b,
			})
		}
	}
	if err := st.Write(ctx, store.TableData, muts); err != nil {
		t.Fatal(err)
	}
	// The rest stays in the head, with late points over the store's hours,
	// most at the timestamps the store holds, some a millisecond after.
	for i := range ls {
		n := sort.Search(len(data[i]), func(j int) bool { return data[i][j].T >= split })
		appendPts(i, data[i][n:])
		if r.IntN(2) == 0 {
			var late []chunk.Point
			for _, p := range data[i][:n] {
				if r.IntN(15) == 0 {
					tt := p.T
					if r.IntN(4) == 0 {
						tt++
					}
					late = append(late, chunk.Point{T: tt, V: equivValue(r, false, 0)})
				}
			}
			appendPts(i, late)
		}
	}
	return env
}

// equivSeries returns random points in [first, last]: a gauge of floats
// and integers with NaN now and then, or an integer counter with resets;
// regular steps of 10 s, irregular ones, and gaps.
func equivSeries(r *rand.Rand, counter bool, first, last int64) []chunk.Point {
	var pts []chunk.Point
	tt := first + r.Int64N(600_000)
	var c int64
	for tt <= last {
		if counter {
			if r.IntN(200) == 0 {
				c = r.Int64N(10) // a reset
			} else {
				c += r.Int64N(1000)
			}
			pts = append(pts, chunk.Point{T: tt, V: chunk.Int(c)})
		} else {
			pts = append(pts, chunk.Point{T: tt, V: equivValue(r, true, tt)})
		}
		switch r.IntN(50) {
		case 0:
			tt += r.Int64N(2 * rowkey.HourMs) // a gap
		case 1, 2, 3:
			tt += 1 + r.Int64N(30_000)
		default:
			tt += 10_000
		}
	}
	return pts
}

func equivValue(r *rand.Rand, nan bool, _ int64) chunk.Value {
	switch r.IntN(10) {
	case 0:
		if nan {
			return chunk.Float(math.NaN())
		}
		return chunk.Int(r.Int64N(100))
	case 1, 2:
		return chunk.Int(r.Int64N(10000) - 500)
	}
	return chunk.Float(math.Round(r.Float64()*10000) / 100)
}

// readSlow is read as it was before cells.go: every cell decoded into one
// slice per series, sorted and deduplicated, the head's points merged
// over it. It returns the points read, the head's and the store's.
func (e *Engine) readSlow(t *testing.T, entries []*series.Entry, start, end int64) ([]Series, int) {
	t.Helper()
	out := make([]Series, len(entries))
	total := 0
	for i, en := range entries {
		out[i] = Series{Labels: en.Labels, TSUID: en.TSUID}
		head := e.head.Snapshot(en.Labels, start, end, nil)
		total += len(head)
		var stored []chunk.Point
		var ranges []store.KeyRange
		for h := rowkey.HourOf(start); h <= rowkey.HourOf(end); h += rowkey.HourMs {
			ranges = append(ranges, store.RowRange(e.layout.AppendRowKey(nil, en.TSUID, h)))
		}
		var it chunk.Iterator
		err := e.st.Scan(context.Background(), store.TableData, ranges, func(c store.Cell) bool {
			_, hour, _, err := e.layout.ParseRowKey(nil, c.Row)
			if err != nil {
				t.Fatal(err)
			}
			if err := it.Reset(c.Value, hour); err != nil {
				t.Fatal(err)
			}
			for ok := it.Next(); ok; ok = it.Next() {
				ts, v := it.At()
				if ts > end {
					break
				}
				if ts >= start {
					stored = append(stored, chunk.Point{T: ts, V: v})
					total++
				}
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		out[i].Points = mergeHead(series.SortDedup(stored), head)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, total
}

// mergeHead merges the head's points over the store's: the head wins on equal timestamps.
func mergeHead(stored, head []chunk.Point) []chunk.Point {
	out := make([]chunk.Point, 0, len(stored)+len(head))
	i, j := 0, 0
	for i < len(stored) && j < len(head) {
		switch {
		case stored[i].T < head[j].T:
			out = append(out, stored[i])
			i++
		case stored[i].T > head[j].T:
			out = append(out, head[j])
			j++
		default:
			out = append(out, head[j])
			i++
			j++
		}
	}
	out = append(out, stored[i:]...)
	return append(out, head[j:]...)
}

func samePoints(a, b []chunk.Point) bool {
	return slices.EqualFunc(a, b, func(x, y chunk.Point) bool { return x.T == y.T && x.V.Identical(y.V) })
}

// randomRange returns a range over the data, cutting hours, sometimes
// covering all of it.
func (env *equivEnv) randomRange(r *rand.Rand) (int64, int64) {
	if r.IntN(5) == 0 {
		return env.first - rowkey.HourMs, env.last + rowkey.HourMs
	}
	start := env.first - 600_000 + r.Int64N(env.last-env.first)
	end := start + r.Int64N(env.last+rowkey.HourMs-start)
	return start, end
}

func TestReadMatchesMaterialisingRead(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		env := openEquiv(t, seed)
		r := rand.New(rand.NewPCG(seed, 5))
		overlapped := 0
		for n := range 60 {
			start, end := env.randomRange(r)
			want, wantN := env.eng.readSlow(t, env.entries, start, end)
			got, err := env.eng.read(ctx, env.entries, start, end, pointLimit{})
			if err != nil {
				t.Fatal(err)
			}
			gotN := 0
			for i := range got {
				gotN += got[i].RawPoints
				if got[i].Labels != want[i].Labels || !samePoints(got[i].Points, want[i].Points) {
					t.Fatalf("seed %d case %d [%d, %d], %s:\ngot  %v\nwant %v", seed, n, start, end, want[i].Labels, got[i].Points, want[i].Points)
				}
			}
			if gotN != wantN {
				t.Fatalf("seed %d case %d: %d points read, want %d", seed, n, gotN, wantN)
			}
			// The points limit counts what it did.
			if wantN > 0 {
				if _, err := env.eng.read(ctx, env.entries, start, end, pointLimit{max: wantN, what: "points"}); err != nil {
					t.Fatalf("limit %d, %d points: %v", wantN, wantN, err)
				}
				if _, err := env.eng.read(ctx, env.entries, start, end, pointLimit{max: wantN - 1, what: "points"}); !errors.Is(err, ErrLimit) {
					t.Fatalf("limit %d, %d points: error %v", wantN-1, wantN, err)
				}
			}
			// The slow path (overlapping cells) is taken somewhere.
			scs, err := env.eng.scan(ctx, env.entries, start, end, pointLimit{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var p points
			for i := range scs {
				p.reset(&scs[i], start, end, nil)
				for p.next() {
				}
				if p.slow {
					overlapped++
				}
			}
		}
		if overlapped == 0 {
			t.Errorf("seed %d: no read took the overlapping cells' path", seed)
		}
	}
}

func TestRunMatchesMaterialisingRun(t *testing.T) {
	ctx := context.Background()
	specs := []string{"1m-avg", "5m-sum", "10m-max-nan", "7m-count-zero", "1h-avg", "1h-p95", "30s-median-null",
		"1m-dev", "15m-last-zero", "1hc-avg", "1dc-sum-nan", "0all-max", "0all-avg", "1h-first", "2m-diff"}
	aggs := []string{"avg", "sum", "none", "count", "max", "zimsum", "p90", "dev", "mimmax"}
	locs := []*time.Location{nil, time.UTC}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		locs = append(locs, ny)
	}
	for seed := range uint64(3) {
		env := openEquiv(t, seed)
		r := rand.New(rand.NewPCG(seed, 6))
		for n := range 150 {
			start, end := env.randomRange(r)
			req := Request{Selector: Selector{Metric: "m", Start: start, End: end}, Location: locs[r.IntN(len(locs))]}
			if n < 10 {
				// New York's day buckets over everything.
				start, end = env.first, env.last
				req = Request{Selector: Selector{Metric: "m", Start: start, End: end}, Location: locs[len(locs)-1], GroupBy: []string{"dc"}}
			}
			var err error
			if req.Aggregator, err = downsample.Lookup(aggs[r.IntN(len(aggs))]); err != nil {
				t.Fatal(err)
			}
			if r.IntN(6) != 0 || n < 10 {
				text := specs[r.IntN(len(specs))]
				if n < 10 {
					text = "1dc-sum"
				}
				spec, err := downsample.ParseSpec(text)
				if err != nil {
					t.Fatal(err)
				}
				req.Downsample = &spec
			}
			if r.IntN(3) == 0 {
				req.Rate = true
				req.RateOptions = downsample.RateOptions{Counter: r.IntN(2) == 0, DropResets: r.IntN(3) == 0}
				if r.IntN(3) == 0 {
					req.RateOptions.ResetValue = 100
				}
			}
			if r.IntN(2) == 0 || n < 10 {
				req.GroupBy = []string{"dc"}
			}
			if r.IntN(4) == 0 {
				req.Entries = env.entries[:1+r.IntN(len(env.entries))]
			}
			got, err := env.eng.Run(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			// The reference: every point materialised, then Process.
			sel := req.Selector
			if req.Downsample != nil || req.Rate {
				sel.Start = scanStart(req)
			}
			entries := req.Entries
			if entries == nil {
				entries = env.eng.index.Select("m", nil, false, sel.Start, sel.End)
			}
			raw, _ := env.eng.readSlow(t, entries, sel.Start, sel.End)
			want, err := env.eng.Process(ctx, req, raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d case %d %+v: %d results, want %d", seed, n, req, len(got), len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Metric != w.Metric || !slices.Equal(g.Tags, w.Tags) || !slices.Equal(g.AggregateTags, w.AggregateTags) ||
					!slices.EqualFunc(g.TSUIDs, w.TSUIDs, func(a, b []byte) bool { return string(a) == string(b) }) {
					t.Fatalf("seed %d case %d: result %d is %+v, want %+v", seed, n, i, g, w)
				}
				if !samePoints(g.Points, w.Points) {
					t.Fatalf("seed %d case %d (%v %v rate %v): result %d points\ngot  %v\nwant %v", seed, n, req.Aggregator, req.Downsample, req.Rate, i, g.Points, w.Points)
				}
			}
		}
	}
}

func TestPromIteratorMatchesMaterialisingRead(t *testing.T) {
	ctx := context.Background()
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	for seed := range uint64(3) {
		env := openEquiv(t, seed)
		r := rand.New(rand.NewPCG(seed, 7))
		for n := range 40 {
			start, end := env.randomRange(r)
			want, wantN := env.eng.readSlow(t, env.entries, start, end)
			byLabels := map[string][]chunk.Point{}
			for _, s := range want {
				byLabels[promLabels(s.Labels).String()] = s.Points
			}
			q, err := env.eng.Queryable(PromLimits{}).Querier(start, end)
			if err != nil {
				t.Fatal(err)
			}
			ss := q.Select(ctx, true, &storage.SelectHints{Start: start, End: end}, name)
			var it chunkenc.Iterator
			for ss.Next() {
				s := ss.At()
				pts := byLabels[s.Labels().String()]
				it = s.Iterator(it)
				// Next, with a Seek now and then; the reference seeks in pts.
				j := -1
				for {
					var vt chunkenc.ValueType
					if r.IntN(10) == 0 {
						ts := start + r.Int64N(end-start+1)
						vt = it.Seek(ts)
						if j < 0 {
							j = 0
						}
						for j < len(pts) && pts[j].T < ts {
							j++
						}
					} else {
						vt = it.Next()
						j++
					}
					if j >= len(pts) {
						if vt != chunkenc.ValNone {
							t.Fatalf("seed %d case %d %s: a sample past the last", seed, n, s.Labels())
						}
						break
					}
					ts, v := it.At()
					if vt != chunkenc.ValFloat || ts != pts[j].T || math.Float64bits(v) != math.Float64bits(pts[j].V.Float()) {
						t.Fatalf("seed %d case %d %s: sample %d is (%d, %v), want %v", seed, n, s.Labels(), j, ts, v, pts[j])
					}
				}
				if it.Err() != nil {
					t.Fatal(it.Err())
				}
			}
			if ss.Err() != nil {
				t.Fatal(ss.Err())
			}
			q.Close()
			// The samples limit counts the points read, as before.
			if wantN > 0 {
				q, _ := env.eng.Queryable(PromLimits{MaxSamples: wantN - 1}).Querier(start, end)
				ss := q.Select(ctx, true, &storage.SelectHints{Start: start, End: end}, name)
				for ss.Next() {
				}
				if !errors.Is(ss.Err(), ErrLimit) {
					t.Fatalf("limit %d, %d points: error %v", wantN-1, wantN, ss.Err())
				}
			}
		}
	}
}

// TestRawPointsMatchesMaterialisingRead: rawPoints, which the pushed-down
// PromQL iterators read through (the store's decoded blocks, runs of the
// head's points, single points), gives every series' points as the
// materialising read does, and takes head runs both after the store's last
// point and before a store point.
func TestRawPointsMatchesMaterialisingRead(t *testing.T) {
	ctx := context.Background()
	headRuns, headBefore := 0, 0
	for seed := range uint64(3) {
		env := openEquiv(t, seed)
		r := rand.New(rand.NewPCG(seed, 11))
		for n := range 40 {
			start, end := env.randomRange(r)
			want, _ := env.eng.readSlow(t, env.entries, start, end)
			scs, err := env.eng.scan(ctx, env.entries, start, end, pointLimit{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var raw rawPoints
			for i, en := range env.entries {
				k := slices.IndexFunc(want, func(s Series) bool { return s.Labels == en.Labels })
				s := &promSeries{cells: &scs[i], start: start, end: end}
				var got []chunk.Point
				if raw.reset(s) {
					for raw.raw() {
						if raw.inHead && raw.hi == 0 {
							headRuns++
							if raw.p.sok {
								headBefore++
							}
						}
						got = append(got, chunk.Point{T: raw.rawT(), V: chunk.Float(raw.rawF())})
						raw.skip()
					}
				}
				if raw.p.err != nil {
					t.Fatal(raw.p.err)
				}
				wantPts := slices.Clone(want[k].Points)
				for j := range wantPts {
					wantPts[j].V = chunk.Float(wantPts[j].V.Float())
				}
				if !samePoints(got, wantPts) {
					t.Fatalf("seed %d case %d [%d, %d], %s:\ngot  %v\nwant %v", seed, n, start, end, en.Labels, got, wantPts)
				}
			}
		}
	}
	if headRuns == 0 || headBefore == 0 {
		t.Fatalf("%d head runs, %d of them before a store point", headRuns, headBefore)
	}
	t.Logf("%d head runs, %d before a store point", headRuns, headBefore)
}

// TestScanBucketRangeMatchesRows: a salt bucket read through the metric's
// key range (what a read of most of the metric's series takes) finds the
// same cells for the series asked for as a read of their exact rows.
func TestScanBucketRangeMatchesRows(t *testing.T) {
	ctx := context.Background()
	compared := 0
	for seed := range uint64(3) {
		env := openEquiv(t, seed)
		r := rand.New(rand.NewPCG(seed, 13))
		for n := range 30 {
			start, end := env.randomRange(r)
			var entries []*series.Entry
			for _, en := range env.entries {
				if r.IntN(3) > 0 {
					entries = append(entries, en)
				}
			}
			buckets := map[byte][]int{}
			for i, en := range entries {
				buckets[en.Salt] = append(buckets[en.Salt], i)
			}
			read := func(salt byte, idx []int, counts map[string]*[256]int32) ([]seriesCells, int64) {
				scs := make([]seriesCells, len(entries))
				var mem arena
				cs := &rangeCounter{Store: env.st}
				eng := *env.eng
				eng.st = cs
				k, err := eng.scanBucket(ctx, salt, entries, idx, scs, start, end, &mem, counts)
				if err != nil {
					t.Fatal(err)
				}
				if want := len(idx) * int((rowkey.HourOf(end)-rowkey.HourOf(start))/rowkey.HourMs+1); counts != nil && cs.ranges != 1 || counts == nil && cs.ranges != want {
					t.Fatalf("%d key ranges scanned, want %d", cs.ranges, want)
				}
				mem.place(scs, false)
				return scs, k
			}
			whole := map[string]*[256]int32{string(entries[0].TSUID[:env.layout.MetricWidth]): new([256]int32)}
			for salt, idx := range buckets {
				rows, kRows := read(salt, idx, nil)
				rng, kRange := read(salt, idx, whole)
				if kRows != kRange {
					t.Fatalf("seed %d case %d bucket %d: %d points by rows, %d by range", seed, n, salt, kRows, kRange)
				}
				for _, i := range idx {
					a, b := rows[i].cells, rng[i].cells
					same := len(a) == len(b) && rows[i].n == rng[i].n
					for j := 0; same && j < len(a); j++ {
						same = a[j].hour == b[j].hour && a[j].first == b[j].first && string(a[j].data) == string(b[j].data)
					}
					if !same {
						t.Fatalf("seed %d case %d %s: %d cells (%d points) by rows, %d (%d) by range", seed, n, entries[i].Labels, len(a), rows[i].n, len(b), rng[i].n)
					}
					compared += len(a)
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("no cells compared")
	}
	t.Logf("%d cells compared", compared)
}

// rangeCounter counts the key ranges its store is asked to scan.
type rangeCounter struct {
	store.Store
	ranges int
}

func (c *rangeCounter) Scan(ctx context.Context, t store.Table, ranges []store.KeyRange, fn func(store.Cell) bool) error {
	c.ranges += len(ranges)
	return c.Store.Scan(ctx, t, ranges, fn)
}
