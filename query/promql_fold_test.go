package query_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"hourglass/internal/procs"
	"hourglass/query"
	"hourglass/rowkey"
)

// TestFoldSeriesMatchesEngine: the windows Select folds ahead, spread over
// several goroutines (more series than one goroutine takes, four workers),
// answer as the engine does over the raw samples, bit for bit: every
// folded function, at steps of the range and beyond it, and in an
// instant query, over store cells and the head.
func TestFoldSeriesMatchesEngine(t *testing.T) {
	procs.SetWorkers(4)
	t.Cleanup(func() { procs.SetWorkers(0) })
	env, err := buildBench(t.TempDir(), 200, 3*360)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.head.Close()
		env.st.Close()
	})
	ctx := context.Background()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e8, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(query.PromLimits{})
	start, end := env.start+rowkey.HourMs+17_000, env.end+rowkey.HourMs // the head's hour too
	run := func(expr string, step time.Duration, fold bool) string {
		t.Helper()
		var q promql.Query
		var err error
		if step == 0 {
			q, err = eng.NewInstantQuery(ctx, qy, nil, expr, time.UnixMilli(end))
		} else {
			q, err = eng.NewRangeQuery(ctx, qy, nil, expr, time.UnixMilli(start), time.UnixMilli(end), step)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		ectx := ctx
		if fold {
			ectx = query.PromPushdown(ctx, q.Statement())
		}
		res := q.Exec(ectx)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		var out strings.Builder
		n := 0
		switch v := res.Value.(type) {
		case promql.Matrix:
			for _, s := range v {
				out.WriteString(s.Metric.String())
				for _, p := range s.Floats {
					fmt.Fprintf(&out, " %d:%x", p.T, math.Float64bits(p.F))
					n++
				}
				out.WriteString("\n")
			}
		case promql.Vector:
			for _, s := range v {
				fmt.Fprintf(&out, "%s %d:%x\n", s.Metric, s.T, math.Float64bits(s.F))
				n++
			}
		}
		if n < 200 {
			t.Fatalf("%s: %d samples, want one per series and step at least", expr, n)
		}
		return out.String()
	}
	for _, fn := range []string{"avg_over_time", "sum_over_time", "min_over_time", "max_over_time", "last_over_time"} {
		for _, c := range []struct {
			rng  string
			step time.Duration
		}{{"1h", time.Hour}, {"20m", time.Hour}, {"10m", 10 * time.Minute}, {"1h", 0}} {
			expr := fmt.Sprintf(`%s({__name__="cpu.usage"}[%s])`, fn, c.rng)
			if got, want := run(expr, c.step, true), run(expr, c.step, false); got != want {
				t.Fatalf("%s step %s: folded answer differs from the engine's", expr, c.step)
			}
		}
	}
}
