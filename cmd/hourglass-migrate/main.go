// Command hourglass-migrate copies history into hourglass, once: from
// OpenTSDB 2.x over its HTTP API (written to /api/put) or from Prometheus
// over remote read (written over remote write), one time slice at a time,
// resumable, rate-limited, with a progress line and a verify pass.
// docs/migrate.md explains how to run it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"hourglass/migrate"
)

const usageHead = `hourglass-migrate copies history into hourglass, one time slice at a time.

  hourglass-migrate -from opentsdb|remote-read -src URL -dst URL -start T [-end T] [flags]

Examples:
  # everything OpenTSDB has for 2025, a day at a time, resumable
  hourglass-migrate -from opentsdb -src http://opentsdb:4242 -dst http://127.0.0.1:4242 \
      -start 2025-01-01 -end 2026-01-01 -slice 1d -state otsdb.state -verify
  # the last 30 days of two jobs from Prometheus, at most 200k points/s
  hourglass-migrate -from remote-read -src http://prometheus:9090/api/v1/read \
      -dst http://127.0.0.1:4242 -start 30d-ago -match '{job="node"}' -match 'up' -rate 200000

Times (-start, -end): RFC 3339 (2025-01-02T15:04:05Z), a date (2025-01-02, UTC),
Unix seconds or milliseconds, now, or a duration ago (30d-ago, 12h-ago).

Flags:
`

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("hourglass-migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	var c migrate.Config
	var start, end, slice string
	var match multi
	fs.StringVar(&c.From, "from", "", "the source's kind: `opentsdb` (an OpenTSDB 2.x HTTP API: /api/suggest, /api/query) or remote-read (Prometheus remote read)")
	fs.StringVar(&c.Src, "src", "", "the source `URL`: OpenTSDB's base (http://opentsdb:4242) or the remote-read URL (http://prometheus:9090/api/v1/read)")
	fs.StringVar(&c.Dst, "dst", "", "the destination's base `URL` (http://127.0.0.1:4242): points go to /api/put (opentsdb) or /api/v1/write (remote-read); -verify reads /api/query or /api/v1/read")
	fs.StringVar(&start, "start", "", "the first `time` to copy (required), e.g. 2025-01-01, 1735689600, 90d-ago")
	fs.StringVar(&end, "end", "now", "the `time` to stop at (excluded)")
	fs.StringVar(&slice, "slice", "1h", "the time `slice` copied (and recorded in -state) at once, e.g. 1h, 6h, 1d; shorter slices use less memory per request")
	fs.Var(&match, "match", "repeatable. remote-read: a series `selector` ('up', '{job=\"node\"}'; default '{__name__=~\".+\"}'); opentsdb: a metric-name prefix passed to /api/suggest (default: every metric)")
	fs.Float64Var(&c.Rate, "rate", 0, "at most this many `points/s` (0: no limit), e.g. 100000")
	fs.IntVar(&c.Concurrency, "concurrency", 2, "slices copied at once")
	fs.IntVar(&c.Batch, "batch", 10000, "points per write request")
	fs.StringVar(&c.StatePath, "state", "", "a `file` recording completed slices: a rerun with the same flags skips them (resume after a stop or a failure)")
	fs.BoolVar(&c.Verify, "verify", false, "after copying, count the points of every slice on both sides, print the slices that differ and exit 1 if any does (with -state and every slice done: verify only)")
	fs.IntVar(&c.MaxSlices, "max-slices", 0, "stop after copying this many slices (0: all); with -state, the next run goes on from there")
	fs.DurationVar(&c.Timeout, "timeout", time.Minute, "timeout of one HTTP request")
	fs.IntVar(&c.Retries, "retries", 8, "retries of a request that failed with 429, 5xx or a network error (backoff from 0.5s doubling to 1m, Retry-After honoured)")
	fs.IntVar(&c.RemoteReadMaxBytes, "remote-read-max-bytes", migrate.DefaultRemoteReadMaxBytes, "remote-read: the largest SAMPLES answer (one snappy block, read whole), compressed and decoded; a slice needs up to ~3x this in memory (STREAMED_XOR_CHUNKS answers are read a frame at a time)")
	fs.IntVar(&c.SuggestMax, "suggest-max", 100000, "opentsdb: the max of /api/suggest; a prefix with this many metrics is an error (the list may be cut short)")
	fs.StringVar(&c.SrcAuth.User, "src-user", "", "basic auth `user` for the source")
	fs.StringVar(&c.SrcAuth.Password, "src-password", "", "basic auth `password` for the source (or env HOURGLASS_MIGRATE_SRC_PASSWORD)")
	fs.StringVar(&c.SrcAuth.BearerToken, "src-bearer-token", "", "bearer `token` for the source (or env HOURGLASS_MIGRATE_SRC_BEARER_TOKEN)")
	fs.StringVar(&c.DstAuth.User, "dst-user", "", "basic auth `user` for the destination")
	fs.StringVar(&c.DstAuth.Password, "dst-password", "", "basic auth `password` for the destination (or env HOURGLASS_MIGRATE_DST_PASSWORD)")
	fs.StringVar(&c.DstAuth.BearerToken, "dst-bearer-token", "", "bearer `token` for the destination (or env HOURGLASS_MIGRATE_DST_BEARER_TOKEN)")
	fs.StringVar(&c.SrcAuth.CAFile, "src-ca-file", "", "https source: the PEM `file` of the CA to trust (default: the system's)")
	fs.BoolVar(&c.SrcAuth.InsecureSkipVerify, "src-insecure-skip-verify", false, "https source: do not verify its certificate")
	fs.StringVar(&c.DstAuth.CAFile, "dst-ca-file", "", "https destination: the PEM `file` of the CA to trust (default: the system's)")
	fs.BoolVar(&c.DstAuth.InsecureSkipVerify, "dst-insecure-skip-verify", false, "https destination: do not verify its certificate")
	fs.DurationVar(&c.ProgressInterval, "progress-interval", 5*time.Second, "how often the progress line is written when stderr is not a terminal (a terminal's line is redrawn every 0.5s)")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "hourglass-migrate: unexpected argument %q (flags come as -name value)\n", fs.Arg(0))
		return 2
	}
	if err := finish(&c, start, end, slice, match, *quiet, stderr); err != nil {
		fmt.Fprintln(stderr, "hourglass-migrate:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := migrate.Execute(ctx, &c); err != nil {
		fmt.Fprintln(stderr, "hourglass-migrate:", err)
		if ue := (*migrate.UsageError)(nil); errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// finish reads the flags that need parsing and the environment.
func finish(c *migrate.Config, start, end, slice string, match []string, quiet bool, stderr io.Writer) error {
	now := time.Now()
	var err error
	if start == "" {
		return errors.New("-start is required")
	}
	if c.Start, err = migrate.ParseTime(start, now); err != nil {
		return fmt.Errorf("-start: %w", err)
	}
	if c.End, err = migrate.ParseTime(end, now); err != nil {
		return fmt.Errorf("-end: %w", err)
	}
	if c.Slice, err = migrate.ParseDuration(slice); err != nil {
		return fmt.Errorf("-slice: %w", err)
	}
	if c.StatePath != "" && (isRelative(start) || isRelative(end)) {
		return errors.New("with -state, give -start and -end as absolute times (not now or a time ago), so that a rerun names the same slices")
	}
	c.Match = match
	for _, e := range []struct {
		dst *string
		env string
	}{
		{&c.SrcAuth.Password, "HOURGLASS_MIGRATE_SRC_PASSWORD"}, {&c.SrcAuth.BearerToken, "HOURGLASS_MIGRATE_SRC_BEARER_TOKEN"},
		{&c.DstAuth.Password, "HOURGLASS_MIGRATE_DST_PASSWORD"}, {&c.DstAuth.BearerToken, "HOURGLASS_MIGRATE_DST_BEARER_TOKEN"},
	} {
		if *e.dst == "" {
			*e.dst = os.Getenv(e.env)
		}
	}
	c.Log = stderr
	if !quiet {
		c.Progress = stderr
		c.Terminal = isTerminal(os.Stderr) && stderr == io.Writer(os.Stderr)
		if c.Terminal {
			c.ProgressInterval = 500 * time.Millisecond
		}
	}
	if c.ProgressInterval <= 0 {
		return fmt.Errorf("-progress-interval %s is not positive", c.ProgressInterval)
	}
	return nil
}

// isRelative tells whether a -start or -end is relative to now.
func isRelative(t string) bool {
	t = strings.TrimSpace(t)
	return t == "now" || strings.HasSuffix(t, "-ago") || strings.HasPrefix(t, "-")
}

// isTerminal tells whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
