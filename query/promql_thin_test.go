package query

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestPromThinnedHeadMatchesEngine runs random range and instant queries
// of instant vector selectors over the equivalence data with its head in
// place (late points over the store's hours, some at the store's
// timestamps; the newest hours' points) and a head series with staleness
// markers, with and without PromPushdown, which thins the head's points
// as Select reads them (series.Head.SnapshotThin), and requires the same
// answer bit for bit. The thinned snapshots must hold fewer points than
// the plain ones, with the same count for the sample budget.
func TestPromThinnedHeadMatchesEngine(t *testing.T) {
	ctx := context.Background()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true})
	exprs := []string{"m", "sum by (dc) (m)", "topk(3, m)", "m offset 17m", "timestamp(m)", "m - m offset 1m",
		"count(m)", "m offset -3m", `absent(m{host="nope"})`, "-m", `m{host=~"stale|h0.*"}`}
	for seed := range uint64(3) {
		env := openEquiv(t, seed)
		addHeadStale(t, env)
		entries := env.eng.index.Select("m", nil, false, env.first, env.last+rowkey.HourMs)

		// Thinning drops head points, not the count of them.
		th := &series.Thin{T0: env.first, Step: 60_000, End: env.last}
		var keep keptArenas
		plain, err := env.eng.scan(ctx, entries, env.first, env.last, pointLimit{}, nil, &keep)
		if err != nil {
			t.Fatal(err)
		}
		thinned, err := env.eng.scanThin(ctx, entries, env.first, env.last, th, pointLimit{}, nil, &keep)
		if err != nil {
			t.Fatal(err)
		}
		var np, nt int
		for i := range plain {
			np, nt = np+len(plain[i].head), nt+len(thinned[i].head)
			if plain[i].n != thinned[i].n {
				t.Fatalf("series %d: %d points counted thinned, %d plain", i, thinned[i].n, plain[i].n)
			}
		}
		keep.release()
		if nt == 0 || 2*nt > np {
			t.Fatalf("seed %d: thinned snapshots hold %d points, plain ones %d", seed, nt, np)
		}

		qy := env.eng.Queryable(PromLimits{})
		r := rand.New(rand.NewPCG(seed, 11))
		for n := range 150 {
			expr := exprs[r.IntN(len(exprs))]
			step := []time.Duration{10 * time.Second, 15 * time.Second, time.Minute, 7 * time.Minute, time.Hour, 0}[r.IntN(6)]
			start, end := env.randomRange(r)
			if r.IntN(3) > 0 {
				// Mostly the newest hours, where the head is.
				start = env.last - r.Int64N(3*rowkey.HourMs)
				end = start + r.Int64N(env.last+rowkey.HourMs/2-start)
			}
			if r.IntN(2) == 0 {
				start, end = start/1000*1000, end/1000*1000
			}
			mk := func() (promql.Query, error) {
				if step == 0 {
					return eng.NewInstantQuery(ctx, qy, nil, expr, time.UnixMilli(end))
				}
				return eng.NewRangeQuery(ctx, qy, nil, expr, time.UnixMilli(start), time.UnixMilli(end), step)
			}
			want := runQuery(t, mk, func(promql.Query) context.Context { return ctx })
			got := runQuery(t, mk, func(q promql.Query) context.Context { return PromPushdown(ctx, q.Statement()) })
			if got != want {
				t.Fatalf("seed %d case %d: %s, [%d, %d] step %s:\n%s", seed, n, expr, start, end, step, firstDiff(got, want))
			}
		}
	}
}

// addHeadStale writes to the head, and leaves there, a series of m whose
// samples are now and then Prometheus' staleness marker, every 7 s over
// the data's last two hours, some of them written twice (the later value
// wins) and out of order.
func addHeadStale(t *testing.T, env *equivEnv) {
	t.Helper()
	l := series.MakeLabels("m", []series.Tag{{Key: "host", Value: "stale"}, {Key: "dc", Value: "d0"}})
	var samples []series.Sample
	for i, tt := 0, env.last-2*rowkey.HourMs; tt <= env.last; i, tt = i+1, tt+7_000 {
		v := chunk.Float(float64(i % 17))
		if i%5 == 0 {
			v = chunk.Float(math.Float64frombits(value.StaleNaN))
		}
		samples = append(samples, series.Sample{Labels: l, T: tt, V: v})
	}
	// Rewrites of every 11th sample, newest first.
	for i := len(samples) - 1; i >= 0; i -= 11 {
		samples = append(samples, series.Sample{Labels: l, T: samples[i].T, V: chunk.Float(float64(1000 + i))})
	}
	errs := make([]error, len(samples))
	if err := env.head.Append(context.Background(), samples, errs); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatal(fmt.Errorf("sample %d: %w", i, err))
		}
	}
}
