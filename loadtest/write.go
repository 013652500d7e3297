package loadtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WriteConfig says how to write the generator's data.
type WriteConfig struct {
	Dialect string
	// URL is the base URL of the HTTP dialects (http://127.0.0.1:4242);
	// Addr the host:port of telnet.
	URL, Addr string
	// Workers send concurrently, each owning the hosts j with j%Workers == w.
	Workers int
	// BatchSize is the number of points of one request.
	BatchSize int
	// Rate is the target of points per second over all workers; 0 is flat
	// out.
	Rate float64
	// MaxPoints bounds the points sent (0: the generator's data); Duration
	// bounds the time (required).
	MaxPoints int64
	Duration  time.Duration
	// Live sends each step no sooner than its timestamp (a generator
	// starting now makes a live feed); otherwise steps go as fast as the
	// rate allows (a backfill).
	Live bool
	// MaxSkew bounds how far in data time one worker may run ahead of the
	// slowest, so the server sees time advance together as it would from
	// real agents (Prometheus' receiver refuses samples an hour behind its
	// newest). 0 is no bound.
	MaxSkew time.Duration
	// TelnetSync: after each telnet batch, send "version" and wait for the
	// reply (the server must answer version).
	TelnetSync bool
	// ConfirmURL and ConfirmSeries confirm points sent without an
	// acknowledgement (telnet without sync): after the last batch, the run
	// polls ConfirmURL, a page in Prometheus' text format, until the counter
	// ConfirmSeries (a metric name, or a series as the page prints it, e.g.
	// vm_rows_inserted_total{type="opentsdb"}) has grown by the points sent,
	// or Duration runs out. The run's time then ends when they were
	// confirmed, and they count as accepted.
	ConfirmURL, ConfirmSeries string
	// ServerPID is the server process whose CPU and memory to report; 0
	// looks for the process listening on the target's port, -1 reports
	// none.
	ServerPID int
	// Progress receives a line every ProgressEvery; nil for none.
	Progress      io.Writer
	ProgressEvery time.Duration
	Label         string
	// RequestTimeout bounds one request (default 60s).
	RequestTimeout time.Duration
	// DiskDir, if set, is the server's data directory: its files' sizes
	// are summed every DiskEvery (default 500ms) while the run writes, and
	// the peak goes in the report.
	DiskDir   string
	DiskEvery time.Duration
	// Newest, if set, is raised to the newest timestamp sent as the run
	// goes (the soak's measure ends its queries there).
	Newest *atomic.Int64
}

// progressState is shared by the workers and the progress line.
type progressState struct {
	sent, accepted, rejected, unconfirmed, requests, failed atomic.Int64
	// histograms counts the histogram samples of batches accepted whole.
	histograms atomic.Int64
	lat        Latencies
	errs       errorLog
}

// Write runs a write load and returns its report. It stops when the data
// runs out, at MaxPoints, at Duration, or when ctx is done, whichever comes
// first; a request in flight then is finished or cancelled.
func Write(ctx context.Context, g *Generator, cfg WriteConfig) (*Report, error) {
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("workers %d: must be at least 1", cfg.Workers)
	}
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("batch size %d: must be at least 1", cfg.BatchSize)
	}
	if g.Config().Histograms > 0 && cfg.Dialect != DialectRW1 && cfg.Dialect != DialectRW2 {
		return nil, fmt.Errorf("histograms: dialect %s cannot carry native histograms (use %s or %s)", cfg.Dialect, DialectRW1, DialectRW2)
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("a duration bound is required: the run always stops by itself")
	}
	if cfg.Rate < 0 || math.IsNaN(cfg.Rate) {
		return nil, fmt.Errorf("rate %v: must be 0 (flat out) or positive", cfg.Rate)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = time.Minute
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 2 * time.Second
	}
	target := cfg.URL
	if cfg.Dialect == DialectTelnet {
		target = cfg.Addr
	}
	budget := cfg.MaxPoints
	if budget <= 0 {
		budget = g.Points()
	}
	if budget <= 0 {
		if !cfg.Live {
			return nil, errors.New("an endless generator needs a bound on points, or a live run")
		}
		budget = math.MaxInt64
	}

	watch, err := watchServer(cfg.ServerPID, target)
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Timeout: cfg.RequestTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback: never a proxy from the environment
			MaxIdleConnsPerHost: cfg.Workers,
			DisableCompression:  true,
		},
	}
	defer client.CloseIdleConnections()
	scfg := senderConfig{dialect: cfg.Dialect, url: cfg.URL, addr: cfg.Addr, client: client, telnetSync: cfg.TelnetSync}

	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	senders := make([]sender, cfg.Workers)
	for w := range senders {
		s, err := newSender(ctx, scfg)
		if err != nil {
			for _, o := range senders[:w] {
				_ = o.close()
			}
			return nil, fmt.Errorf("worker %d: %w", w, err)
		}
		senders[w] = s
	}

	selfCPU0, _ := ProcCPU(os.Getpid())
	var confirm0 float64
	if cfg.ConfirmURL != "" {
		if confirm0, err = readCounter(ctx, client, cfg.ConfirmURL, cfg.ConfirmSeries); err != nil {
			return nil, fmt.Errorf("confirming: %w", err)
		}
	}
	st := &progressState{}
	bud := &pointBudget{limit: budget}
	steps := make([]atomic.Int64, cfg.Workers)
	sources := make([]*Source, cfg.Workers)
	for w := range sources {
		sources[w] = g.Source(w, cfg.Workers)
		if sources[w].Done() {
			steps[w].Store(math.MaxInt64)
		}
	}
	skewSteps := int64(math.MaxInt64 / 2)
	if cfg.MaxSkew > 0 {
		skewSteps = max(1, cfg.MaxSkew.Milliseconds()/g.IntervalMs())
	}

	start := time.Now()
	disk := startDiskSampler(cfg.DiskDir, cfg.DiskEvery)
	stopProgress := startProgress(cfg.Progress, cfg.ProgressEvery, start, st)
	wr := &writeRun{g: g, cfg: cfg, st: st, bud: bud, steps: steps, sources: sources, senders: senders, skewSteps: skewSteps, start: start}
	wr.firstTs.Store(math.MaxInt64)
	wr.lastTs.Store(math.MinInt64)
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Go(func() { wr.worker(ctx, w) })
	}
	wg.Wait()
	if cfg.ConfirmURL != "" && st.unconfirmed.Load() > 0 {
		wr.confirm(ctx, client, confirm0)
	}
	elapsed := time.Since(start)
	stopProgress()
	diskStats := disk.stop()
	for _, s := range senders {
		_ = s.close()
	}

	r := &Report{
		Label: cfg.Label, Mode: "write", Dialect: cfg.Dialect, Target: target,
		Started: start, Seconds: elapsed.Seconds(),
		Workers: cfg.Workers, BatchSize: cfg.BatchSize,
		Series: g.Config().Series, IntervalSec: g.Config().Interval.Seconds(),
		PointsSent: st.sent.Load(), PointsAccepted: st.accepted.Load(), HistogramSamples: st.histograms.Load(),
		PointsRejected: st.rejected.Load(), PointsUnconfirmed: st.unconfirmed.Load(),
		Requests: st.requests.Load(), RequestErrors: st.failed.Load(),
		Latency: st.lat.Summary(),
		Errors:  st.errs.list(),
		Disk:    diskStats,
	}
	if r.PointsSent > 0 {
		r.FirstTs, r.LastTs = wr.firstTs.Load(), wr.lastTs.Load()
		r.DistinctSeries = g.DistinctSeries((r.LastTs-g.StartMs())/g.IntervalMs() + 1)
	}
	r.Stopped = wr.stopped(ctx)
	stored := r.PointsAccepted + r.PointsUnconfirmed
	r.PointsPerSec = float64(stored) / elapsed.Seconds()
	if cpu, err := ProcCPU(os.Getpid()); err == nil {
		r.ClientCPUSeconds = cpu - selfCPU0
	}
	if watch != nil {
		s, err := watch.stats(stored)
		if err != nil {
			r.Errors = append(r.Errors, ErrorCount{Message: "server stats: " + err.Error(), Count: 1})
		} else {
			r.Server = s
		}
	}
	return r, nil
}

// writeRun is the state a write run's workers share.
type writeRun struct {
	g               *Generator
	cfg             WriteConfig
	st              *progressState
	bud             *pointBudget
	steps           []atomic.Int64 // each worker's step, MaxInt64 once done
	sources         []*Source
	senders         []sender
	skewSteps       int64
	start           time.Time
	firstTs, lastTs atomic.Int64
}

// worker is worker w: it takes points from the budget, makes them from its
// source and sends them, until its source, the budget or ctx runs out.
func (wr *writeRun) worker(ctx context.Context, w int) {
	defer wr.steps[w].Store(math.MaxInt64) // a finished worker holds no one back
	src, snd := wr.sources[w], wr.senders[w]
	buf := make([]Point, 0, wr.cfg.BatchSize)
	for ctx.Err() == nil && !src.Done() {
		// The budget: take up to a batch.
		want, ok := wr.bud.take(int64(wr.cfg.BatchSize))
		if !ok {
			return
		}
		if want == 0 {
			sleep(ctx, time.Millisecond) // others hold what is left; they may give some back
			continue
		}
		limit := int64(math.MaxInt64)
		if wr.cfg.Live {
			limit = (time.Now().UnixMilli()-wr.g.StartMs())/wr.g.IntervalMs() + 1
		}
		if wr.cfg.MaxSkew > 0 {
			limit = min(limit, minStep(wr.steps)+wr.skewSteps)
		}
		buf = src.Fill(buf[:0], int(want), limit)
		wr.steps[w].Store(src.Step())
		before := wr.bud.settle(want, int64(len(buf)))
		if len(buf) == 0 {
			// Held back by the clock or by a slower worker.
			wait := 2 * time.Millisecond
			if wr.cfg.Live {
				next := time.UnixMilli(wr.g.StepTime(src.Step()))
				wait = max(time.Until(next), time.Millisecond)
			}
			sleep(ctx, wait)
			continue
		}
		if wr.cfg.Rate > 0 {
			// Send when the points made before these are due.
			due := wr.start.Add(time.Duration(float64(before) / wr.cfg.Rate * float64(time.Second)))
			sleep(ctx, time.Until(due))
			if ctx.Err() != nil {
				return
			}
		}
		storeMin(&wr.firstTs, buf[0].T)
		storeMax(&wr.lastTs, buf[len(buf)-1].T)
		if wr.cfg.Newest != nil {
			storeMax(wr.cfg.Newest, buf[len(buf)-1].T)
		}
		t0 := time.Now()
		res := snd.send(ctx, buf)
		d := time.Since(t0)
		wr.st.requests.Add(1)
		wr.st.sent.Add(int64(len(buf)))
		if res.err != nil && ctx.Err() != nil && res.accepted+res.rejected+res.unconfirmed == 0 {
			// Cut short by the end of the run: not the server's failure.
			wr.st.sent.Add(-int64(len(buf)))
			wr.st.requests.Add(-1)
			return
		}
		wr.st.lat.Add(d)
		wr.st.accepted.Add(int64(res.accepted))
		wr.st.rejected.Add(int64(res.rejected))
		wr.st.unconfirmed.Add(int64(res.unconfirmed))
		if res.err == nil && res.accepted == len(buf) {
			wr.st.histograms.Add(countHistograms(buf))
		}
		if res.err != nil {
			wr.st.errs.add(res.err.Error())
			if res.accepted+res.rejected+res.unconfirmed < len(buf) {
				wr.st.failed.Add(1)
			}
		}
	}
}

// confirm polls cfg.ConfirmURL until its counter has grown by the points
// sent unconfirmed since it read confirm0, or ctx ends, and counts those it
// saw as accepted.
func (wr *writeRun) confirm(ctx context.Context, client *http.Client, confirm0 float64) {
	n := wr.st.unconfirmed.Load()
	var seen float64
	for {
		v, err := readCounter(ctx, client, wr.cfg.ConfirmURL, wr.cfg.ConfirmSeries)
		if err != nil {
			if ctx.Err() == nil {
				wr.st.errs.add("confirming: " + err.Error())
			}
			break
		}
		seen = v - confirm0
		if seen >= float64(n) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 50*time.Millisecond)
	}
	c := min(n, int64(max(seen, 0)))
	wr.st.unconfirmed.Add(-c)
	wr.st.accepted.Add(c)
}

// stopped says why the run ended.
func (wr *writeRun) stopped(ctx context.Context) string {
	done := true
	for _, s := range wr.sources {
		done = done && s.Done()
	}
	switch {
	case done:
		return "data"
	case wr.bud.exhausted():
		return "points"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "duration"
	}
	return "interrupted"
}

// readCounter returns the sum of the samples of series on a page in
// Prometheus' text format: series is a metric name (every series of it) or
// one series as printed, name{labels}.
func readCounter(ctx context.Context, client *http.Client, url, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return sumSeries(resp.Body, series)
}

func sumSeries(r io.Reader, series string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := f[0]
		if !strings.Contains(series, "{") {
			name, _, _ = strings.Cut(name, "{")
		}
		if name != series {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no series %s on the page", series)
	}
	return sum, nil
}

// watchServer finds the server process (pid > 0 as given, 0 from the port
// of target, -1 none) and starts watching it. A server that cannot be
// found from the port is not an error: it may be on another machine.
func watchServer(pid int, target string) (*procWatch, error) {
	if pid < 0 {
		return nil, nil
	}
	if pid == 0 {
		port, ok := targetPort(target)
		if !ok {
			return nil, nil
		}
		p, err := PIDListening(port)
		if err != nil {
			return nil, nil
		}
		pid = p
	}
	w, err := startWatch(pid)
	if err != nil {
		return nil, fmt.Errorf("server pid %d: %w", pid, err)
	}
	return w, nil
}

// targetPort returns the port of a URL or host:port on this machine's
// loopback.
func targetPort(target string) (int, bool) {
	hp := target
	if _, rest, ok := strings.Cut(target, "://"); ok {
		hp, _, _ = strings.Cut(rest, "/")
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return 0, false
	}
	if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
		return 0, false
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return 0, false
	}
	return p, true
}

// pointBudget hands out the points a run may send. Safe for concurrent use.
type pointBudget struct {
	mu      sync.Mutex
	limit   int64
	used    int64 // points made
	pending int64 // points taken and not yet settled
	takers  int
}

// take reserves up to n points. It returns 0, true when what is left is
// held by others who may give some back, and 0, false when nothing is left.
func (b *pointBudget) take(n int64) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := b.limit - b.used - b.pending
	if left <= 0 {
		return 0, b.takers > 0
	}
	n = min(n, left)
	b.pending += n
	b.takers++
	return n, true
}

// settle turns a reservation of taken points into made points and returns
// the number made before these.
func (b *pointBudget) settle(taken, made int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending -= taken
	b.takers--
	before := b.used
	b.used += made
	return before
}

func (b *pointBudget) exhausted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used >= b.limit
}

func minStep(steps []atomic.Int64) int64 {
	m := int64(math.MaxInt64)
	for i := range steps {
		m = min(m, steps[i].Load())
	}
	return m
}

func storeMin(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v >= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// startProgress prints a line every period until the returned func is
// called: points so far, points/s over the last period and overall, errors,
// and the latency of the last period's requests.
func startProgress(w io.Writer, every time.Duration, start time.Time, st *progressState) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		var lastPts int64
		lastAt, latFrom := start, 0
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				pts := st.accepted.Load() + st.unconfirmed.Load()
				var s Summary
				s, latFrom = st.lat.Since(latFrom)
				fmt.Fprintf(w, "%6.1fs  points %s  now %s/s  avg %s/s  rejected %d  failed requests %d  latency p50 %.1fms p99 %.1fms max %.1fms\n",
					now.Sub(start).Seconds(), thousands(float64(pts)),
					thousands(float64(pts-lastPts)/now.Sub(lastAt).Seconds()),
					thousands(float64(pts)/now.Sub(start).Seconds()),
					st.rejected.Load(), st.failed.Load(), s.P50, s.P99, s.Max)
				lastPts, lastAt = pts, now
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// countHistograms is the number of histogram samples in pts.
func countHistograms(pts []Point) int64 {
	var n int64
	for _, p := range pts {
		if p.H != nil {
			n++
		}
	}
	return n
}
