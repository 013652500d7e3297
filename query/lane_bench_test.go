package query_test

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"hourglass/query"
	"hourglass/rowkey"
)

// BenchmarkLightUnderLoad runs the mix's raw kind (one series, an hour of
// the head at its 10 s steps, through PromQL) while two heavy queries run
// without pause beside it (the mix's sum over every series, an hour of the
// store at 1 m steps: the two of -query-max-concurrent), and reports the
// raw query's wall time from when it is due, p50 and p90: what the light
// lane leaves of its wait, the processors it shares with the heavy
// queries' goroutines; and the heavy queries answered a second.
func BenchmarkLightUnderLoad(b *testing.B) {
	env := openBench(b)
	ctx, cancel := context.WithCancel(context.Background())
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := env.eng.Queryable(query.PromLimits{})
	run := func(q string, start, end int64, step time.Duration) error {
		qr, err := eng.NewRangeQuery(ctx, qy, nil, q, time.UnixMilli(start), time.UnixMilli(end), step)
		if err != nil {
			return err
		}
		defer qr.Close()
		return qr.Exec(query.PromPushdown(ctx, qr.Statement())).Err
	}
	var wg sync.WaitGroup
	var heavy atomic.Int64
	began := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := run(`sum by (region) ({__name__="cpu.usage"})`, env.end-rowkey.HourMs, env.end, time.Minute); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				heavy.Add(1)
			}
		}()
	}
	headEnd := env.end + rowkey.HourMs - benchStepMs
	var walls []time.Duration
	for b.Loop() {
		// A request arriving: the goroutine wakes (here from a sleep, in
		// the server from the network poller) and waits for a processor
		// as a request's does; its wall time counts from the wake-up due.
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		if err := run(`{__name__="cpu.usage",host="h00007"}`, headEnd-rowkey.HourMs, headEnd, benchStepMs*time.Millisecond); err != nil {
			b.Fatal(err)
		}
		walls = append(walls, time.Since(t0)-time.Millisecond)
	}
	cancel()
	wg.Wait()
	b.ReportMetric(float64(heavy.Load())/time.Since(began).Seconds(), "heavy/s")
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	b.ReportMetric(float64(walls[len(walls)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(walls[len(walls)*9/10].Microseconds())/1000, "p90-ms")
}
