// Command hourglass-loadtest writes realistic series to a time-series
// database in any of hourglass's write dialects, replays a dashboard's
// queries, and reports throughput, latency and the server's CPU and memory.
//
//	hourglass-loadtest write -dialect opentsdb-put -url http://127.0.0.1:4242 -series 5000 -steps 8640
//	hourglass-loadtest query -query-dialect prom -url http://127.0.0.1:4242 -start 1700000000 -steps 8640
//	hourglass-loadtest table runs.tsv
//	hourglass-loadtest du -dir /var/lib/hourglass -pid 1234
//
// The data is the same for the same -seed, -series, -interval, -steps,
// -start and -churn, so a query run given the write run's flags asks for data
// that is there. See the loadtest package and docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hourglass/loadtest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errSoakFailed) {
			os.Exit(1)
		}
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "hourglass-loadtest:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage: hourglass-loadtest write|query|table|du [flags]

  write   generate series and write them in one dialect (-dialect)
  query   replay a dashboard query mix (-query-dialect)
  table   set the reports listed in a runs file side by side (Markdown)
  soak    measure the maximum ingest, then write at a fraction of it with the
          query mix running and the server's RSS watched (exit 1 on failure)
  replay-empty  send again the answers with no series a soak recorded (-empty-log)
  du      sample a server's data directory until the server exits (peak bytes)
  rollup  the long query with and without rollups, side by side (issue 13)

Run "hourglass-loadtest write -help" for the flags of each.`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return flag.ErrHelp
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "write":
		return runWrite(ctx, args[1:], stdout, stderr)
	case "query":
		return runQuery(ctx, args[1:], stdout, stderr)
	case "table":
		return runTable(args[1:], stdout, stderr)
	case "soak":
		return runSoak(ctx, args[1:], stdout, stderr)
	case "replay-empty":
		return runReplayEmpty(ctx, args[1:], stdout, stderr)
	case "du":
		return runDu(ctx, args[1:], stdout, stderr)
	case "rollup":
		return runRollupBench(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// genFlags are the flags that define the data; write and query share them.
type genFlags struct {
	seed     uint64
	series   int
	interval time.Duration
	steps    int
	start    string
	churn    float64
	live     bool
	values   string
	hists    int
}

func (g *genFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&g.seed, "seed", 1, "seed of the data: the same flags make the same points")
	fs.IntVar(&g.series, "series", 5000, "series written at any one time (hosts × 12 metrics)")
	fs.DurationVar(&g.interval, "interval", 10*time.Second, "time between two points of a series")
	fs.IntVar(&g.steps, "steps", 8640, "points per series; 0 for no end (a live run bounded by -duration or -max-points)")
	fs.StringVar(&g.start, "start", "", "first timestamp: Unix seconds, RFC 3339, or a duration before now (-24h); "+
		"default: -steps intervals before now for a backfill, now for -live; give the same value to write and query")
	fs.Float64Var(&g.churn, "churn", 0, "fraction of hosts replaced per hour of data time (their series stop, new ones start)")
	fs.StringVar(&g.values, "values", loadtest.ValuesDecimal, "values: decimal (gauges with two decimals, integer counters) or float (full-precision floats); give the same value to write and query")
	fs.IntVar(&g.hists, "histograms", 0, "native histogram series per host besides the float series (schema 3 latency histograms; prom-rw1 and prom-rw2 only)")
	fs.BoolVar(&g.live, "live", false, "send each step when its time comes, with timestamps of now, instead of a backfill as fast as allowed")
}

func (g *genFlags) generator(now time.Time) (*loadtest.Generator, error) {
	start, err := parseStart(g.start, now, g.interval, g.steps, g.live)
	if err != nil {
		return nil, err
	}
	return loadtest.NewGenerator(loadtest.GenConfig{
		Seed: g.seed, Series: g.series, Interval: g.interval, Start: start, Steps: g.steps, Churn: g.churn, Values: g.values,
		Histograms: g.hists,
	})
}

// parseStart reads -start; the default ends a backfill at now, aligned to
// the interval.
func parseStart(s string, now time.Time, interval time.Duration, steps int, live bool) (time.Time, error) {
	if s == "" {
		if live || steps == 0 {
			return now.Truncate(interval), nil
		}
		return now.Truncate(interval).Add(-time.Duration(steps) * interval), nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("-start %q: %w", s, err)
		}
		return now.Add(-d).Truncate(interval), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > 1e11 { // milliseconds, as OpenTSDB reads 13 digits
			return time.UnixMilli(n), nil
		}
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("-start %q: want Unix seconds, RFC 3339 or -DURATION", s)
	}
	return t, nil
}

// outFlags say where the report goes.
type outFlags struct {
	jsonPath string
	label    string
	quiet    bool
	progress time.Duration
	pid      int
}

func (o *outFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.jsonPath, "json", "", "also write the report as JSON to this file (- for stdout instead of the text)")
	fs.StringVar(&o.label, "label", "", "name of this run in the report")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	fs.DurationVar(&o.progress, "progress", 2*time.Second, "time between progress lines (on stderr)")
	fs.IntVar(&o.pid, "pid", 0, "server process to report CPU and memory of; 0 finds the one listening on the target's loopback port, -1 none")
}

func (o *outFlags) emit(r *loadtest.Report, stdout io.Writer) error {
	if o.jsonPath == "-" {
		return r.WriteJSON(stdout)
	}
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	if o.jsonPath == "" {
		return nil
	}
	f, err := os.Create(o.jsonPath)
	if err != nil {
		return err
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	return nil
}

func runWrite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("write", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var gf genFlags
	var of outFlags
	gf.register(fs)
	of.register(fs)
	cfg := loadtest.WriteConfig{}
	fs.StringVar(&cfg.Dialect, "dialect", loadtest.DialectPut, "write dialect: "+strings.Join(loadtest.Dialects, ", "))
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:4242", "base URL of the HTTP dialects")
	fs.StringVar(&cfg.Addr, "telnet-addr", "", "host:port of telnet put (default: the host and port of -url)")
	fs.IntVar(&cfg.Workers, "workers", 4, "concurrent writers, each with its own share of the hosts")
	fs.IntVar(&cfg.BatchSize, "batch", 5000, "points per request")
	fs.Float64Var(&cfg.Rate, "rate", 0, "target points per second over all workers; 0 is flat out")
	fs.Int64Var(&cfg.MaxPoints, "max-points", 0, "stop after this many points (0: all of -steps)")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Minute, "stop after this long, whatever is left")
	fs.DurationVar(&cfg.MaxSkew, "max-skew", 10*time.Minute, "how far in data time a worker may run ahead of the slowest (0: no bound)")
	fs.BoolVar(&cfg.TelnetSync, "telnet-sync", true, "after each telnet batch, send version and wait for the reply (off for servers that answer nothing)")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", time.Minute, "time one request may take")
	fs.StringVar(&cfg.DiskDir, "disk-dir", "", "the server's data directory: sum its files' sizes while writing and report the peak")
	fs.DurationVar(&cfg.DiskEvery, "disk-every", 500*time.Millisecond, "time between two samples of -disk-dir")
	fs.StringVar(&cfg.ConfirmURL, "confirm-url", "", "for telnet without -telnet-sync: a metrics page (Prometheus text format) to poll after the last batch until -confirm-series has grown by the points sent")
	fs.StringVar(&cfg.ConfirmSeries, "confirm-series", "", `counter on -confirm-url that counts points stored, e.g. vm_rows_inserted_total{type="opentsdb"}`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if (cfg.ConfirmURL == "") != (cfg.ConfirmSeries == "") {
		return errors.New("-confirm-url and -confirm-series go together")
	}
	if cfg.Addr == "" {
		cfg.Addr = hostPort(cfg.URL)
	}
	g, err := gf.generator(time.Now())
	if err != nil {
		return err
	}
	cfg.Live = gf.live
	cfg.ServerPID, cfg.Label, cfg.ProgressEvery = of.pid, of.label, of.progress
	if !of.quiet {
		cfg.Progress = stderr
	}
	r, err := loadtest.Write(ctx, g, cfg)
	if err != nil {
		return err
	}
	return of.emit(r, stdout)
}

func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var gf genFlags
	var of outFlags
	gf.register(fs)
	of.register(fs)
	cfg := loadtest.QueryConfig{}
	var kinds, end string
	fs.StringVar(&cfg.Dialect, "query-dialect", loadtest.QueryOpenTSDB, "opentsdb (/api/query) or prom (/api/v1/query_range)")
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:4242", "base URL of the server")
	fs.IntVar(&cfg.Concurrency, "concurrency", 4, "queries in flight")
	fs.IntVar(&cfg.Queries, "queries", 250, "queries to send, the kinds in turn")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "stop after this long, whatever is left")
	fs.StringVar(&kinds, "kinds", strings.Join(loadtest.QueryKinds, ","), "query kinds, comma-separated")
	fs.StringVar(&end, "end", "", "end of the queries' range (Unix seconds); default the data's last timestamp")
	fs.DurationVar(&cfg.Range, "range", time.Hour, "range of the short queries")
	fs.DurationVar(&cfg.LongRange, "long-range", 24*time.Hour, "range of the long query")
	fs.DurationVar(&cfg.Step, "step", time.Minute, "step of the short aggregating queries")
	fs.IntVar(&cfg.TopK, "topk", 5, "k of the top-k query")
	fs.Uint64Var(&cfg.Seed, "query-seed", 1, "seed of the queries' choice of hosts and metrics")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", 2*time.Minute, "time one query may take")
	fs.StringVar(&cfg.RollupUsage, "rollup-usage", "ROLLUP_RAW", `rollupUsage of the OpenTSDB queries (ROLLUP_RAW reads every point raw, like for like with a peer without rollups; "-" sends none)`)
	if err := parse(fs, args); err != nil {
		return err
	}
	now := time.Now()
	g, err := gf.generator(now)
	if err != nil {
		return err
	}
	cfg.Kinds = strings.Split(kinds, ",")
	switch {
	case end != "":
		n, err := strconv.ParseInt(end, 10, 64)
		if err != nil {
			return fmt.Errorf("-end %q: want Unix seconds", end)
		}
		cfg.End = n * 1000
	case gf.steps > 0 && !gf.live:
		cfg.End = g.StepTime(int64(gf.steps - 1))
	default:
		cfg.End = now.UnixMilli()
	}
	cfg.ServerPID, cfg.Label, cfg.ProgressEvery = of.pid, of.label, of.progress
	if !of.quiet {
		cfg.Progress = stderr
	}
	r, err := loadtest.RunQueries(ctx, g, cfg)
	if err != nil {
		return err
	}
	return of.emit(r, stdout)
}

func runTable(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hourglass-loadtest table RUNS.tsv\n\nRUNS.tsv has one run a line, tab-separated:\n  system  dialect  write-report.json  query-report.json|-  disk-bytes|-")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("table takes one runs file")
	}
	runs, err := loadtest.ReadRuns(fs.Arg(0))
	if err != nil {
		return err
	}
	return loadtest.WriteTable(stdout, runs)
}

// runDu samples a data directory while a process lives and prints the peak
// of its files' sizes in bytes (the whole report as JSON with -json).
func runDu(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("du", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the data directory (required)")
	pid := fs.Int("pid", 0, "sample while this process lives (required)")
	every := fs.Duration("every", 500*time.Millisecond, "time between two samples")
	maxD := fs.Duration("max", 6*time.Hour, "stop after this long in any case")
	jsonPath := fs.String("json", "", "also write the figures as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" || *pid <= 0 {
		return errors.New("du needs -dir and -pid")
	}
	if *every <= 0 || *maxD <= 0 {
		return errors.New("-every and -max must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *maxD)
	defer cancel()
	st := loadtest.SampleDisk(ctx, *dir, *every, func() bool { return loadtest.ProcAlive(*pid) })
	if *jsonPath != "" {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if st.Samples == 0 {
		fmt.Fprintln(stdout, "-")
		return fmt.Errorf("no sample of %s taken: %s", *dir, st.Error)
	}
	fmt.Fprintln(stdout, st.PeakBytes)
	return nil
}

// hostPort returns the host:port of a URL, or the text as given.
func hostPort(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		hp, _, _ := strings.Cut(rest, "/")
		return hp
	}
	return u
}
