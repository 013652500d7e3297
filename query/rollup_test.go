package query

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"math/rand/v2"

	"fmt"
	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/rollup"
	"hourglass/series"
	"hourglass/store"
	"sort"
)

// noHead is a head that holds nothing: an engine over it reads the store
// alone.
type noHead struct{}

func (noHead) Snapshot(_ series.Labels, _, _ int64, dst []chunk.Point) []chunk.Point { return dst }

// memRollups are rollups computed from the points of an engine that reads
// the store alone: what the flusher's rollups hold once the rows are
// written. Series without a stored point have none.
type memRollups struct {
	ivs     []int64
	buckets map[int64]map[string][]rollup.Bucket // interval, TSUID
	mu      sync.Mutex
	reads   int
	// ext: points written from outside, by interval, aggregator, TSUID.
	ext map[int64]map[rollup.Aggregator]map[string][]chunk.Point
}

func (m *memRollups) ReadExternal(ctx context.Context, entries []*series.Entry, iv int64, agg rollup.Aggregator, start, end int64, fn func(int, int64, chunk.Value) error) error {
	for i, en := range entries {
		for _, p := range m.ext[iv][agg][string(en.TSUID)] {
			if p.T >= start && p.T < end {
				if err := fn(i, p.T, p.V); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func newMemRollups(t *testing.T, env *equivEnv, ivs ...int64) *memRollups {
	t.Helper()
	m := &memRollups{ivs: ivs, buckets: map[int64]map[string][]rollup.Bucket{}}
	stored := NewEngine(noHead{}, env.eng.index, env.st, env.layout, Limits{})
	ss, err := stored.ReadEntries(context.Background(), env.entries, env.first-2*3600_000, env.last+2*3600_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range ivs {
		m.buckets[iv] = map[string][]rollup.Bucket{}
		for _, s := range ss {
			bs, err := rollup.Compute(nil, s.Points, iv)
			if err != nil {
				t.Fatal(err)
			}
			m.buckets[iv][string(s.TSUID)] = bs
		}
	}
	return m
}

func (m *memRollups) Intervals() []int64 { return m.ivs }

// storeMemRollups writes m's buckets to env's rollup table and returns the
// StoreRollups that reads them.
func storeMemRollups(t *testing.T, env *equivEnv, m *memRollups) *StoreRollups {
	t.Helper()
	var muts []store.Mutation
	for iv, byTSUID := range m.buckets {
		for tsuid, bs := range byTSUID {
			var err error
			if muts, err = rollup.AppendMutations(muts, env.layout, []byte(tsuid), iv, bs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := env.st.Write(context.Background(), store.TableRollup, muts); err != nil {
		t.Fatal(err)
	}
	sr := &StoreRollups{Store: env.st, Layout: env.layout, Ivs: m.ivs, Index: env.eng.index}
	// The requests select every series of m: read by metric ranges.
	if !sr.dense(env.entries, env.first, env.last+1) || sr.dense(env.entries[:1], env.first, env.last+1) {
		t.Fatal("StoreRollups.dense: every series of the metric is not dense, or one of several is")
	}
	return sr
}

// ReadBuckets hands out the buckets of m; for rollup.FieldsSum and
// FieldsSumTimes, only the fields they read (the others zero, as a
// version 2 cell leaves them).
func (m *memRollups) ReadBuckets(ctx context.Context, entries []*series.Entry, iv, start, end int64, f rollup.Fields, fn func(int, *rollup.Bucket) error) error {
	m.mu.Lock()
	m.reads++
	m.mu.Unlock()
	for i, en := range entries {
		for _, b := range m.buckets[iv][string(en.TSUID)] {
			switch f {
			case rollup.FieldsSum:
				b = rollup.Bucket{Start: b.Start, Count: b.Count, NaN: b.NaN, StaleEnd: b.StaleEnd,
					Sum: b.Sum, SumOverflow: b.SumOverflow, SumExact: b.SumExact}
			case rollup.FieldsSumTimes:
				b = rollup.Bucket{Start: b.Start, Count: b.Count, NaN: b.NaN, StaleEnd: b.StaleEnd,
					Sum: b.Sum, SumOverflow: b.SumOverflow, SumExact: b.SumExact, FirstT: b.FirstT, LastT: b.LastT}
			}
			if b.Start >= start && b.Start < end {
				if err := fn(i, &b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// TestRollupRunMatchesRaw holds requests answered from rollups to the same
// requests with ROLLUP_RAW: the same results, bit for bit, over random
// data in which the head still holds the last hours and late points over
// the store's (the split query), with every aggregator buckets answer,
// fill policies, rates and groups. The last seed reads the buckets from
// the store's rollup table (StoreRollups, reading each metric's key ranges
// whole), the others from memory.
func TestRollupRunMatchesRaw(t *testing.T) {
	ctx := context.Background()
	specs := []string{"10m-avg", "20m-sum", "30m-max-nan", "1h-avg", "1h-sum-zero", "2h-avg", "3h-count-null", "1h-min",
		"1h-first", "1h-last", "1h-diff", "2h-zimsum", "1hc-avg", "1dc-max", "10m-count", "1h-mimmax", "90m-avg", "1h-dev", "0all-sum"}
	aggs := []string{"avg", "sum", "none", "count", "max", "zimsum", "mimmin"}
	rollupReads, rawReads := 0, 0
	for seed := range uint64(3) {
		env := openEquiv(t, seed)
		mem := newMemRollups(t, env, 600_000, 3_600_000)
		env.eng.SetRollups(mem, nil)
		if seed == 2 {
			env.eng.SetRollups(storeMemRollups(t, env, mem), nil)
		}
		r := rand.New(rand.NewPCG(seed, 13))
		for n := range 120 {
			start, end := env.randomRange(r)
			req := Request{Selector: Selector{Metric: "m", Start: start, End: end}}
			var err error
			if req.Aggregator, err = downsample.Lookup(aggs[r.IntN(len(aggs))]); err != nil {
				t.Fatal(err)
			}
			spec, err := downsample.ParseSpec(specs[r.IntN(len(specs))])
			if err != nil {
				t.Fatal(err)
			}
			req.Downsample = &spec
			if r.IntN(3) == 0 {
				req.Rate = true
				req.RateOptions = downsample.RateOptions{Counter: r.IntN(2) == 0}
			}
			if r.IntN(2) == 0 {
				req.GroupBy = []string{"dc"}
			}
			raw := req
			raw.Rollup = RollupRaw
			want, err := env.eng.Run(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			got, err := env.eng.Run(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d case %d %v [%d, %d]: %d results, want %d", seed, n, spec, start, end, len(got), len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Metric != w.Metric || !slices.Equal(g.Tags, w.Tags) || !slices.Equal(g.AggregateTags, w.AggregateTags) {
					t.Fatalf("seed %d case %d: result %d is %+v, want %+v", seed, n, i, g, w)
				}
				if !samePoints(g.Points, w.Points) {
					t.Fatalf("seed %d case %d (%v %v rate %v [%d, %d]): result %d points\ngot  %v\nwant %v", seed, n, req.Aggregator, spec, req.Rate, start, end, i, g.Points, w.Points)
				}
			}
			// Count what was answered how.
			ss, err := env.eng.Fetch(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if s.FromRollup != 0 {
					rollupReads++
				} else if s.RawPoints > 0 {
					rawReads++
				}
			}
		}
	}
	if rollupReads < 500 {
		t.Errorf("only %d series read from rollups", rollupReads)
	}
	t.Logf("%d series read from rollups, %d raw", rollupReads, rawReads)
}

func TestParseRollupUsage(t *testing.T) {
	for in, want := range map[string]RollupUsage{
		"": RollupNoFallback, "rollup_raw": RollupRaw, "ROLLUP_FALLBACK": RollupFallback,
		"Rollup_Fallback_Raw": RollupFallbackRaw, "ROLLUP_NOFALLBACK": RollupNoFallback, "whatever": RollupNoFallback,
	} {
		if got := ParseRollupUsage(in); got != want {
			t.Errorf("ParseRollupUsage(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRollupPlan(t *testing.T) {
	e := &Engine{}
	e.SetRollups(&memRollups{ivs: []int64{600_000, 3_600_000}}, nil)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zone data")
	}
	for _, c := range []struct {
		spec  string
		loc   *time.Location
		usage RollupUsage
		want  []int64
	}{
		{"1h-avg", nil, RollupNoFallback, []int64{3_600_000, 600_000}},
		{"2h-sum", nil, RollupFallback, []int64{3_600_000, 600_000}},
		{"90m-max", nil, RollupNoFallback, []int64{600_000}},
		{"10m-count", nil, RollupNoFallback, []int64{600_000}},
		{"5m-avg", nil, RollupNoFallback, nil},
		{"1h-avg", nil, RollupRaw, nil},
		{"1h-dev", nil, RollupNoFallback, nil},
		{"1h-p99", nil, RollupNoFallback, nil},
		{"0all-sum", nil, RollupNoFallback, nil},
		{"1dc-sum", time.UTC, RollupNoFallback, []int64{3_600_000, 600_000}},
		{"1dc-sum", ny, RollupNoFallback, nil},
		{"1nc-sum", nil, RollupNoFallback, nil},
	} {
		spec, err := downsample.ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		got := e.rollupIntervals(Request{Downsample: &spec, Location: c.loc, Rollup: c.usage})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v %v: intervals %v, want %v", c.spec, c.loc, c.usage, got, c.want)
		}
	}
	if got := e.rollupIntervals(Request{}); got != nil {
		t.Errorf("no downsample: %v", got)
	}
}

// TestRollupFallback: with no rollup data, ROLLUP_NOFALLBACK answers from
// rollups alone (only what the head still holds, read raw, is there),
// ROLLUP_FALLBACK_RAW and ROLLUP_FALLBACK read raw points.
func TestRollupFallback(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 7)
	env.eng.SetRollups(&memRollups{ivs: []int64{3_600_000}}, nil)
	spec, _ := downsample.ParseSpec("1h-sum")
	agg, _ := downsample.Lookup("sum")
	req := Request{Selector: Selector{Metric: "m", Start: env.first, End: env.last}, Aggregator: agg, Downsample: &spec}
	count := func(u RollupUsage) (n int, from int64) {
		r := req
		r.Rollup = u
		ss, err := env.eng.Fetch(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			n += len(s.Points)
			from = max(from, s.FromRollup)
		}
		return n, from
	}
	raw, _ := count(RollupRaw)
	no, noFrom := count(RollupNoFallback)
	fb, fbFrom := count(RollupFallbackRaw)
	fb2, fb2From := count(RollupFallback)
	if raw == 0 || no >= raw || noFrom != 3_600_000 {
		t.Errorf("NOFALLBACK: %d buckets from %d, raw %d", no, noFrom, raw)
	}
	if fb != raw || fbFrom != 0 || fb2 != raw || fb2From != 0 {
		t.Errorf("FALLBACK_RAW: %d buckets from %d, FALLBACK %d from %d; raw %d", fb, fbFrom, fb2, fb2From, raw)
	}
}

// TestRollupExternal: a series with no computed bucket is read from the
// points written through /api/rollup: sum, count, min, max, and avg as
// Σ sum ÷ Σ count over the interval buckets that have both.
func TestRollupExternal(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 3)
	const iv = 600_000
	en := env.entries[0]
	t0 := env.first - 3*3_600_000
	mem := &memRollups{ivs: []int64{iv}, ext: map[int64]map[rollup.Aggregator]map[string][]chunk.Point{iv: {}}}
	put := func(agg rollup.Aggregator, tt int64, v chunk.Value) {
		m := mem.ext[iv][agg]
		if m == nil {
			m = map[string][]chunk.Point{}
			mem.ext[iv][agg] = m
		}
		m[string(en.TSUID)] = append(m[string(en.TSUID)], chunk.Point{T: tt, V: v})
	}
	// 18 ten-minute buckets: sum k, count 2 (none for k = 7), min -k, max 10k.
	want := map[string]map[int64]float64{"sum": {}, "count": {}, "min": {}, "max": {}, "avg": {}}
	cnt := map[int64]float64{}
	for k := range int64(18) {
		tt := t0 + k*iv
		h := tt - tt%3_600_000
		put(rollup.AggSum, tt, chunk.Int(k))
		put(rollup.AggMin, tt, chunk.Float(float64(-k)))
		put(rollup.AggMax, tt, chunk.Int(10*k))
		want["sum"][h] += float64(k)
		if k != 7 {
			put(rollup.AggCount, tt, chunk.Int(2))
			want["count"][h] += 2
			want["avg"][h] += float64(k)
			cnt[h] += 2
		}
		if _, ok := want["min"][h]; !ok || float64(-k) < want["min"][h] {
			want["min"][h] = float64(-k)
		}
		want["max"][h] = max(want["max"][h], float64(10*k))
	}
	for h := range want["avg"] {
		want["avg"][h] /= cnt[h]
	}
	env.eng.SetRollups(mem, nil)
	for name, w := range want {
		spec, err := downsample.ParseSpec("1h-" + name)
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Selector: Selector{Metric: "m", Start: t0, End: env.first - 1}, Downsample: &spec, Entries: []*series.Entry{en}}
		ss, err := env.eng.Fetch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 1 || len(ss[0].Points) != 3 || ss[0].FromRollup != iv {
			t.Fatalf("%s: %+v", name, ss)
		}
		for _, p := range ss[0].Points {
			if p.V.Float() != w[p.T] {
				t.Errorf("%s at %d: %v, want %v", name, p.T, p.V.Float(), w[p.T])
			}
		}
	}
}

// TestRollupLimit: the buckets read count against -query-max-points.
func TestRollupLimit(t *testing.T) {
	ctx := context.Background()
	env := openEquiv(t, 5)
	mem := newMemRollups(t, env, 600_000)
	spec, _ := downsample.ParseSpec("1h-max")
	req := Request{Selector: Selector{Metric: "m", Start: env.first, End: env.first + 4*3_600_000 - 1}, Downsample: &spec}
	for _, c := range []struct {
		max  int
		fail bool
	}{{100, true}, {1_000_000, false}} {
		eng := NewEngine(env.head.Head, env.eng.index, env.st, env.layout, Limits{MaxPoints: c.max})
		eng.SetRollups(mem, nil)
		ss, err := eng.Fetch(ctx, req)
		if c.fail != errors.Is(err, ErrLimit) {
			t.Fatalf("limit %d: %v", c.max, err)
		}
		if !c.fail && (len(ss) == 0 || ss[0].FromRollup == 0) {
			t.Fatalf("limit %d: %+v", c.max, ss)
		}
	}
}

// TestBucketAccExact holds bucketAcc to the downsampler over the same
// points, for every function buckets answer: whenever it says its value is
// exact, it is the downsampler's bit for bit, over ints near the ends of
// int64 (sums that overflow), floats, NaNs and one or several buckets.
func TestBucketAccExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const iv, d = 600_000, 3_600_000
	names := []string{"sum", "zimsum", "avg", "min", "max", "mimmin", "mimmax", "count", "first", "last", "diff"}
	exact, inexact := 0, 0
	for n := range 3000 {
		var pts []chunk.Point
		mode := n % 4
		for tt := int64(r.IntN(30_000)); tt < d; tt += 1 + r.Int64N(120_000) {
			var v chunk.Value
			switch {
			case mode == 0: // large ints: sums past 2^53 and past int64
				v = chunk.Int(r.Int64() >> uint(r.IntN(3)))
			case mode == 1: // small ints
				v = chunk.Int(r.Int64N(2000) - 1000)
			case r.IntN(15) == 0:
				v = chunk.Float(math.NaN())
			default: // decimals, some ints
				v = equivValue(r, false, 0)
			}
			pts = append(pts, chunk.Point{T: tt, V: v})
		}
		if n%3 == 0 && len(pts) > 1 {
			pts = pts[:1+r.IntN(len(pts)/2+1)] // several buckets, or one
		}
		bs, err := rollup.Compute(nil, pts, iv)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			spec, err := downsample.ParseSpec("1h-" + name)
			if err != nil {
				t.Fatal(err)
			}
			want := downsample.Downsample(nil, pts, spec, 0, d-1, time.UTC)
			var a bucketAcc
			a.reset()
			for k := range bs {
				a.add(&bs[k])
			}
			got, ok := a.result(name)
			if len(want) != 1 {
				t.Fatalf("%s: the downsampler gave %v", name, want)
			}
			if !ok {
				inexact++
				continue
			}
			exact++
			if !got.Identical(want[0].V) && !(got.Float() != got.Float() && want[0].V.Float() != want[0].V.Float()) {
				t.Fatalf("case %d %s over %d points in %d buckets: %v, the downsampler %v", n, name, len(pts), len(bs), got, want[0].V)
			}
		}
	}
	if inexact == 0 || exact < inexact {
		t.Errorf("%d exact, %d inexact answers", exact, inexact)
	}
	t.Logf("%d exact, %d left to raw points", exact, inexact)
}

// TestRollupMissingDays: a data set whose first days were written before
// rollups were (memRollups holds only the last day's): a downsample over
// all of it reads those series raw, so the answer is still the raw one,
// not just the last day.
func TestRollupMissingDays(t *testing.T) {
	ctx := context.Background()
	ts := openTestStore(t, time.UnixMilli(equivBase+4*dayMs))
	st, layout := ts.st, ts.layout
	h, idx := ts.openHead("wal")
	var samples []series.Sample
	for k := range 3 {
		l := series.MakeLabels("m", []series.Tag{{Key: "host", Value: fmt.Sprint(k)}})
		for tt := equivBase; tt < equivBase+3*dayMs; tt += 600_000 {
			samples = append(samples, series.Sample{Labels: l, T: tt, V: chunk.Float(float64(tt/600_000%89) + 0.25)})
		}
	}
	if err := h.Append(ctx, samples, make([]error, len(samples))); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil { // every hour to the store
		t.Fatal(err)
	}
	env := &equivEnv{st: st, layout: layout, eng: NewEngine(noHead{}, idx, st, layout, Limits{}), first: equivBase, last: equivBase + 3*dayMs - 1}
	env.entries = idx.Select("m", nil, false, env.first, env.last)
	mem := newMemRollups(t, env, 3_600_000)
	for k, bs := range mem.buckets[3_600_000] {
		i := sort.Search(len(bs), func(i int) bool { return bs[i].Start >= equivBase+2*dayMs })
		mem.buckets[3_600_000][k] = bs[i:] // rollups since the third day only
	}
	env.eng.SetRollups(mem, nil)
	spec, _ := downsample.ParseSpec("1h-avg")
	agg, _ := downsample.Lookup("sum")
	req := Request{Selector: Selector{Metric: "m", Start: env.first, End: env.last}, Aggregator: agg, Downsample: &spec}
	raw := req
	raw.Rollup = RollupRaw
	want, err := env.eng.Run(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.eng.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(want) != 1 || len(want[0].Points) != 72 || !samePoints(got[0].Points, want[0].Points) {
		t.Fatalf("got %d results (%d points), want %v", len(got), len(got[0].Points), len(want[0].Points))
	}
	// Over the third day alone the rollups answer.
	req.Start = equivBase + 2*dayMs
	ss, err := env.eng.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 || ss[0].FromRollup == 0 {
		t.Fatalf("the third day: %+v", ss)
	}
}
