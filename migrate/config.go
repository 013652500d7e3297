package migrate

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Config is a whole command line of hourglass-migrate.
type Config struct {
	From     string // "opentsdb" or "remote-read"
	Src, Dst string // URLs
	Start    int64  // Unix ms
	End      int64
	Slice    time.Duration
	Match    []string // selectors (remote-read) or metric prefixes (opentsdb)

	Rate        float64 // points/s, 0: no limit
	Concurrency int
	Batch       int // points per write request
	StatePath   string
	Verify      bool
	MaxSlices   int

	Timeout    time.Duration // per request
	Retries    int
	SuggestMax int
	// RemoteReadMaxBytes bounds a SAMPLES remote-read answer, compressed
	// and decoded (0: DefaultRemoteReadMaxBytes); see RemoteReadSource.
	RemoteReadMaxBytes int

	SrcAuth, DstAuth Auth

	Progress         io.Writer // nil: no progress
	Terminal         bool      // Progress is a terminal: one line, rewritten
	ProgressInterval time.Duration
	Log              io.Writer // summary lines
}

// Source kinds.
const (
	FromOpenTSDB   = "opentsdb"
	FromRemoteRead = "remote-read"
)

// endpoints are the URLs a run talks to.
type endpoints struct {
	srcBase, dstBase string // without a trailing slash or API path
	srcRead          string // remote-read: the source's read URL
	dstRead          string // remote-read: the destination's read URL (verify)
	dstWrite         string
}

func (c *Config) endpoints() (endpoints, error) {
	var e endpoints
	src, err := baseURL("-src", c.Src, "/api/v1/read", "/api/query")
	if err != nil {
		return e, err
	}
	dst, err := baseURL("-dst", c.Dst, "/api/v1/write", "/api/put")
	if err != nil {
		return e, err
	}
	e.srcBase, e.dstBase = src, dst
	switch c.From {
	case FromOpenTSDB:
		e.dstWrite = dst + "/api/put"
	case FromRemoteRead:
		e.srcRead = src + "/api/v1/read"
		if u, _ := url.Parse(c.Src); strings.TrimSuffix(u.Path, "/") != "" && !strings.HasSuffix(u.Path, "/api/v1/read") {
			e.srcRead = strings.TrimSuffix(c.Src, "/") // a read URL of its own (a proxy, a tenant path)
		}
		e.dstWrite = dst + "/api/v1/write"
		e.dstRead = dst + "/api/v1/read"
	default:
		return e, fmt.Errorf("-from %q: want opentsdb or remote-read", c.From)
	}
	return e, nil
}

// baseURL checks an http(s) URL and strips a trailing slash and any of the
// API paths given, so that "http://h:4242/api/put" and "http://h:4242" name
// the same server.
func baseURL(flag, raw string, apiPaths ...string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("%s is required", flag)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s %q: want an http:// or https:// URL", flag, raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q: a query string or fragment is not supported", flag, raw)
	}
	s := strings.TrimSuffix(raw, "/")
	for _, p := range apiPaths {
		s = strings.TrimSuffix(s, p)
	}
	return s, nil
}

func (c *Config) check() error {
	switch {
	case c.End <= c.Start:
		return fmt.Errorf("-end %s is not after -start %s", fmtMs(c.End), fmtMs(c.Start))
	case c.Slice < time.Millisecond:
		return fmt.Errorf("-slice %s is shorter than a millisecond", c.Slice)
	case c.Concurrency < 1 || c.Concurrency > 64:
		return fmt.Errorf("-concurrency %d: want 1 to 64", c.Concurrency)
	case c.Batch < 1 || c.Batch > 1_000_000:
		return fmt.Errorf("-batch %d: want 1 to 1000000", c.Batch)
	case c.Rate < 0:
		return fmt.Errorf("-rate %g is negative", c.Rate)
	case c.Retries < 0:
		return fmt.Errorf("-retries %d is negative", c.Retries)
	case c.Timeout <= 0:
		return fmt.Errorf("-timeout %s is not positive", c.Timeout)
	case c.SuggestMax < 1:
		return fmt.Errorf("-suggest-max %d: want at least 1", c.SuggestMax)
	case c.MaxSlices < 0:
		return fmt.Errorf("-max-slices %d is negative", c.MaxSlices)
	}
	return nil
}

// UsageError is a command line that cannot run: a flag out of range, a
// URL or selector that does not parse.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ErrMismatch is returned by Execute when -verify found slices whose point
// counts differ.
var ErrMismatch = fmt.Errorf("verify: the point counts differ")

// Execute runs the migration the config describes: the copy of every slice
// not yet completed, then, with Verify, the count on both sides.
func Execute(ctx context.Context, c *Config) error {
	if err := c.check(); err != nil {
		return &UsageError{err}
	}
	e, err := c.endpoints()
	if err != nil {
		return &UsageError{err}
	}
	srcC, err := NewClient(c.SrcAuth, c.Timeout, c.Retries)
	if err != nil {
		return &UsageError{fmt.Errorf("-src-ca-file: %w", err)}
	}
	dstC, err := NewClient(c.DstAuth, c.Timeout, c.Retries)
	if err != nil {
		return &UsageError{fmt.Errorf("-dst-ca-file: %w", err)}
	}
	src, dstAsSource, newSink, err := c.sides(ctx, e, srcC, dstC)
	if err != nil {
		return err
	}
	srcKey := e.srcBase
	if e.srcRead != "" {
		srcKey = e.srcRead
	}
	key := StateKey{From: c.From, Src: srcKey, Dst: e.dstBase, Start: c.Start, End: c.End, Slice: c.Slice.Milliseconds(), Match: c.Match}
	st, err := OpenState(c.StatePath, key)
	if err != nil {
		return err
	}
	run := &Run{
		Source: src, NewSink: newSink, Slices: Slices(c.Start, c.End, c.Slice.Milliseconds()),
		State: st, Limiter: NewLimiter(c.Rate), Concurrency: c.Concurrency, MaxSlices: c.MaxSlices,
	}
	todo := run.Todo()
	fmt.Fprintf(c.Log, "%d slices of %s in %s: %d completed before, %d to copy now\n",
		len(run.Slices), c.Slice, Slice{c.Start, c.End}, st.Len(), len(todo))
	run.Progress = NewProgress(todo, time.Now())
	if c.Progress != nil && len(todo) > 0 {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			run.Progress.Loop(c.Progress, c.Terminal, c.ProgressInterval, stop)
		}()
		err = run.Copy(ctx, todo)
		close(stop)
		<-done
	} else {
		err = run.Copy(ctx, todo)
	}
	took := time.Since(run.Progress.started)
	fmt.Fprintf(c.Log, "copied %d points in %d slices in %s (%.0f points/s)", run.Progress.Points(), run.Progress.slices.Load(),
		took.Round(time.Millisecond), float64(run.Progress.Points())/took.Seconds())
	if sk := run.Progress.Skipped(); sk > 0 {
		fmt.Fprintf(c.Log, "; left out %d native histogram samples (hourglass does not store them)", sk)
	}
	fmt.Fprintln(c.Log)
	if err != nil && ctx.Err() != nil && c.StatePath != "" {
		return fmt.Errorf("interrupted: the %d slices completed are recorded in %s; run the same command again to go on", st.Len(), c.StatePath)
	}
	if err != nil || !c.Verify {
		return err
	}
	return c.verify(ctx, src, dstAsSource, run.Slices)
}

// sides builds the source, the destination read back as a source (for
// verify) and the sinks.
func (c *Config) sides(ctx context.Context, e endpoints, srcC, dstC *Client) (Source, Source, func() Sink, error) {
	if c.From == FromOpenTSDB {
		metrics, err := ListMetrics(ctx, srcC, e.srcBase, c.Match, c.SuggestMax)
		if err != nil {
			return nil, nil, nil, err
		}
		fmt.Fprintf(c.Log, "%d metrics on %s\n", len(metrics), e.srcBase)
		return NewOpenTSDBSource(srcC, e.srcBase, metrics), NewOpenTSDBSource(dstC, e.dstBase, metrics),
			func() Sink { return NewPutSink(dstC, e.dstBase, c.Batch) }, nil
	}
	match := c.Match
	if len(match) == 0 {
		match = []string{`{__name__=~".+"}`}
	}
	ms, err := ParseSelectors(match)
	if err != nil {
		return nil, nil, nil, &UsageError{err}
	}
	src, dst := NewRemoteReadSource(srcC, e.srcRead, ms), NewRemoteReadSource(dstC, e.dstRead, ms)
	if c.RemoteReadMaxBytes > 0 {
		src.MaxSamplesBytes, dst.MaxSamplesBytes = c.RemoteReadMaxBytes, c.RemoteReadMaxBytes
	}
	return src, dst, func() Sink { return NewRemoteWriteSink(dstC, e.dstWrite, c.Batch) }, nil
}

func (c *Config) verify(ctx context.Context, src, dst Source, slices []Slice) error {
	diffs, total, err := Verify(ctx, src, dst, slices, c.Concurrency)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		fmt.Fprintf(c.Log, "verify: slice %s: source %d points, destination %d (%+d)\n", d.Slice, d.Src, d.Dst, d.Dst-d.Src)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w in %d of %d slices", ErrMismatch, len(diffs), len(slices))
	}
	fmt.Fprintf(c.Log, "verify: %d slices, %d points on both sides\n", len(slices), total)
	return nil
}
