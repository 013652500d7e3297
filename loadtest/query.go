package loadtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The query dialects.
const (
	// QueryOpenTSDB is POST /api/query with a JSON body.
	QueryOpenTSDB = "opentsdb"
	// QueryProm is GET /api/v1/query_range with PromQL.
	QueryProm = "prom"
)

// The query kinds of the dashboard mix.
const (
	// KindRaw is one gauge series of one host, raw, over the short range.
	KindRaw = "raw"
	// KindSum is a gauge summed by region over every host, per step.
	KindSum = "sum"
	// KindTopK is the k hosts with the highest value of a gauge.
	KindTopK = "topk"
	// KindRate is the per-second rate of a counter summed by service.
	KindRate = "rate"
	// KindLong is a gauge averaged by dc over the long range in 24 steps
	// (1h over a day).
	KindLong = "long"
)

// QueryKinds lists the kinds in the order reports show them.
var QueryKinds = []string{KindRaw, KindSum, KindTopK, KindRate, KindLong}

// QueryConfig says what queries to send.
type QueryConfig struct {
	Dialect string
	URL     string
	// Kinds to send, taken in turn; nil for all of QueryKinds.
	Kinds []string
	// Concurrency is the number of queries in flight.
	Concurrency int
	// Queries bounds the number of queries sent (required), Duration the
	// time (required).
	Queries  int
	Duration time.Duration
	// End is the end of every query's range, Unix ms; the data's last
	// timestamp is a good choice.
	End int64
	// Range is the range of the short queries (default 1h); LongRange that
	// of KindLong (default 24h); Step the resolution of the short
	// aggregating queries (default 1m).
	Range, LongRange, Step time.Duration
	// TopK is k of KindTopK (default 5).
	TopK int
	// Seed picks hosts and metrics: the same seed sends the same queries.
	Seed      uint64
	ServerPID int
	Label     string
	// RequestTimeout bounds one query (default 2m).
	RequestTimeout time.Duration
	// RollupUsage is the OpenTSDB queries' rollupUsage (default
	// ROLLUP_RAW: every point read raw, like for like with a peer that has
	// no rollups; "-" sends none, so the server chooses).
	RollupUsage string
	// Empties, if set, records every answer with no series.
	Empties       *EmptyLog
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Query is one query as a kind makes it, in both dialects.
type Query struct {
	Kind string
	// Start and End are Unix ms.
	Start, End int64
	// OpenTSDB is the /api/query body.
	OpenTSDB []byte
	// PromQL, with Step, is the /api/v1/query_range query.
	PromQL string
	Step   time.Duration
	// TopK is k for KindTopK: an OpenTSDB client ranks the series itself.
	TopK int
}

// MakeQuery builds the query of kind number i of a run: the same seed, i and
// configuration make the same query.
func MakeQuery(g *Generator, cfg *QueryConfig, kind string, i int) (Query, error) {
	r := rand.New(rand.NewPCG(cfg.Seed, mix(uint64(i), 0x71)))
	gauges, counters := metricsOfKind(Gauge), metricsOfKind(Counter)
	gauge := gauges[r.IntN(len(gauges))]
	counter := counters[r.IntN(len(counters))]
	step := cfg.Step
	end := cfg.End - cfg.End%step.Milliseconds() // dashboards align to the step
	q := Query{Kind: kind, End: end, Step: step, Start: end - cfg.Range.Milliseconds()}
	var sub map[string]any
	switch kind {
	case KindRaw:
		lastStep := max(0, (cfg.End-g.StartMs())/g.IntervalMs())
		host := g.HostAt(r.IntN(g.HostSlots()), lastStep)
		hostTag := fmt.Sprintf("host-%06d", host)
		q.End = cfg.End
		q.Start = cfg.End - cfg.Range.Milliseconds()
		q.Step = time.Duration(g.IntervalMs()) * time.Millisecond
		q.PromQL = fmt.Sprintf(`%s{host=%q}`, gauge, hostTag)
		sub = map[string]any{"aggregator": "none", "metric": gauge, "tags": map[string]string{"host": hostTag}}
	case KindSum:
		q.PromQL = fmt.Sprintf(`sum by (region) (%s)`, gauge)
		sub = map[string]any{"aggregator": "sum", "metric": gauge, "tags": map[string]string{"region": "*"},
			"downsample": durSpec(step) + "-avg"}
	case KindTopK:
		q.TopK = cfg.TopK
		q.PromQL = fmt.Sprintf(`topk(%d, %s)`, cfg.TopK, gauge)
		// OpenTSDB has no top-k: a dashboard asks for each host's maximum
		// over the range and ranks them.
		sub = map[string]any{"aggregator": "none", "metric": gauge, "downsample": "0all-max"}
	case KindRate:
		q.PromQL = fmt.Sprintf(`sum by (service) (rate(%s[5m]))`, counter)
		sub = map[string]any{"aggregator": "sum", "metric": counter, "tags": map[string]string{"service": "*"},
			"rate": true, "rateOptions": map[string]any{"counter": true}, "downsample": durSpec(step) + "-avg"}
	case KindLong:
		// 24 buckets over the range: 1h over a day.
		q.Step = max(cfg.LongRange/24, time.Duration(g.IntervalMs())*time.Millisecond)
		if q.Step >= time.Second {
			q.Step = q.Step.Truncate(time.Second)
		} else {
			q.Step = q.Step.Truncate(time.Millisecond) // the soak's measure: ranges of data 1 ms apart
		}
		q.End = cfg.End - cfg.End%q.Step.Milliseconds()
		q.Start = q.End - cfg.LongRange.Milliseconds()
		q.PromQL = fmt.Sprintf(`avg by (dc) (avg_over_time(%s[%s]))`, gauge, durSpec(q.Step))
		sub = map[string]any{"aggregator": "avg", "metric": gauge, "tags": map[string]string{"dc": "*"}, "downsample": durSpec(q.Step) + "-avg"}
	default:
		return Query{}, fmt.Errorf("unknown query kind %q (want one of %v)", kind, QueryKinds)
	}
	if u := cfg.RollupUsage; u != "-" {
		sub["rollupUsage"] = cmp.Or(u, "ROLLUP_RAW")
	}
	body, err := json.Marshal(map[string]any{"start": q.Start, "end": q.End, "queries": []any{sub}})
	if err != nil {
		return Query{}, err
	}
	q.OpenTSDB = body
	return q, nil
}

func metricsOfKind(k Kind) []string {
	var out []string
	for _, m := range Metrics {
		if m.Kind == k {
			out = append(out, m.Name)
		}
	}
	return out
}

// durSpec writes d as an OpenTSDB downsample interval: 30s, 1m, 1h.
func durSpec(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// queryOutcome is what one answer held.
type queryOutcome struct {
	series, points int
	err            error
	// The request and the answer, kept when the answer has no series.
	method, path, body string
	status             int
	answer             []byte
}

type kindState struct {
	lat            Latencies
	errors, empty  atomic.Int64
	series, points atomic.Int64
	example        string
}

// RunQueries replays the dashboard mix and returns its report. It stops
// after cfg.Queries queries, at cfg.Duration, or when ctx is done.
func RunQueries(ctx context.Context, g *Generator, cfg QueryConfig) (*Report, error) {
	if cfg.Dialect != QueryOpenTSDB && cfg.Dialect != QueryProm {
		return nil, fmt.Errorf("query dialect %q: want %s or %s", cfg.Dialect, QueryOpenTSDB, QueryProm)
	}
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("concurrency %d: must be at least 1", cfg.Concurrency)
	}
	if cfg.Queries < 1 || cfg.Duration <= 0 {
		return nil, errors.New("a bound on queries and on duration is required: the run always stops by itself")
	}
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = QueryKinds
	}
	if cfg.Range <= 0 {
		cfg.Range = time.Hour
	}
	if cfg.LongRange <= 0 {
		cfg.LongRange = 24 * time.Hour
	}
	if cfg.Step <= 0 {
		cfg.Step = time.Minute
	}
	if cfg.TopK <= 0 {
		cfg.TopK = 5
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Minute
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 2 * time.Second
	}
	if cfg.End == 0 {
		return nil, errors.New("query end time not set")
	}
	for _, k := range cfg.Kinds {
		if !slices.Contains(QueryKinds, k) {
			return nil, fmt.Errorf("unknown query kind %q (want some of %v)", k, QueryKinds)
		}
	}
	watch, err := watchServer(cfg.ServerPID, cfg.URL)
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Timeout:   cfg.RequestTimeout,
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: cfg.Concurrency},
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	kinds := make(map[string]*kindState, len(cfg.Kinds))
	for _, k := range cfg.Kinds {
		kinds[k] = &kindState{}
	}
	st := &progressState{}
	var next atomic.Int64
	var errs errorLog
	var mu sync.Mutex
	selfCPU0, _ := ProcCPU(os.Getpid())
	start := time.Now()
	stopProgress := startQueryProgress(cfg.Progress, cfg.ProgressEvery, start, st)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Queries {
					return
				}
				kind := cfg.Kinds[i%len(cfg.Kinds)]
				q, err := MakeQuery(g, &cfg, kind, i)
				if err != nil {
					errs.add(err.Error())
					return
				}
				ks := kinds[kind]
				mu.Lock()
				if ks.example == "" {
					ks.example = q.describe(cfg.Dialect)
				}
				mu.Unlock()
				newest := cfg.Empties.newest()
				t0 := time.Now()
				out := runQuery(ctx, client, cfg.Dialect, cfg.URL, q)
				d := time.Since(t0)
				if out.err != nil && ctx.Err() != nil {
					return // cut short by the end of the run
				}
				ks.lat.Add(d)
				st.lat.Add(d)
				st.requests.Add(1)
				if out.err != nil {
					ks.errors.Add(1)
					st.failed.Add(1)
					errs.add(kind + ": " + out.err.Error())
					continue
				}
				ks.series.Add(int64(out.series))
				ks.points.Add(int64(out.points))
				if out.series == 0 {
					ks.empty.Add(1)
					cfg.Empties.record(EmptyAnswer{Dialect: cfg.Dialect, Kind: kind, Sent: t0,
						Millis: float64(d.Microseconds()) / 1000, NewestSentMs: newest,
						Start: q.Start, End: q.End, Method: out.method, Path: out.path, Body: out.body,
						Status: out.status, Answer: string(out.answer)})
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	r := &Report{
		Label: cfg.Label, Mode: "query", Dialect: cfg.Dialect, Target: cfg.URL,
		Started: start, Seconds: elapsed.Seconds(), Concurrency: cfg.Concurrency,
		Requests: st.requests.Load(), RequestErrors: st.failed.Load(),
		Latency: st.lat.Summary(), Queries: make(map[string]*QueryStats),
		Errors: errs.list(),
	}
	switch {
	case next.Load() >= int64(cfg.Queries):
		r.Stopped = "queries"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.Stopped = "duration"
	default:
		r.Stopped = "interrupted"
	}
	for k, ks := range kinds {
		qs := &QueryStats{Latency: ks.lat.Summary(), Errors: ks.errors.Load(), Empty: ks.empty.Load(), Example: ks.example}
		if ok := int64(qs.Latency.Count) - qs.Errors; ok > 0 {
			qs.Series = float64(ks.series.Load()) / float64(ok)
			qs.Points = float64(ks.points.Load()) / float64(ok)
		}
		r.Queries[k] = qs
	}
	if cpu, err := ProcCPU(os.Getpid()); err == nil {
		r.ClientCPUSeconds = cpu - selfCPU0
	}
	if watch != nil {
		if s, err := watch.stats(0); err == nil {
			r.Server = s
		}
	}
	return r, nil
}

func (q Query) describe(dialect string) string {
	if dialect == QueryProm {
		return fmt.Sprintf("%s start=%d end=%d step=%s", q.PromQL, q.Start/1000, q.End/1000, q.Step)
	}
	return string(q.OpenTSDB)
}

// request is the HTTP request that asks q in dialect of the server at
// base, and its path and body as they are logged.
func (q Query) request(ctx context.Context, dialect, base string) (req *http.Request, path, body string, err error) {
	if dialect == QueryProm {
		v := url.Values{}
		v.Set("query", q.PromQL)
		v.Set("start", strconv.FormatFloat(float64(q.Start)/1000, 'f', -1, 64))
		v.Set("end", strconv.FormatFloat(float64(q.End)/1000, 'f', -1, 64))
		v.Set("step", strconv.FormatFloat(q.Step.Seconds(), 'f', -1, 64))
		path = "/api/v1/query_range?" + v.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		return req, path, "", err
	}
	path, body = "/api/query", string(q.OpenTSDB)
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(q.OpenTSDB))
	if req != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, path, body, err
}

// runQuery sends q and reads the answer.
func runQuery(ctx context.Context, client *http.Client, dialect, base string, q Query) queryOutcome {
	req, path, reqBody, err := q.request(ctx, dialect, base)
	if err != nil {
		return queryOutcome{err: err}
	}
	resp, err := client.Do(req)
	if err != nil {
		return queryOutcome{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return queryOutcome{err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return queryOutcome{err: statusError(resp, body)}
	}
	var out queryOutcome
	if dialect == QueryProm {
		out = readPromAnswer(body)
	} else {
		out = readOpenTSDBAnswer(body, q.TopK)
	}
	if out.err == nil && out.series == 0 {
		out.method, out.path, out.body, out.status, out.answer = req.Method, path, reqBody, resp.StatusCode, body
	}
	return out
}

// PromSeries is one series of a query_range answer.
type PromSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

func readPromAnswer(body []byte) queryOutcome {
	var a struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []PromSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return queryOutcome{err: fmt.Errorf("answer is not Prometheus JSON: %w", err)}
	}
	if a.Status != "success" {
		return queryOutcome{err: fmt.Errorf("status %q: %s", a.Status, a.Error)}
	}
	if a.Data.ResultType != "matrix" {
		return queryOutcome{err: fmt.Errorf("resultType %q, want matrix", a.Data.ResultType)}
	}
	out := queryOutcome{series: len(a.Data.Result)}
	for _, s := range a.Data.Result {
		out.points += len(s.Values)
	}
	return out
}

// OpenTSDBSeries is one series of an /api/query answer.
type OpenTSDBSeries struct {
	Metric        string             `json:"metric"`
	Tags          map[string]string  `json:"tags"`
	AggregateTags []string           `json:"aggregateTags"`
	DPS           map[string]float64 `json:"dps"`
}

func readOpenTSDBAnswer(body []byte, topK int) queryOutcome {
	var a []OpenTSDBSeries
	if err := json.Unmarshal(body, &a); err != nil {
		return queryOutcome{err: fmt.Errorf("answer is not OpenTSDB JSON: %w", err)}
	}
	if topK > 0 {
		// Rank by the series' largest point and keep k, as the client of
		// a top-k panel would.
		best := func(s OpenTSDBSeries) float64 {
			m := math.Inf(-1)
			for _, v := range s.DPS {
				m = max(m, v)
			}
			return m
		}
		slices.SortFunc(a, func(x, y OpenTSDBSeries) int { return -cmpFloat(best(x), best(y)) })
		a = a[:min(topK, len(a))]
	}
	out := queryOutcome{series: len(a)}
	for _, s := range a {
		out.points += len(s.DPS)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// startQueryProgress prints queries so far, per second, errors and latency.
func startQueryProgress(w io.Writer, every time.Duration, start time.Time, st *progressState) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		latFrom := 0
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				var s Summary
				s, latFrom = st.lat.Since(latFrom)
				n := st.requests.Load()
				fmt.Fprintf(w, "%6.1fs  queries %d  %.1f/s  failed %d  latency p50 %.1fms p99 %.1fms max %.1fms\n",
					now.Sub(start).Seconds(), n, float64(n)/now.Sub(start).Seconds(), st.failed.Load(), s.P50, s.P99, s.Max)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
