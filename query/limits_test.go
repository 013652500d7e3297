package query_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/query"
	"hourglass/rowkey"
)

const dayMs = 24 * rowkey.HourMs

func dsReq(t *testing.T, spec string, agg string, start, end int64) query.Request {
	t.Helper()
	a, err := downsample.Lookup(agg)
	if err != nil {
		t.Fatal(err)
	}
	req := query.Request{Selector: query.Selector{Metric: "m", Start: start, End: end}, Aggregator: a}
	if spec != "" {
		s, err := downsample.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		req.Downsample = &s
	}
	return req
}

// outputEnv holds nSeries series of metric m with a point every step ms
// over [base, base+span).
func outputEnv(t *testing.T, limits query.Limits, nSeries int, step, span int64) (*promEnv, *prometheus.Registry) {
	e := openPromEnv(t, limits)
	for i := range nSeries {
		var pts []chunk.Point
		for ts := base; ts < base+span; ts += step {
			pts = append(pts, fl(ts, float64(i)))
		}
		e.add("m", map[string]string{"host": string(rune('a' + i))}, pts...)
	}
	reg := prometheus.NewRegistry()
	e.eng.RegisterMetrics(reg)
	return e, reg
}

func exceededCount(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "hourglass_query_limit_exceeded_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == limit {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no hourglass_query_limit_exceeded_total{limit=%q}", limit)
	return 0
}

// The case: one point stored, a day of 1 ms buckets filled with
// zeros. The plan refuses it before a cell is read, naming the numbers.
func TestOutputLimitFromThePlan(t *testing.T) {
	e, reg := outputEnv(t, query.Limits{MaxOutputPoints: 1_000_000}, 1, 1, 1)
	for _, fill := range []string{"zero", "nan", "null"} {
		t.Run(fill, func(t *testing.T) {
			req := dsReq(t, "1ms-avg-"+fill, "sum", base, base+dayMs-1)
			_, err := e.eng.Run(context.Background(), req)
			var le *query.LimitError
			if !errors.As(err, &le) || le.What != "output points" || le.Need != dayMs {
				t.Fatalf("error %v, want an output points LimitError needing %d", err, dayMs)
			}
			for _, want := range []string{"86400000 output points", "1 series × 86400000 buckets of 1ms-avg-" + fill, "1000000", "-query-max-output-points"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
		})
	}
	if got := exceededCount(t, reg, "output_points"); got != 3 {
		t.Errorf("counter %v, want 3", got)
	}
	// Without fill the one point makes one bucket: no limit in sight.
	res, err := e.eng.Run(context.Background(), dsReq(t, "1ms-avg", "sum", base, base+dayMs-1))
	if err != nil || len(res) != 1 || len(res[0].Points) != 1 {
		t.Fatalf("1ms-avg: %v, %+v", err, res)
	}
	// Nor with 0all, whatever the range.
	res, err = e.eng.Run(context.Background(), dsReq(t, "0all-sum", "sum", base, base+365*dayMs))
	if err != nil || len(res) != 1 || len(res[0].Points) != 1 {
		t.Fatalf("0all: %v, %+v", err, res)
	}
}

// Each series fits, the series together do not: the running count stops
// the query as the series are downsampled, for every fill policy and for
// calendar buckets, whose count the plan only bounds loosely.
func TestOutputLimitWhileReading(t *testing.T) {
	// 4 series with a point a minute for 2 h: 4 × 120 one-minute buckets.
	lim := query.Limits{MaxOutputPoints: 300}
	e, reg := outputEnv(t, lim, 4, 60_000, 2*rowkey.HourMs)
	end := base + 2*rowkey.HourMs - 1
	for _, spec := range []string{"1m-avg", "1m-max-zero", "1m-sum-nan", "1m-avg-null", "1mc-avg", "1mc-count-zero", "1hc-avg-zero"} {
		t.Run(spec, func(t *testing.T) {
			req := dsReq(t, spec, "sum", base, end)
			res, err := e.eng.Run(context.Background(), req)
			if strings.HasPrefix(spec, "1h") {
				// 4 × 2 buckets: well within.
				if err != nil || len(res) != 1 || len(res[0].Points) != 2 {
					t.Fatalf("%v, %+v", err, res)
				}
				return
			}
			var le *query.LimitError
			if !errors.As(err, &le) || le.What != "output points" || le.Limit != 300 {
				t.Fatalf("error %v, want an output points LimitError", err)
			}
			if !strings.Contains(err.Error(), spec) {
				t.Errorf("message %q does not name %s", err, spec)
			}
		})
	}
	if got := exceededCount(t, reg, "output_points"); got != 6 {
		t.Errorf("counter %v, want 6", got)
	}
	// With a limit that holds the 480 buckets, the same queries answer.
	// Everything flushed first: while a chunk is both in the store and
	// still in the head (written, not yet dropped from it), a series'
	// points are counted from both, and without a fill policy each series
	// reserves min(its count, the calendar's loose bound of 121) buckets.
	// Series read in parallel can then reserve past 480 together before
	// any gives back what it did not use, and one of them is refused: a
	// query exactly at the limit may fail while a flush is under way.
	e2, _ := outputEnv(t, query.Limits{MaxOutputPoints: 480}, 4, 60_000, 2*rowkey.HourMs)
	if err := e2.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"1m-avg-zero", "1mc-avg"} {
		res, err := e2.eng.Run(context.Background(), dsReq(t, spec, "sum", base, end))
		if err != nil || len(res) != 1 || len(res[0].Points) != 120 {
			t.Fatalf("%s at the limit: %v, %d results", spec, err, len(res))
		}
	}
}

// Without a downsample each raw point is an output point: the tighter of
// -query-max-points and -query-max-output-points bounds them, as the
// store's cells are counted and before they are decoded.
func TestOutputLimitRaw(t *testing.T) {
	e, reg := outputEnv(t, query.Limits{MaxOutputPoints: 100}, 2, 60_000, 2*rowkey.HourMs)
	_, err := e.eng.Run(context.Background(), dsReq(t, "", "sum", base, base+2*rowkey.HourMs))
	var le *query.LimitError
	if !errors.As(err, &le) || le.What != "output points" || le.Need <= 100 || le.Need > 240 || !le.AtLeast {
		t.Fatalf("error %v, want an output points LimitError needing at least 101", err)
	}
	if !strings.Contains(err.Error(), "at least") {
		t.Errorf("message %q", err)
	}
	if got := exceededCount(t, reg, "output_points"); got != 1 {
		t.Errorf("counter %v", got)
	}
	// The same with a downsample that makes few points is fine.
	res, err := e.eng.Run(context.Background(), dsReq(t, "1h-avg", "none", base, base+2*rowkey.HourMs))
	if err != nil || len(res) != 2 {
		t.Fatalf("1h-avg: %v, %d results", err, len(res))
	}
}

// A range query's selector costs steps × series before a sample is read.
func TestPromOutputLimit(t *testing.T) {
	e := fixture(t, query.Limits{})
	reg := prometheus.NewRegistry()
	e.eng.RegisterMetrics(reg)
	name := mustMatcher(t, labels.MatchEqual, "__name__", "http_requests_total")
	lookback := 5 * time.Minute
	for _, tc := range []struct {
		limit   int
		step    int64
		wantErr bool
	}{
		{limit: 3 * 61, step: 60_000, wantErr: false}, // 3 series × 61 steps in the hour
		{limit: 3*61 - 1, step: 60_000, wantErr: true},
		{limit: 1000, step: 1000, wantErr: true}, // 3 × 3601
		{limit: 0, step: 1, wantErr: false},      // no limit
	} {
		q, _ := e.eng.Queryable(query.PromLimits{MaxOutputPoints: tc.limit, LookbackDelta: lookback}).Querier(base-lookback.Milliseconds(), base+3600000)
		hints := &storage.SelectHints{Start: base - lookback.Milliseconds(), End: base + 3600000, Step: tc.step}
		ss := q.Select(context.Background(), true, hints, name)
		n := 0
		for ss.Next() {
			n++
		}
		var le *query.LimitError
		if got := errors.As(ss.Err(), &le) && le.What == "output points"; got != tc.wantErr {
			t.Errorf("limit %d step %d: error %v, want one: %v", tc.limit, tc.step, ss.Err(), tc.wantErr)
		}
		if !tc.wantErr && n != 3 {
			t.Errorf("limit %d step %d: %d series", tc.limit, tc.step, n)
		}
	}
	if got := exceededCount(t, reg, "output_points"); got != 2 {
		t.Errorf("counter %v, want 2", got)
	}
}

// deadlineCtx's deadline passes after a number of looks at Err: a query
// that is still running by then must stop, wherever it is.
type deadlineCtx struct {
	context.Context
	left atomic.Int64
}

func (c *deadlineCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// The timeout is looked at while one long series is decoded and
// downsampled, not only between series: a query whose context expires
// after a few looks stops with DeadlineExceeded.
func TestQueryTimeoutInsideASeries(t *testing.T) {
	// One series of 200,000 points: 12 looks or more while it decodes.
	e, reg := outputEnv(t, query.Limits{}, 1, 10, 2_000_000)
	_ = reg
	for _, spec := range []string{"", "1s-avg", "1s-avg-zero", "1mc-sum", "0all-max"} {
		t.Run("spec="+spec, func(t *testing.T) {
			ctx := &deadlineCtx{Context: context.Background()}
			ctx.left.Store(3)
			_, err := e.eng.Run(ctx, dsReq(t, spec, "sum", base, base+2_000_000))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v, want DeadlineExceeded", err)
			}
			// Unbounded looks: the same query answers.
			ctx.left.Store(1 << 40)
			res, err := e.eng.Run(ctx, dsReq(t, spec, "sum", base, base+2_000_000))
			if err != nil || len(res) != 1 {
				t.Fatalf("without the deadline: %v, %d results", err, len(res))
			}
		})
	}
}
