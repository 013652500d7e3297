package query_test

import (
	"context"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"hourglass/downsample"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
)

// BenchmarkLightUnderLoad runs the mix's raw kind (one series, an hour of
// the head at its 10 s steps, through PromQL) while two heavy queries run
// without pause beside it (the mix's sum over every series, an hour of the
// store at 1 m steps: the two of -query-max-concurrent), and reports the
// raw query's wall time from when it is due, p50 and p90: what the light
// lane leaves of its wait, the processors it shares with the heavy
// queries' goroutines; and the heavy queries answered a second.
//
// wake=timer: the raw query's goroutine wakes from a sleep. wake=net: it
// is woken by a byte on a loopback TCP connection, as a server's
// connection goroutine is by a request, and answers with a byte; the wall
// time is the round trip. Go's scheduler looks at the network only when a
// processor runs out of goroutines (or every 10 ms), so -cpu 2,3 (GOMAXPROCS
// at the cores and one more, cmd/hourglass's -gomaxprocs-extra) shows what
// a spare processor does for a request woken by the network.
//
// dialect=otsdb: the same two questions as /api/query asks them, through
// Engine.Run (sum: 1m-avg buckets summed by region; raw: the host's
// points).
func BenchmarkLightUnderLoad(b *testing.B) {
	for _, dialect := range []string{"prom", "otsdb"} {
		for _, wake := range []string{"timer", "net"} {
			b.Run("dialect="+dialect+"/wake="+wake, func(b *testing.B) { benchLightUnderLoad(b, wake == "net", dialect == "otsdb") })
		}
	}
}

func benchLightUnderLoad(b *testing.B, viaNet, otsdb bool) {
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
	headEnd := env.end + rowkey.HourMs - benchStepMs
	light := func() error {
		return run(`{__name__="cpu.usage",host="h00007"}`, headEnd-rowkey.HourMs, headEnd, benchStepMs*time.Millisecond)
	}
	heavyQuery := func() error {
		return run(`sum by (region) ({__name__="cpu.usage"})`, env.end-rowkey.HourMs, env.end, time.Minute)
	}
	if otsdb {
		sum, err := downsample.Lookup("sum")
		if err != nil {
			b.Fatal(err)
		}
		none, err := downsample.Lookup("none")
		if err != nil {
			b.Fatal(err)
		}
		spec, err := downsample.ParseSpec("1m-avg")
		if err != nil {
			b.Fatal(err)
		}
		light = func() error {
			_, err := env.eng.Run(ctx, query.Request{Aggregator: none, Selector: query.Selector{Metric: "cpu.usage",
				Matchers: []series.Matcher{literal{"host", "h00007"}}, Start: headEnd - rowkey.HourMs, End: headEnd}})
			return err
		}
		heavyQuery = func() error {
			_, err := env.eng.Run(ctx, query.Request{Aggregator: sum, Downsample: &spec, GroupBy: []string{"region"},
				Selector: query.Selector{Metric: "cpu.usage", Matchers: []series.Matcher{anyValue("region")}, Start: env.end - rowkey.HourMs, End: env.end}})
			return err
		}
	}
	var client net.Conn
	if viaNet {
		var err error
		if client, err = lightServer(ctx, light); err != nil {
			b.Fatal(err)
		}
		defer client.Close()
	}
	var wg sync.WaitGroup
	var heavy atomic.Int64
	began := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := heavyQuery(); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				heavy.Add(1)
			}
		}()
	}
	var walls []time.Duration
	buf := []byte{0}
	for b.Loop() {
		if viaNet {
			t0 := time.Now()
			if _, err := client.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(client, buf); err != nil || buf[0] != 0 {
				b.Fatalf("light query over the connection: %v (answer %d)", err, buf[0])
			}
			walls = append(walls, time.Since(t0))
			time.Sleep(time.Millisecond) // requests arrive apart, as the mix's do
			continue
		}
		// A request arriving: the goroutine wakes (here from a sleep, in
		// the server from the network poller) and waits for a processor
		// as a request's does; its wall time counts from the wake-up due.
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		if err := light(); err != nil {
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

// BenchmarkLightCheck runs short queries of the mix as the server does:
// admitted (the light lane's check, with the lane on at its defaults),
// then run, through PromQL (prom-*) and as OpenTSDB sub-queries (otsdb-*,
// planned beforehand: the check's selection and the run's are what is
// measured, not the names' resolution). raw is one series over the head's
// last hour at its 10 s steps, offset the same selector twice, regex ten
// series picked by a regular expression (every series of the metric
// looked at, at 1 m steps); sum, every
// series of the metric (heavy: its check stops at the bound). cpu-ns/op
// is the process's CPU per query.
func BenchmarkLightCheck(b *testing.B) {
	env := openBench(b)
	ctx := context.Background()
	eng := query.NewEngine(env.head.Head, env.idx, env.st, env.layout, query.Limits{MaxConcurrent: 2, QueueTimeout: time.Minute})
	eng.SetLanes(query.DefaultLanes())
	pe := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qy := eng.Queryable(query.PromLimits{})
	headEnd := env.end + rowkey.HourMs - benchStepMs
	for _, c := range []struct {
		name, qs string
		step     time.Duration
		start    int64
	}{
		{"prom-raw", `{__name__="cpu.usage",host="h00007"}`, benchStepMs * time.Millisecond, headEnd - rowkey.HourMs},
		{"prom-offset", `{__name__="cpu.usage",host="h00007"} - {__name__="cpu.usage",host="h00007"} offset 10m`, time.Minute, headEnd - rowkey.HourMs},
		{"prom-regex", `{__name__="cpu.usage",host=~"h0000.+"}`, time.Minute, headEnd - rowkey.HourMs},
		{"prom-sum", `sum by (region) ({__name__="cpu.usage"})`, time.Minute, env.end - rowkey.HourMs},
	} {
		b.Run(c.name, func(b *testing.B) {
			end := headEnd
			if c.name == "prom-sum" {
				end = env.end
			}
			b.ReportAllocs()
			defer reportCPU(b, startCPU(), 0)
			for b.Loop() {
				q, err := pe.NewRangeQuery(ctx, qy, nil, c.qs, time.UnixMilli(c.start), time.UnixMilli(end), c.step)
				if err != nil {
					b.Fatal(err)
				}
				qctx, release, err := admitProm(ctx, eng, q.Statement())
				if err != nil {
					b.Fatal(err)
				}
				if res := q.Exec(query.PromPushdown(qctx, q.Statement())); res.Err != nil {
					b.Fatal(res.Err)
				}
				release()
				q.Close()
			}
		})
	}
	none, _ := downsample.Lookup("none")
	sum, _ := downsample.Lookup("sum")
	for _, c := range []struct {
		name string
		req  query.Request
	}{
		{"otsdb-raw", query.Request{Selector: query.Selector{Metric: "cpu.usage", Matchers: []series.Matcher{literal{"host", "h00007"}},
			Start: headEnd - rowkey.HourMs, End: headEnd}, Aggregator: none}},
		{"otsdb-regex", query.Request{Selector: query.Selector{Metric: "cpu.usage", Matchers: []series.Matcher{hostPrefix("h0000")},
			Start: headEnd - rowkey.HourMs, End: headEnd}, Aggregator: none}},
		{"otsdb-sum", query.Request{Selector: query.Selector{Metric: "cpu.usage", Matchers: []series.Matcher{anyValue("region")},
			Start: env.end - rowkey.HourMs, End: env.end}, Aggregator: sum, GroupBy: []string{"region"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, startCPU(), 0)
			for b.Loop() {
				planned, release, err := admitOTSDB(ctx, eng, c.req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := eng.Run(ctx, planned); err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
	}
}

// admitProm and admitOTSDB admit a query as the server's handlers do.
func admitProm(ctx context.Context, eng *query.Engine, st parser.Statement) (context.Context, func(), error) {
	return eng.AdmitPromQL(ctx, st)
}

func admitOTSDB(ctx context.Context, eng *query.Engine, req query.Request) (query.Request, func(), error) {
	planned, release, err := eng.AdmitRequests(ctx, 1, func(int) (query.Request, bool) { return req, true })
	if planned != nil {
		req = planned[0]
	}
	return req, release, err
}

// hostPrefix matches the series whose host starts with a prefix (as an
// OpenTSDB wildcard filter does): the index looks at every series.
type hostPrefix string

func (m hostPrefix) Key() string { return "host" }
func (m hostPrefix) Matches(v string, ok bool) bool {
	return ok && len(v) > len(m) && v[:len(m)] == string(m)
}

// lightServer accepts one loopback connection and, for every byte read on
// it, runs light and answers a byte (0: done, 1: light failed); it returns
// the client's end.
func lightServer(ctx context.Context, light func() error) (net.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := []byte{0}
		for ctx.Err() == nil {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			buf[0] = 0
			if light() != nil {
				buf[0] = 1
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	return net.Dial("tcp", ln.Addr().String())
}
