package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"hourglass/loadtest"
)

// runRollupBench is "hourglass-loadtest rollup": the long dashboard query
// over the data a write run made, with and without rollups (issue 13).
func runRollupBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rollup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var gf genFlags
	gf.register(fs)
	var names []string
	for _, m := range loadtest.Metrics {
		names = append(names, m.Name)
	}
	cfg := loadtest.RollupBenchConfig{}
	var metrics, jsonPath string
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:4242", "base URL of the server")
	fs.IntVar(&cfg.PID, "pid", 0, "server process whose CPU time to report; 0 finds the one listening on the URL's loopback port, -1 none")
	fs.StringVar(&metrics, "metrics", strings.Join(names, ","), "metrics queried, one sub-query (PromQL: one query) each")
	fs.StringVar(&cfg.GroupBy, "group-by", "dc", "tag the queries group by")
	fs.StringVar(&cfg.Downsample, "downsample", "1h-avg", "OpenTSDB downsample")
	fs.StringVar(&cfg.Aggregator, "aggregator", "avg", "OpenTSDB aggregator across series")
	fs.StringVar(&cfg.PromFunc, "prom", "avg by (dc) (avg_over_time(%s[1h]))", "PromQL query, %s the metric; empty for none")
	fs.DurationVar(&cfg.Step, "step", time.Hour, "PromQL step, and its max_source_resolution")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "rounds, each asking both ways (interleaved)")
	fs.BoolVar(&cfg.Warm, "warm", false, "send each request once unmeasured just before it is measured (a repeated query: the block cache warm)")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "time one request may take")
	fs.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	g, err := gf.generator(time.Now())
	if err != nil {
		return err
	}
	if gf.steps <= 0 {
		return fmt.Errorf("-steps: the data's extent is needed (a backfill's -steps)")
	}
	cfg.Start, cfg.End = g.StepTime(0), g.StepTime(int64(gf.steps-1))
	cfg.Metrics = strings.Split(metrics, ",")
	if cfg.PID == 0 {
		if port, ok := loadtest.TargetPort(cfg.URL); ok {
			if pid, err := loadtest.PIDListening(port); err == nil {
				cfg.PID = pid
			}
		}
	}
	cfg.PID = max(cfg.PID, 0)
	rep, err := loadtest.RollupBench(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d metrics, %s to %s, %d rounds, server pid %d\n\n", len(cfg.Metrics),
		time.UnixMilli(cfg.Start).UTC().Format(time.RFC3339), time.UnixMilli(cfg.End).UTC().Format(time.RFC3339), cfg.Rounds, cfg.PID)
	loadtest.WriteRollupReport(stdout, rep)
	if jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(jsonPath, append(b, '\n'), 0o644)
	}
	return nil
}
