package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The rollup benchmark (issue 13): the same long dashboard query asked with
// and without rollups, rounds interleaved, the answers compared and the
// server's wall and CPU time per query set side by side.

// RollupBenchConfig configures RollupBench.
type RollupBenchConfig struct {
	URL        string
	PID        int      // the server, for its CPU time (0: none)
	Start, End int64    // ms
	Metrics    []string // one sub-query (OpenTSDB) or query (PromQL) each
	GroupBy    string   // the tag the query groups by
	Downsample string   // OpenTSDB downsample, e.g. 1h-avg
	Aggregator string   // OpenTSDB cross-series aggregator
	// PromFunc is the PromQL form, %s the metric: avg by (dc) (avg_over_time(%s[1h])).
	PromFunc string
	Step     time.Duration // PromQL step
	Rounds   int
	Timeout  time.Duration
	// Warm sends each request once unmeasured just before it is measured:
	// a repeated query, which finds in the store's block cache what the
	// first read (otherwise the other way's query ran last: cold).
	Warm bool
}

// RollupRun is the figures of one way of asking, over the rounds.
type RollupRun struct {
	Name        string
	WallSeconds []float64 // per round
	CPUSeconds  []float64 // server CPU per round (empty without a PID)
	Bytes       int       // size of the answer
	Points      int       // points in the answer
}

// RollupComparison is how two answers compare.
type RollupComparison struct {
	Identical   bool    // byte for byte
	Points      int     // points compared
	Equal       int     // points with the same value (bits)
	Missing     int     // points in one answer only
	MaxRelative float64 // largest |a−b| / |b| among the others
}

// RollupReport is what RollupBench measured.
type RollupReport struct {
	OpenTSDBRollup, OpenTSDBRaw RollupRun
	OpenTSDB                    RollupComparison
	PromRollup, PromRaw         RollupRun
	Prom                        RollupComparison
	RollupReads                 float64 // hourglass_query_rollup_reads_total grew by this much
}

// RollupBench runs the benchmark.
func RollupBench(ctx context.Context, cfg RollupBenchConfig) (*RollupReport, error) {
	client := &http.Client{Timeout: cfg.Timeout}
	rep := &RollupReport{}
	readsBefore := rollupReads(ctx, client, cfg.URL)
	// One /api/query request holds a sub-query per metric; PromQL takes a
	// request per metric (grouped by the tag, the metrics' answers would
	// share label sets).
	otsdb := func(usage string) func() ([]*http.Request, error) {
		return func() ([]*http.Request, error) {
			body, err := openTSDBRollupBody(cfg, usage)
			if err != nil {
				return nil, err
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL+"/api/query", bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			return []*http.Request{req}, nil
		}
	}
	prom := func(res string) func() ([]*http.Request, error) {
		return func() ([]*http.Request, error) {
			var out []*http.Request
			for _, m := range cfg.Metrics {
				v := url.Values{}
				v.Set("query", fmt.Sprintf(cfg.PromFunc, m))
				v.Set("start", strconv.FormatInt(cfg.Start/1000, 10))
				v.Set("end", strconv.FormatInt(cfg.End/1000, 10))
				v.Set("step", strconv.FormatInt(int64(cfg.Step/time.Second), 10))
				if res != "" {
					v.Set("max_source_resolution", res)
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL+"/api/v1/query_range", strings.NewReader(v.Encode()))
				if err != nil {
					return nil, err
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				out = append(out, req)
			}
			return out, nil
		}
	}
	type way struct {
		run  *RollupRun
		make func() ([]*http.Request, error)
		body [][]byte
	}
	pairs := [][2]way{
		{{run: &rep.OpenTSDBRollup, make: otsdb("")}, {run: &rep.OpenTSDBRaw, make: otsdb("ROLLUP_RAW")}},
	}
	if cfg.PromFunc != "" {
		pairs = append(pairs, [2]way{{run: &rep.PromRollup, make: prom(durString(cfg.Step))}, {run: &rep.PromRaw, make: prom("")}})
	}
	rep.OpenTSDBRollup.Name, rep.OpenTSDBRaw.Name = "/api/query (rollups)", "/api/query ROLLUP_RAW"
	rep.PromRollup.Name, rep.PromRaw.Name = "query_range max_source_resolution="+durString(cfg.Step), "query_range (raw)"
	for round := range cfg.Rounds {
		for p := range pairs {
			order := []int{0, 1}
			if round%2 == 1 {
				order = []int{1, 0} // interleave: neither always goes first
			}
			for _, k := range order {
				w := &pairs[p][k]
				if cfg.Warm {
					if _, _, _, err := timeRequest(client, w.make, 0); err != nil {
						return nil, fmt.Errorf("%s: %w", w.run.Name, err)
					}
				}
				body, wall, cpu, err := timeRequest(client, w.make, cfg.PID)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", w.run.Name, err)
				}
				w.run.WallSeconds = append(w.run.WallSeconds, wall)
				if cfg.PID > 0 {
					w.run.CPUSeconds = append(w.run.CPUSeconds, cpu)
				}
				w.body, w.run.Bytes = body, 0
				for _, b := range body {
					w.run.Bytes += len(b)
				}
			}
		}
	}
	var err error
	if rep.OpenTSDB, rep.OpenTSDBRollup.Points, rep.OpenTSDBRaw.Points, err = compareOpenTSDB(pairs[0][0].body, pairs[0][1].body); err != nil {
		return nil, err
	}
	if len(pairs) > 1 {
		if rep.Prom, rep.PromRollup.Points, rep.PromRaw.Points, err = compareProm(pairs[1][0].body, pairs[1][1].body); err != nil {
			return nil, err
		}
	}
	rep.RollupReads = rollupReads(ctx, client, cfg.URL) - readsBefore
	return rep, nil
}

func durString(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

func openTSDBRollupBody(cfg RollupBenchConfig, usage string) ([]byte, error) {
	type filter struct {
		Type    string `json:"type"`
		TagK    string `json:"tagk"`
		Filter  string `json:"filter"`
		GroupBy bool   `json:"groupBy"`
	}
	type sub struct {
		Aggregator  string   `json:"aggregator"`
		Metric      string   `json:"metric"`
		Downsample  string   `json:"downsample"`
		Filters     []filter `json:"filters"`
		RollupUsage string   `json:"rollupUsage,omitempty"`
	}
	q := struct {
		Start   int64 `json:"start"`
		End     int64 `json:"end"`
		Queries []sub `json:"queries"`
	}{Start: cfg.Start, End: cfg.End}
	for _, m := range cfg.Metrics {
		q.Queries = append(q.Queries, sub{Aggregator: cfg.Aggregator, Metric: m, Downsample: cfg.Downsample,
			Filters: []filter{{Type: "wildcard", TagK: cfg.GroupBy, Filter: "*", GroupBy: true}}, RollupUsage: usage})
	}
	return json.Marshal(q)
}

// timeRequest sends the requests mk makes one after another and reads the
// whole answers; it returns the bodies, the wall seconds and the server's
// CPU seconds meanwhile.
func timeRequest(client *http.Client, mk func() ([]*http.Request, error), pid int) ([][]byte, float64, float64, error) {
	reqs, err := mk()
	if err != nil {
		return nil, 0, 0, err
	}
	var cpu0 float64
	if pid > 0 {
		if cpu0, err = ProcCPU(pid); err != nil {
			return nil, 0, 0, err
		}
	}
	t0 := time.Now()
	var bodies [][]byte
	for _, req := range reqs {
		resp, err := client.Do(req)
		if err != nil {
			return nil, 0, 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, 0, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, 0, 0, fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, body)
		}
		bodies = append(bodies, body)
	}
	wall := time.Since(t0).Seconds()
	var cpu float64
	if pid > 0 {
		cpu1, err := ProcCPU(pid)
		if err != nil {
			return nil, 0, 0, err
		}
		cpu = cpu1 - cpu0
	}
	return bodies, wall, cpu, nil
}

var rollupReadsLine = regexp.MustCompile(`(?m)^hourglass_query_rollup_reads_total\{[^}]*\} ([0-9.e+]+)$`)

// rollupReads sums hourglass_query_rollup_reads_total on the server's
// /metrics (0 when it has none).
func rollupReads(ctx context.Context, client *http.Client, base string) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, m := range rollupReadsLine.FindAllSubmatch(b, -1) {
		f, _ := strconv.ParseFloat(string(m[1]), 64)
		total += f
	}
	return total
}

// compareOpenTSDB compares two /api/query answers: byte for byte, then
// point by point by metric, tags and timestamp.
func compareOpenTSDB(a, b [][]byte) (RollupComparison, int, int, error) {
	pa, err := openTSDBPoints(a[0])
	if err != nil {
		return RollupComparison{}, 0, 0, err
	}
	pb, err := openTSDBPoints(b[0])
	if err != nil {
		return RollupComparison{}, 0, 0, err
	}
	c := comparePoints(pa, pb)
	c.Identical = bytes.Equal(a[0], b[0])
	return c, len(pa), len(pb), nil
}

func openTSDBPoints(body []byte) (map[string]float64, error) {
	var res []struct {
		Metric string            `json:"metric"`
		Tags   map[string]string `json:"tags"`
		DPS    map[string]any    `json:"dps"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("an /api/query answer: %w", err)
	}
	out := map[string]float64{}
	for _, r := range res {
		keys := make([]string, 0, len(r.Tags))
		for k, v := range r.Tags {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		id := r.Metric + "{" + strings.Join(keys, ",") + "}"
		for ts, v := range r.DPS {
			out[id+"@"+ts] = jsonNumber(v)
		}
	}
	return out, nil
}

func jsonNumber(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

func compareProm(a, b [][]byte) (RollupComparison, int, int, error) {
	pa, pb := map[string]float64{}, map[string]float64{}
	for i := range a {
		if err := promPoints(pa, i, a[i]); err != nil {
			return RollupComparison{}, 0, 0, err
		}
		if err := promPoints(pb, i, b[i]); err != nil {
			return RollupComparison{}, 0, 0, err
		}
	}
	return comparePoints(pa, pb), len(pa), len(pb), nil
}

// promPoints adds to out the points of the query_range answer of query i.
func promPoints(out map[string]float64, i int, body []byte) error {
	var res struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return fmt.Errorf("a query_range answer: %w", err)
	}
	for _, r := range res.Data.Result {
		keys := make([]string, 0, len(r.Metric))
		for k, v := range r.Metric {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		id := strconv.Itoa(i) + ":" + strings.Join(keys, ",")
		for _, v := range r.Values {
			out[fmt.Sprintf("%s@%v", id, v[0])] = jsonNumber(v[1])
		}
	}
	return nil
}

// comparePoints compares the points of a with those of b (the reference).
func comparePoints(a, b map[string]float64) RollupComparison {
	var c RollupComparison
	for k, w := range b {
		g, ok := a[k]
		if !ok {
			c.Missing++
			continue
		}
		c.Points++
		if math.Float64bits(g) == math.Float64bits(w) || (g != g && w != w) {
			c.Equal++
			continue
		}
		c.MaxRelative = max(c.MaxRelative, math.Abs(g-w)/math.Max(math.Abs(w), math.SmallestNonzeroFloat64))
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			c.Missing++
		}
	}
	return c
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WriteRollupReport writes rep as the Markdown table docs/benchmarks.md holds.
func WriteRollupReport(w io.Writer, rep *RollupReport) {
	fmt.Fprintln(w, "| query | wall s (median) | server CPU s (median) | points | bytes |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	row := func(r *RollupRun) {
		if len(r.WallSeconds) == 0 {
			return
		}
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %d | %d |\n", r.Name, Median(r.WallSeconds), Median(r.CPUSeconds), r.Points, r.Bytes)
	}
	row(&rep.OpenTSDBRaw)
	row(&rep.OpenTSDBRollup)
	row(&rep.PromRaw)
	row(&rep.PromRollup)
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	fmt.Fprintf(w, "\n/api/query: raw ÷ rollups = %.1f× wall, %.1f× server CPU; answers identical byte for byte: %v (%d points, %d equal, %d missing, max relative difference %.3g)\n",
		ratio(Median(rep.OpenTSDBRaw.WallSeconds), Median(rep.OpenTSDBRollup.WallSeconds)),
		ratio(Median(rep.OpenTSDBRaw.CPUSeconds), Median(rep.OpenTSDBRollup.CPUSeconds)),
		rep.OpenTSDB.Identical, rep.OpenTSDB.Points, rep.OpenTSDB.Equal, rep.OpenTSDB.Missing, rep.OpenTSDB.MaxRelative)
	if len(rep.PromRaw.WallSeconds) > 0 {
		fmt.Fprintf(w, "PromQL: raw ÷ rollups = %.1f× wall, %.1f× server CPU; %d points, %d equal, %d missing, max relative difference %.3g\n",
			ratio(Median(rep.PromRaw.WallSeconds), Median(rep.PromRollup.WallSeconds)),
			ratio(Median(rep.PromRaw.CPUSeconds), Median(rep.PromRollup.CPUSeconds)),
			rep.Prom.Points, rep.Prom.Equal, rep.Prom.Missing, rep.Prom.MaxRelative)
	}
	fmt.Fprintf(w, "hourglass_query_rollup_reads_total grew by %.0f\n", rep.RollupReads)
}

// TargetPort returns the port of a URL or host:port on this machine's
// loopback.
func TargetPort(target string) (int, bool) { return targetPort(target) }
