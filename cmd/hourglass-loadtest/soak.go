package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"hourglass/loadtest"
)

// errSoakFailed is a soak that ran and found errors or growing memory.
var errSoakFailed = errors.New("soak failed")

func runSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := loadtest.SoakConfig{}
	var dialects, jsonPath, emptyPath string
	var emptyMax int
	var quiet bool
	fs.StringVar(&cfg.Write.Dialect, "dialect", loadtest.DialectRW1, "write dialect: "+strings.Join(loadtest.Dialects, ", "))
	fs.StringVar(&cfg.Write.URL, "url", "http://127.0.0.1:4242", "base URL of the server")
	fs.IntVar(&cfg.Write.Workers, "workers", 4, "concurrent writers")
	fs.IntVar(&cfg.Write.BatchSize, "batch", 5000, "points per request")
	fs.DurationVar(&cfg.Write.RequestTimeout, "timeout", time.Minute, "time one request or query may take")
	fs.IntVar(&cfg.Series, "series", 20000, "series written (hosts × 12 metrics)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the data and of the queries")
	fs.DurationVar(&cfg.Measure, "measure", time.Minute, "how long the soak's writer runs flat out (live timestamps 1 ms apart) to measure the maximum ingest")
	fs.DurationVar(&cfg.MeasureWarmup, "measure-warmup", 2*time.Minute, "how long the writer runs flat out, untimed, before the measure (the queries' ranges fill)")
	fs.BoolVar(&cfg.MeasureQueries, "measure-queries", true, "run the query mix during the measure too (false: the writer alone)")
	fs.Float64Var(&cfg.MinAchieved, "min-achieved", 0.95, "fail when the soak's writes reach less than this fraction of the target rate (0: no check)")
	fs.Float64Var(&cfg.Fraction, "fraction", 0.8, "fraction of the measured maximum to soak at")
	fs.Float64Var(&cfg.Rate, "rate", 0, "points per second to soak at; set, it skips the measure")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "length of the soak")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Minute, "start of the soak the memory verdict ignores")
	fs.DurationVar(&cfg.CacheWarmupMax, "cache-warmup-max", 0, "extend the warm-up past -warmup until the server's block cache is full (hourglass_store_* on /metrics), ending it by this time into the soak at the latest (0: no extension)")
	fs.BoolVar(&cfg.RangesWarmup, "warmup-ranges", true, "the warm-up lasts at least the longest query range (-query-range, -query-long-range), until every query's range holds the soak's data alone")
	fs.DurationVar(&cfg.SampleEvery, "sample", 5*time.Second, "time between two samples of the server's RSS")
	fs.StringVar(&dialects, "query-dialects", loadtest.QueryOpenTSDB+","+loadtest.QueryProm, "query dialects run side by side")
	fs.IntVar(&cfg.QueryConcurrency, "query-concurrency", 1, "queries in flight per dialect")
	fs.DurationVar(&cfg.QueryRange, "query-range", 5*time.Minute, "range of the short queries, ending when each is sent (at most 5,000 intervals)")
	fs.DurationVar(&cfg.QueryLongRange, "query-long-range", 10*time.Minute, "range of the long query")
	fs.DurationVar(&cfg.QueryStep, "query-step", 30*time.Second, "step of the short aggregating queries")
	fs.Float64Var(&cfg.MaxSlope, "max-slope", 5, "flat: RSS slope after the warm-up at most this many MB per minute")
	fs.Float64Var(&cfg.MaxSpread, "max-spread", 0.2, "flat: RSS after the warm-up at most this fraction over its median")
	fs.IntVar(&cfg.PID, "pid", 0, "server process; 0 finds the one listening on -url's loopback port")
	fs.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&emptyPath, "empty-log", "", "write every query answer with no series (the request, when it was sent, the newest point sent by then, the answer) as a JSON line to this file")
	fs.IntVar(&emptyMax, "empty-log-max", 500, "at most this many answers in -empty-log")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.QueryDialects = strings.Split(dialects, ",")
	if cfg.PID == 0 {
		_, p, err := net.SplitHostPort(hostPort(cfg.Write.URL))
		if err != nil {
			return fmt.Errorf("-url %q: %w", cfg.Write.URL, err)
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("-url %q: port %q", cfg.Write.URL, p)
		}
		pid, err := loadtest.PIDListening(port)
		if err != nil {
			return err
		}
		cfg.PID = pid
	}
	cfg.Write.Addr = hostPort(cfg.Write.URL)
	cfg.Write.TelnetSync = true
	if !quiet {
		cfg.Progress = stderr
		fmt.Fprintf(stderr, "soak of pid %d at %s: measure %v, then %v\n", cfg.PID, cfg.Write.URL, cfg.Measure, cfg.Duration)
	}
	if emptyPath != "" {
		f, err := os.Create(emptyPath)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Empties = &loadtest.EmptyLog{W: f, Max: emptyMax}
	}
	r, err := loadtest.Soak(ctx, cfg)
	if err != nil {
		return err
	}
	if n, err := cfg.Empties.Recorded(); err != nil {
		return fmt.Errorf("-empty-log %s: %w", emptyPath, err)
	} else if n > 0 {
		fmt.Fprintf(stderr, "%d answers with no series in %s (%d more not recorded)\n", n, emptyPath, cfg.Empties.Dropped)
	}
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	if jsonPath != "" {
		f, err := os.Create(jsonPath)
		if err != nil {
			return err
		}
		err = r.WriteJSON(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if !r.Passed() {
		return errSoakFailed
	}
	return nil
}

// runReplayEmpty is "replay-empty -url URL -log FILE": each answer with no
// series a soak recorded in FILE (-empty-log), sent again (ReplayEmpty).
func runReplayEmpty(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay-empty", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "http://127.0.0.1:4242", "base URL of the server the soak wrote to")
	path := fs.String("log", "", "the file a soak's -empty-log wrote")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return errors.New("replay-empty: -log is required")
	}
	f, err := os.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()
	return loadtest.ReplayEmpty(ctx, *base, f, stdout)
}
