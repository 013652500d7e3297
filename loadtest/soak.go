package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// SoakConfig says how to soak a server: measure its maximum ingest, then
// write at a fraction of it with live timestamps while the query mix runs
// in both dialects, and watch its resident memory.
type SoakConfig struct {
	// Write holds the dialect, URL, workers, batch size and request timeout
	// of both phases; its Rate, Duration, Live, MaxPoints and Progress are
	// set by Soak.
	Write WriteConfig
	// Series and Seed make the data of both phases.
	Series int
	Seed   uint64
	// Measure is how long the measure runs: the soak's own writer (its
	// dialect, series, workers, batch size and live timestamps) flat out,
	// the points 1 ms apart so the clock never holds it back (a cap of
	// Series × 1,000 points/s); 0 skips it and Rate must be set.
	Measure time.Duration
	// MeasureWarmup is how long the writer runs flat out before the
	// measure's time starts (see measure).
	MeasureWarmup time.Duration
	// MeasureQueries runs the query mix during the measure as during the
	// soak, so the maximum is the writer's with the queries competing for
	// the same CPU, and the soak differs from the measure by its pacing only.
	MeasureQueries bool
	// Fraction of the measured maximum to write at (0.8); Rate, when
	// positive, is the rate itself and the measure is skipped.
	Fraction, Rate float64
	// MinAchieved fails the soak when its writes reach less than this
	// fraction of the target rate (0.95; 0: no check).
	MinAchieved float64
	// Duration of the soak; Warmup is how much of its start the memory
	// verdict ignores; SampleEvery is the period of the RSS samples.
	Duration, Warmup, SampleEvery time.Duration
	// CacheWarmupMax, when after Warmup, extends the warm-up until the
	// store's block cache is full (WarmupEnd), to this time at most.
	CacheWarmupMax time.Duration
	// RangesWarmup makes the warm-up last at least the longest query
	// range (QueryRange, QueryLongRange). Until then a query's range still
	// holds the measure's data and less than a range of the soak's, so the
	// points each query reads, and the memory they take, grow with the
	// soak's data as they would not later (run T, docs/benchmarks.md).
	RangesWarmup bool
	// QueryDialects are run side by side, each at QueryConcurrency;
	// QueryRange, QueryLongRange and QueryStep size the mix (see
	// QueryConfig), the range ending at the time each query is sent. They
	// start once the soak's data fills two of QueryStep's buckets, the
	// first time the rate kind has an answer (firstAnswerEnd).
	QueryDialects                         []string
	QueryConcurrency                      int
	QueryRange, QueryLongRange, QueryStep time.Duration
	// MaxSlope (MB per minute) and MaxSpread (a fraction of the median)
	// define flat: after the warm-up, the least-squares slope of RSS over
	// time is at most MaxSlope, and the largest sample at most
	// (1+MaxSpread) × the median.
	MaxSlope, MaxSpread float64
	// Empties, if set, records the answers with no series of both phases
	// (the request, when it was sent, the answer), so that each can be
	// sent again; Soak sets its Newest and Phase.
	Empties *EmptyLog
	// PID is the server process (required: the soak is about its memory).
	PID int
	// Progress receives a line per sample; nil for none.
	Progress io.Writer
}

// RSSSample is the server's resident memory at a time into the soak.
type RSSSample struct {
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	// The Go runtime's figures from the server's /metrics at the same
	// time (goMemory), when it could be read.
	GoHeapInuse int64 `json:"go_heap_inuse_bytes,omitempty"`
	GoNextGC    int64 `json:"go_next_gc_bytes,omitempty"`
	GoMapped    int64 `json:"go_mapped_bytes,omitempty"`
	FlushQueue  int64 `json:"flush_queue_chunks,omitempty"`
	// The store's memory outside the Go heap at the same time (storeMemory),
	// when the server exports it: blocks in Pebble's block cache, its
	// memtables, and the cache's capacity, which both share.
	StoreBlockCache int64 `json:"store_block_cache_bytes,omitempty"`
	StoreMemTables  int64 `json:"store_memtable_bytes,omitempty"`
	StoreCapacity   int64 `json:"store_cache_capacity_bytes,omitempty"`
}

// RSSFit summarises the samples after the warm-up.
type RSSFit struct {
	Samples  int     `json:"samples"`
	MinMB    float64 `json:"min_mb"`
	MaxMB    float64 `json:"max_mb"`
	MedianMB float64 `json:"median_mb"`
	// SlopeMBPerMin is the least-squares slope of RSS over time.
	SlopeMBPerMin float64 `json:"slope_mb_per_min"`
}

// SoakQueries is one dialect's queries over the whole soak.
type SoakQueries struct {
	Rounds  int   `json:"rounds"`
	Queries int64 `json:"queries"`
	Errors  int64 `json:"errors"`
	Empty   int64 `json:"empty_answers"`
	// WaitedSeconds is how long the queries waited for the data to fill
	// the two steps every kind needs to have an answer (firstAnswerEnd).
	WaitedSeconds float64                `json:"waited_seconds"`
	Kinds         map[string]*QueryStats `json:"kinds"`
	Messages      []ErrorCount           `json:"error_messages,omitempty"`
}

// SoakReport is the outcome of a soak.
type SoakReport struct {
	// MeasureWarmup is the untimed start of the measure, Measure the
	// timed part whose points/s is MaxRate.
	MeasureWarmup *Report `json:"measure_warmup,omitempty"`
	Measure       *Report `json:"measure,omitempty"`
	// MeasureQueries are the queries run during the measure (MeasureQueries).
	MeasureQueries map[string]*SoakQueries `json:"measure_queries,omitempty"`
	MaxRate        float64                 `json:"max_points_per_second"`
	// TargetRate is Fraction × MaxRate (or the Rate given); IntervalMs the
	// step of the live feed, the largest whole ms that makes at least it.
	TargetRate float64 `json:"target_points_per_second"`
	IntervalMs int64   `json:"interval_ms"`
	// Achieved is the soak's writes' points/s ÷ TargetRate; MinAchieved
	// the least that passes.
	Achieved    float64                 `json:"achieved_fraction_of_target"`
	MinAchieved float64                 `json:"min_achieved_fraction"`
	Write       *Report                 `json:"write"`
	Queries     map[string]*SoakQueries `json:"queries"`
	RSS         []RSSSample             `json:"rss"`
	// WarmupSeconds is when the warm-up ended (WarmupEnd), WarmupEnd why.
	WarmupSeconds float64 `json:"warmup_seconds"`
	WarmupEnd     string  `json:"warmup_end"`
	Fit           RSSFit  `json:"rss_after_warmup"`
	// Parts says which part of the memory moved (not judged).
	Parts     *MemoryParts `json:"memory_parts_after_warmup,omitempty"`
	MaxSlope  float64      `json:"max_slope_mb_per_min"`
	MaxSpread float64      `json:"max_spread"`
	// ServerCPUSeconds is the server's CPU time over the soak phase.
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
	// Failures say why the soak failed; none when it passed.
	Failures []string `json:"failures,omitempty"`
}

// Passed reports whether the soak found no error and flat memory.
func (r *SoakReport) Passed() bool { return len(r.Failures) == 0 }

func (c *SoakConfig) check() error {
	switch {
	case c.PID <= 0:
		return errors.New("soak: the server's pid is required")
	case c.Series <= 0:
		return fmt.Errorf("soak: series %d: must be positive", c.Series)
	case c.Duration <= 0 || c.SampleEvery <= 0:
		return errors.New("soak: duration and sample period must be positive")
	case c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("soak: warm-up %v must be shorter than the duration %v", c.Warmup, c.Duration)
	case c.RangesWarmup && max(c.QueryRange, c.QueryLongRange) >= c.Duration:
		return fmt.Errorf("soak: the query ranges' warm-up %v must be shorter than the duration %v", max(c.QueryRange, c.QueryLongRange), c.Duration)
	case c.CacheWarmupMax >= c.Duration:
		return fmt.Errorf("soak: the cache warm-up's end %v must be before the duration %v", c.CacheWarmupMax, c.Duration)
	case c.Rate <= 0 && (c.Measure <= 0 || c.Fraction <= 0 || c.Fraction > 1):
		return errors.New("soak: give a rate, or a measure time and a fraction in (0, 1]")
	case c.QueryConcurrency < 1 || len(c.QueryDialects) == 0:
		return errors.New("soak: at least one query dialect at concurrency 1 or more")
	case c.MeasureWarmup < 0:
		return fmt.Errorf("soak: measure warm-up %v is negative", c.MeasureWarmup)
	case 2*c.QueryStep >= c.Duration:
		return fmt.Errorf("soak: the duration %v must be longer than two query steps (%v): the queries start when the data fills two", c.Duration, c.QueryStep)
	case c.MinAchieved < 0 || c.MinAchieved > 1:
		return fmt.Errorf("soak: the least achieved fraction %v must be in [0, 1]", c.MinAchieved)
	}
	return nil
}

// Soak runs the soak and returns its report; an error is a soak that could
// not run, a failed soak is a report with Failures.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rep := &SoakReport{MaxSlope: cfg.MaxSlope, MaxSpread: cfg.MaxSpread, TargetRate: cfg.Rate, MinAchieved: cfg.MinAchieved}
	if cfg.Rate <= 0 {
		w, m, mq, err := measure(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("measuring the maximum ingest: %w", err)
		}
		rep.MeasureWarmup, rep.Measure, rep.MeasureQueries, rep.MaxRate = w, m, mq, m.PointsPerSec
		if w != nil && (w.RequestErrors > 0 || w.PointsRejected > 0) {
			rep.Failures = append(rep.Failures, fmt.Sprintf("measure warm-up: %d failed requests, %d points rejected", w.RequestErrors, w.PointsRejected))
		}
		rep.TargetRate = cfg.Fraction * m.PointsPerSec
		if m.RequestErrors > 0 || m.PointsRejected > 0 {
			rep.Failures = append(rep.Failures, fmt.Sprintf("measure: %d failed requests, %d points rejected", m.RequestErrors, m.PointsRejected))
		}
		if rep.TargetRate <= 0 {
			return rep, errors.New("the measure accepted no point")
		}
	}
	// Live steps of all series at the target rate: the interval that makes
	// Series points take 1/TargetRate seconds each, rounded down to the ms
	// so the feed makes at least the target and the pacing holds it there
	// (the timestamps then fall behind the clock by at most one interval
	// in 1/(interval+1)).
	rep.IntervalMs = max(1, int64(math.Floor(float64(cfg.Series)*1000/rep.TargetRate)))
	// The data starts now, after the measure's (which the clock may have
	// held back to now).
	dataStart := time.Now().Truncate(time.Millisecond)
	if m := rep.Measure; m != nil && m.PointsSent > 0 && !dataStart.After(time.UnixMilli(m.LastTs)) {
		dataStart = time.UnixMilli(m.LastTs + 1)
	}
	g, err := NewGenerator(GenConfig{Seed: cfg.Seed, Series: cfg.Series,
		Interval: time.Duration(rep.IntervalMs) * time.Millisecond, Start: dataStart})
	if err != nil {
		return nil, err
	}
	// The raw query asks for one point a step: at most 5,000 steps, under
	// Prometheus' 11,000 a query_range may have.
	cfg.QueryRange = min(cfg.QueryRange, 5000*time.Duration(rep.IntervalMs)*time.Millisecond)
	cpu0, err := ProcCPU(cfg.PID)
	if err != nil {
		return nil, fmt.Errorf("server pid %d: %w", cfg.PID, err)
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	var sampleErr error
	wg.Go(func() {
		rep.RSS, sampleErr = sampleRSS(sctx, cfg.PID, cfg.Write.URL+"/metrics", start, cfg.SampleEvery, cfg.Progress)
		if sampleErr != nil {
			cancel() // the server is gone: nothing more to learn
		}
	})
	var newest atomic.Int64 // the newest point sent, for the empty answers' log
	if cfg.Empties != nil {
		cfg.Empties.Newest, cfg.Empties.Phase = &newest, "soak"
	}
	rep.Queries = make(map[string]*SoakQueries, len(cfg.QueryDialects))
	for _, d := range cfg.QueryDialects {
		sq := &SoakQueries{}
		rep.Queries[d] = sq
		wg.Go(func() { queryLoop(sctx, g, cfg, d, sq, func() int64 { return time.Now().UnixMilli() }) })
	}
	wcfg := cfg.Write
	wcfg.Rate, wcfg.Duration, wcfg.Live, wcfg.MaxPoints = rep.TargetRate, cfg.Duration, true, 0
	wcfg.ServerPID, wcfg.Progress, wcfg.Newest = cfg.PID, nil, &newest
	rep.Write, err = Write(sctx, g, wcfg)
	cancel()
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("soak writes: %w", err)
	}
	if cpu, err := ProcCPU(cfg.PID); err == nil {
		rep.ServerCPUSeconds = cpu - cpu0
	}
	rep.Achieved = rep.Write.PointsPerSec / rep.TargetRate
	if peak, _, err := ProcMemory(cfg.PID); err == nil {
		rep.PeakRSSBytes = peak
	}
	if sampleErr != nil {
		rep.Failures = append(rep.Failures, "sampling the server's memory: "+sampleErr.Error())
	}
	w, why := cfg.warmupEnd(rep.RSS)
	rep.WarmupSeconds, rep.WarmupEnd = w.Seconds(), why
	rep.judge(w)
	return rep, nil
}

// measureInterval is the step of the measure's data: small enough that the
// clock never holds the writer back (Series × 1,000 points/s).
const measureInterval = time.Millisecond

// measure runs the soak's writer flat out: the same dialect, series,
// workers and batch size, live timestamps (never ahead of the clock) 1 ms
// apart, with the query mix meanwhile when cfg.MeasureQueries. First one
// step of every series is written, so that the queries find every metric
// and host from the start; then cfg.MeasureWarmup flat out, untimed, so
// that the queries' ranges fill with data as they will in the soak (a
// query's cost grows with the points in its range); then cfg.Measure, the
// maximum, its data continuing the warm-up's. The warm-up's data starts
// when it does, after the prime's: every series is continued in order, and
// the soak's after them.
//
// The measure's data is 1 ms apart and, flat out, runs behind the clock (a
// few seconds of data a minute): its queries end at the newest point
// written (a step past it, endAhead), not at the clock, and their ranges
// and steps are the soak's
// scaled down to hold at most as many steps of each series as the soak's
// do (measureQueryConfig). Ending at the clock, as before 2026-11-28, the
// short ones found no data after the first seconds of each phase, and the
// maximum was the writer's beside queries cheaper than the soak's.
func measure(ctx context.Context, cfg SoakConfig) (warm, timed *Report, qs map[string]*SoakQueries, err error) {
	wcfg := cfg.Write
	wcfg.Rate, wcfg.MaxPoints, wcfg.ServerPID = 0, 0, -1
	// next is the earliest start of a phase's data: after the last phase's.
	next := time.Now().Truncate(time.Millisecond).Add(-measureInterval)
	// newPhase makes the generator of a phase starting now, or at next if
	// the last phase's data reached now (the clock held it back).
	newPhase := func(steps int, cont bool) (*Generator, error) {
		start := time.Now().Truncate(time.Millisecond)
		if cont || start.Before(next) {
			start = next
		}
		return NewGenerator(GenConfig{Seed: cfg.Seed, Series: cfg.Series, Interval: measureInterval, Steps: steps, Start: start})
	}
	prime, err := newPhase(1, false)
	if err != nil {
		return nil, nil, nil, err
	}
	pcfg := wcfg
	pcfg.Duration, pcfg.Live, pcfg.Label = max(cfg.Measure, time.Minute), false, "prime"
	p, err := Write(ctx, prime, pcfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("writing the first step: %w", err)
	}
	if p.RequestErrors > 0 || p.PointsAccepted != int64(cfg.Series) {
		first := ""
		if len(p.Errors) > 0 {
			first = ", the first: " + p.Errors[0].Message
		}
		return nil, nil, nil, fmt.Errorf("writing the first step: %d of %d points accepted, %d failed requests%s", p.PointsAccepted, cfg.Series, p.RequestErrors, first)
	}
	next = time.UnixMilli(p.LastTs).Add(measureInterval)
	var newest atomic.Int64 // the newest point written: where the queries end
	newest.Store(p.LastTs)
	wcfg.Newest = &newest
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, deferred below
	// Each phase is bounded by its own duration, and the queries are
	// stopped when both are done: a warm-up that overran (a slow last
	// request) must not cut the timed phase short, as a deadline of the sum
	// of the two did (TestSoakAgainstFake, twice in loaded -race runs: "the
	// measure accepted no point"). The deadline, twice that, only bounds
	// the queries' rounds (queryLoop).
	mctx, cancel := context.WithTimeout(ctx, 2*(cfg.MeasureWarmup+cfg.Measure))
	defer cancel()
	if cfg.MeasureQueries {
		if cfg.Empties != nil {
			cfg.Empties.Newest, cfg.Empties.Phase = &newest, "measure"
		}
		qcfg := measureQueryConfig(cfg)
		qs = make(map[string]*SoakQueries, len(cfg.QueryDialects))
		for _, d := range cfg.QueryDialects {
			sq := &SoakQueries{}
			qs[d] = sq
			wg.Go(func() { queryLoop(mctx, prime, qcfg, d, sq, func() int64 { return newest.Load() + qcfg.endAhead() }) })
		}
	}
	wcfg.Live = true
	for _, ph := range []struct {
		label string
		d     time.Duration
		out   **Report
	}{{"measure warm-up", cfg.MeasureWarmup, &warm}, {"measure", cfg.Measure, &timed}} {
		if ph.d <= 0 {
			continue
		}
		g, err := newPhase(0, ph.label == "measure")
		if err != nil {
			return nil, nil, nil, err
		}
		pc := wcfg
		pc.Duration, pc.Label = ph.d, ph.label
		if ph.label == "measure" {
			pc.ServerPID = cfg.PID
		}
		r, err := Write(ctx, g, pc)
		if err != nil {
			return nil, nil, nil, err
		}
		*ph.out = r
		if r.PointsSent > 0 {
			next = time.UnixMilli(r.LastTs).Add(measureInterval)
		}
	}
	cancel()
	return warm, timed, qs, nil
}

// measureQueryConfig returns cfg with the query mix sized for the measure's
// data, 1 ms apart: the short range at most 5,000 steps (the soak's holds
// at most 5,000 of its intervals), and the step and the long range scaled
// by as much, so that each query reads about the steps of each series, and
// aggregates them into the buckets, that the same query of the soak does.
func measureQueryConfig(cfg SoakConfig) SoakConfig {
	q := cfg
	q.QueryRange = min(cfg.QueryRange, 5000*measureInterval)
	scale := func(d time.Duration) time.Duration {
		if cfg.QueryRange <= 0 {
			return d
		}
		return max(measureInterval, time.Duration(float64(d)*float64(q.QueryRange)/float64(cfg.QueryRange)).Truncate(time.Millisecond))
	}
	q.QueryStep, q.QueryLongRange = scale(cfg.QueryStep), scale(cfg.QueryLongRange)
	return q
}

// endAhead is how far past the newest point the measure's queries end: a
// query aligns its end down to its step (MakeQuery), which at the
// measure's scale could leave out all of the data, seconds of it; ending
// a step past the newest point keeps it in every range.
func (c SoakConfig) endAhead() int64 {
	return max(c.QueryStep, c.QueryLongRange/24).Milliseconds()
}

// maxSoakRounds bounds the query rounds of one dialect, whatever the
// duration.
const maxSoakRounds = 1_000_000

// queryLoop sends the mix, each round's range ending at end() as it
// starts, until ctx is done, and adds what came back to sq. It starts
// when the data g writes has filled two steps (firstAnswerEnd), and says
// how long it waited in sq.
func queryLoop(ctx context.Context, g *Generator, cfg SoakConfig, dialect string, sq *SoakQueries, end func() int64) {
	t0 := time.Now()
	step := cfg.QueryStep
	if step <= 0 {
		step = time.Minute // RunQueries' default
	}
	if !waitForEnd(ctx, end, firstAnswerEnd(g.StartMs(), step), step) {
		return
	}
	sq.WaitedSeconds = time.Since(t0).Seconds()
	var errs errorLog
	lat := map[string]*Latencies{}
	for round := 0; round < maxSoakRounds && ctx.Err() == nil; round++ {
		deadline, _ := ctx.Deadline()
		qc := QueryConfig{Dialect: dialect, URL: cfg.Write.URL, Concurrency: cfg.QueryConcurrency,
			Queries: len(QueryKinds) * cfg.QueryConcurrency, Duration: time.Until(deadline),
			End: end(), Range: cfg.QueryRange, LongRange: cfg.QueryLongRange, Step: cfg.QueryStep,
			Seed: cfg.Seed + uint64(round), ServerPID: -1, RequestTimeout: cfg.Write.RequestTimeout,
			Empties: cfg.Empties}
		if qc.Duration <= 0 {
			break
		}
		r, err := RunQueries(ctx, g, qc)
		if err != nil {
			errs.add(err.Error())
			sq.Errors++
			break
		}
		sq.Rounds++
		sq.add(r, lat)
		for _, e := range r.Errors {
			for range e.Count {
				errs.add(e.Message)
			}
		}
	}
	for k, l := range lat {
		sq.Kinds[k].Latency = l.Summary()
	}
	sq.Messages = errs.list()
}

// firstAnswerEnd is the first end, aligned to step as MakeQuery aligns
// it, at which every kind of the mix has an answer when the data starts
// at first (Unix ms): two steps past the bucket of its first point. The
// rate kind's OpenTSDB query downsamples to step and rates the buckets;
// a bucket's time is its start and the rate of the first has no
// predecessor (OpenTSDB 2.4 drops it), so the first rate is at the
// second bucket, and that bucket has points up to the end only once the
// end is past it. Until then the honest answer is no series: over a
// soak's data that begins as it does (the measure's, 1 ms apart, are
// seconds of data-time in one bucket, minutes earlier, and PromQL's
// five-minute windows and lookback find them where a bucket rate cannot)
// each of the soak's first 30 to 60 seconds of rate queries came back
// empty, 22 to 59 of them a soak (docs/benchmarks.md).
func firstAnswerEnd(first int64, step time.Duration) int64 {
	s := step.Milliseconds()
	if s <= 0 {
		return first
	}
	return first - ((first%s)+s)%s + 2*s
}

// waitForEnd waits until end(), aligned down to step, is at least want,
// looking every tenth of a step (at most a second, at least a ms); false
// when ctx is done first.
func waitForEnd(ctx context.Context, end func() int64, want int64, step time.Duration) bool {
	every := min(max(step/10, time.Millisecond), time.Second)
	s := max(step.Milliseconds(), 1)
	for ctx.Err() == nil {
		if e := end(); e-e%s >= want {
			return true
		}
		sleep(ctx, every)
	}
	return false
}

// add folds one round's report into sq; lat collects each kind's
// latencies (one query of a kind per round and worker: its max and its
// mean are the query's own).
func (sq *SoakQueries) add(r *Report, lat map[string]*Latencies) {
	if sq.Kinds == nil {
		sq.Kinds = map[string]*QueryStats{}
	}
	for k, q := range r.Queries {
		s := sq.Kinds[k]
		if s == nil {
			s = &QueryStats{Example: q.Example}
			sq.Kinds[k] = s
			lat[k] = &Latencies{}
		}
		ok := int64(q.Latency.Count) - q.Errors
		if ok > 0 {
			// Running means of series and points per successful answer.
			prev := float64(int64(s.Latency.Count) - s.Errors)
			s.Series = (s.Series*prev + q.Series*float64(ok)) / (prev + float64(ok))
			s.Points = (s.Points*prev + q.Points*float64(ok)) / (prev + float64(ok))
		}
		s.Latency.Count += q.Latency.Count
		s.Errors += q.Errors
		s.Empty += q.Empty
		sq.Empty += q.Empty
		sq.Queries += int64(q.Latency.Count)
		sq.Errors += q.Errors
		if q.Latency.Count > 0 {
			lat[k].Add(time.Duration(q.Latency.Mean * float64(time.Millisecond)))
		}
	}
}

// sampleRSS reads the process's VmRSS every period until ctx is done, and
// the Go runtime's figures from metricsURL (skipped when it cannot be
// read); an error (the process gone) ends it.
func sampleRSS(ctx context.Context, pid int, metricsURL string, start time.Time, every time.Duration, progress io.Writer) ([]RSSSample, error) {
	var out []RSSSample
	t := time.NewTicker(every)
	defer t.Stop()
	client := &http.Client{Timeout: max(time.Second, every/2), Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for {
		_, rss, err := ProcMemory(pid)
		if err != nil {
			return out, err
		}
		s := RSSSample{Seconds: time.Since(start).Seconds(), Bytes: rss}
		// The last sample comes after ctx is done: the client's timeout bounds the read.
		if gm, ok := readGoMemory(context.WithoutCancel(ctx), client, metricsURL); ok {
			s.GoHeapInuse, s.GoNextGC, s.GoMapped, s.FlushQueue = gm.HeapInuse, gm.NextGC, gm.Mapped, gm.FlushQueue
			s.StoreBlockCache, s.StoreMemTables, s.StoreCapacity = gm.Store.BlockCache, gm.Store.MemTables, gm.Store.Capacity
		}
		out = append(out, s)
		if progress != nil {
			cpu, _ := ProcCPU(pid)
			fmt.Fprintf(progress, "%7.1fs  server RSS %.1f MB  CPU %.1f s  Go heap in use %.1f MB, goal %.1f MB, runtime %.1f MB; flush queue %d chunks; store cache %.1f MB, memtables %.1f MB of %.1f MB\n",
				s.Seconds, float64(rss)/1e6, cpu, float64(s.GoHeapInuse)/1e6, float64(s.GoNextGC)/1e6, float64(s.GoMapped)/1e6, s.FlushQueue,
				float64(s.StoreBlockCache)/1e6, float64(s.StoreMemTables)/1e6, float64(s.StoreCapacity)/1e6)
		}
		select {
		case <-ctx.Done():
			return out, nil
		case <-t.C:
		}
	}
}

// FitRSS summarises the samples taken at or after warmup seconds.
func FitRSS(samples []RSSSample, warmup time.Duration) RSSFit {
	var xs, ys []float64
	for _, s := range samples {
		if s.Seconds >= warmup.Seconds() {
			xs = append(xs, s.Seconds/60)
			ys = append(ys, float64(s.Bytes)/1e6)
		}
	}
	f := RSSFit{Samples: len(ys)}
	if len(ys) == 0 {
		return f
	}
	sorted := slices.Clone(ys)
	slices.Sort(sorted)
	f.MinMB, f.MaxMB = sorted[0], sorted[len(sorted)-1]
	if n := len(sorted); n%2 == 1 {
		f.MedianMB = sorted[n/2]
	} else {
		f.MedianMB = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	f.SlopeMBPerMin = slope(xs, ys)
	return f
}

// slope is the least-squares slope of ys over xs (0 for fewer than two
// distinct xs).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// cacheFull is the share of the block cache's capacity that its blocks
// and Pebble's memtables (counted against it) fill when the cache is full:
// Pebble evicts blocks shard by shard, so the total stays a little under
// the capacity.
const cacheFull = 0.9

// WarmupEnd returns when the soak's warm-up ends, and why. Pebble's block
// cache is bounded (its capacity is on /metrics) but fills only as the
// queries read blocks: until it is full the server's memory rises by
// design. So with cacheMax after warmup, the warm-up lasts until the
// first sample, at or after warmup, at which the store's block cache is
// full (its blocks and memtables at least cacheFull of its capacity), and
// until cacheMax at the latest, full or not. Without that, or without the
// store's figures in the samples, it ends at warmup. After it, RSS must be
// flat whatever grows: the cache cannot grow past its capacity, and any
// other growth fails the soak as before.
func WarmupEnd(samples []RSSSample, warmup, cacheMax time.Duration) (time.Duration, string) {
	if cacheMax <= warmup {
		return warmup, "fixed"
	}
	seen := false
	for _, s := range samples {
		if s.StoreCapacity <= 0 {
			continue
		}
		seen = true
		at := time.Duration(s.Seconds * float64(time.Second))
		if at > cacheMax {
			break
		}
		if at >= warmup && float64(s.StoreBlockCache+s.StoreMemTables) >= cacheFull*float64(s.StoreCapacity) {
			return at, fmt.Sprintf("block cache full: %.1f MB of blocks and %.1f MB of memtables in %.1f MB",
				float64(s.StoreBlockCache)/1e6, float64(s.StoreMemTables)/1e6, float64(s.StoreCapacity)/1e6)
		}
	}
	if !seen {
		return warmup, "fixed: no block cache figures on the server's /metrics"
	}
	return cacheMax, "the block cache not full by the cache warm-up's end"
}

// warmupEnd is WarmupEnd from the config: from Warmup, or from the
// longest query range with RangesWarmup when that is later.
func (c *SoakConfig) warmupEnd(samples []RSSSample) (time.Duration, string) {
	warm := c.Warmup
	if c.RangesWarmup {
		warm = max(warm, c.QueryRange, c.QueryLongRange)
	}
	w, why := WarmupEnd(samples, warm, c.CacheWarmupMax)
	if warm > c.Warmup && w == warm {
		why = fmt.Sprintf("the longest query range, %v: every query's range holds the soak's data alone", warm)
	}
	return w, why
}

// judge fits the memory after the warm-up and lists every reason to fail.
func (r *SoakReport) judge(warmup time.Duration) {
	w := r.Write
	if w.RequestErrors > 0 || w.PointsRejected > 0 || w.PointsAccepted != w.PointsSent {
		r.Failures = append(r.Failures, fmt.Sprintf("writes: %d failed requests, %d of %d points rejected, %d accepted",
			w.RequestErrors, w.PointsRejected, w.PointsSent, w.PointsAccepted))
	}
	if r.MinAchieved > 0 && r.Achieved < r.MinAchieved {
		r.Failures = append(r.Failures, fmt.Sprintf("writes: %s points/s is %.1f %% of the target %s, under the %.0f %% required",
			thousands(w.PointsPerSec), 100*r.Achieved, thousands(r.TargetRate), 100*r.MinAchieved))
	}
	for _, phase := range []struct {
		name string
		qs   map[string]*SoakQueries
	}{{"measure queries", r.MeasureQueries}, {"queries", r.Queries}} {
		for _, d := range slices.Sorted(maps.Keys(phase.qs)) {
			q := phase.qs[d]
			if q.Errors > 0 {
				r.Failures = append(r.Failures, fmt.Sprintf("%s %s: %d errors of %d", phase.name, d, q.Errors, q.Queries))
			}
			if q.Queries == 0 {
				r.Failures = append(r.Failures, fmt.Sprintf("%s %s: none completed", phase.name, d))
			}
		}
	}
	r.Fit = FitRSS(r.RSS, warmup)
	r.Parts = FitMemoryParts(r.RSS, warmup)
	f := r.Fit
	switch {
	case f.Samples < 3:
		r.Failures = append(r.Failures, fmt.Sprintf("memory: %d samples after the warm-up, want at least 3", f.Samples))
	default:
		if f.SlopeMBPerMin > r.MaxSlope {
			r.Failures = append(r.Failures, fmt.Sprintf("memory: RSS grows %.2f MB/min after the warm-up (limit %.2f)", f.SlopeMBPerMin, r.MaxSlope))
		}
		if f.MaxMB > (1+r.MaxSpread)*f.MedianMB {
			r.Failures = append(r.Failures, fmt.Sprintf("memory: RSS peaked at %.1f MB, more than %.0f %% over the median %.1f MB",
				f.MaxMB, 100*r.MaxSpread, f.MedianMB))
		}
	}
}

// WriteJSON writes the report as indented JSON.
func (r *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the soak's outcome for a person.
func (r *SoakReport) WriteText(w io.Writer) error {
	var b []byte
	p := func(format string, a ...any) { b = fmt.Appendf(b, format, a...) }
	if m := r.Measure; m != nil {
		with := "alone"
		if r.MeasureQueries != nil {
			with = "with the query mix"
		}
		p("measure: %s, the soak's writer flat out %s (%d series, live timestamps 1 ms apart, %d workers × %d points a request): %s points/s over %.1fs (%d points, %d failed requests)\n",
			m.Dialect, with, m.Series, m.Workers, m.BatchSize, thousands(m.PointsPerSec), m.Seconds, m.PointsAccepted, m.RequestErrors)
		if w := r.MeasureWarmup; w != nil {
			p("  after a warm-up of %.1fs flat out, untimed: %s points/s (%d points, %d failed requests)\n",
				w.Seconds, thousands(w.PointsPerSec), w.PointsAccepted, w.RequestErrors)
		}
		for _, d := range slices.Sorted(maps.Keys(r.MeasureQueries)) {
			q := r.MeasureQueries[d]
			p("  measure queries %s: %d in %d rounds, %d errors, %d empty answers; waited %.1fs for its data to fill two steps\n", d, q.Queries, q.Rounds, q.Errors, q.Empty, q.WaitedSeconds)
		}
	}
	frac := ""
	if r.MaxRate > 0 {
		frac = fmt.Sprintf(" = %.1f %% of the measure", 100*r.TargetRate/r.MaxRate)
	}
	p("soak: target %s points/s%s (%d series every %d ms, live timestamps, paced)\n", thousands(r.TargetRate), frac, r.Write.Series, r.IntervalMs)
	wr := r.Write
	p("  writes: %.1fs, %d points sent, %d accepted, %d rejected, %s points/s; %d requests, %d failed; latency %s\n",
		wr.Seconds, wr.PointsSent, wr.PointsAccepted, wr.PointsRejected, thousands(wr.PointsPerSec), wr.Requests, wr.RequestErrors, wr.Latency.text())
	p("  achieved %.1f %% of the target (at least %.0f %% required)\n", 100*r.Achieved, 100*r.MinAchieved)
	for _, e := range wr.Errors {
		p("  write error ×%d: %s\n", e.Count, e.Message)
	}
	for _, d := range slices.Sorted(maps.Keys(r.Queries)) {
		q := r.Queries[d]
		p("  queries %s: %d in %d rounds, %d errors, %d empty answers; waited %.1fs for its data to fill two steps\n", d, q.Queries, q.Rounds, q.Errors, q.Empty, q.WaitedSeconds)
		for _, k := range sortedKinds(q.Kinds) {
			s := q.Kinds[k]
			p("    %-5s %6d queries %4d errors %4d empty  p50 %8.1f ms  p90 %8.1f ms  max %8.1f ms  mean series %7.1f points %9.0f\n",
				k, s.Latency.Count, s.Errors, s.Empty, s.Latency.P50, s.Latency.P90, s.Latency.Max, s.Series, s.Points)
		}
		for _, e := range q.Messages {
			p("    error ×%d: %s\n", e.Count, e.Message)
		}
	}
	f := r.Fit
	p("  server: %.1f CPU-s over the soak, peak RSS %.1f MB\n", r.ServerCPUSeconds, float64(r.PeakRSSBytes)/1e6)
	p("  warm-up: the first %.0fs (%s)\n", r.WarmupSeconds, r.WarmupEnd)
	p("  RSS after the warm-up (%d samples): min %.1f MB, median %.1f MB, max %.1f MB, slope %+.2f MB/min\n",
		f.Samples, f.MinMB, f.MedianMB, f.MaxMB, f.SlopeMBPerMin)
	p("  flat means: slope ≤ %.2f MB/min and max ≤ %.0f %% over the median\n", r.MaxSlope, 100*r.MaxSpread)
	if r.Parts != nil {
		p("%s", r.Parts.text())
	}
	if r.Passed() {
		p("PASS\n")
	} else {
		for _, f := range r.Failures {
			p("FAIL: %s\n", f)
		}
	}
	_, err := w.Write(b)
	return err
}
