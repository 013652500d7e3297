package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Latencies collects request durations. Safe for concurrent use.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one duration.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// Len is the number recorded.
func (l *Latencies) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

// Since summarises the durations recorded from position from on (for a
// progress line) and returns the position to pass next time.
func (l *Latencies) Since(from int) (Summary, int) {
	l.mu.Lock()
	d := slices.Clone(l.d[min(from, len(l.d)):])
	n := len(l.d)
	l.mu.Unlock()
	return Summarize(d), n
}

// Summary summarises every duration recorded.
func (l *Latencies) Summary() Summary {
	l.mu.Lock()
	d := slices.Clone(l.d)
	l.mu.Unlock()
	return Summarize(d)
}

// Summary is a latency distribution in milliseconds.
type Summary struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Summarize computes the summary of d, sorting d in place. Percentiles are
// by nearest rank: the p-th percentile is the smallest sample with at least
// p% of the samples at or below it.
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return Summary{
		Count: len(d),
		Mean:  ms(sum / time.Duration(len(d))),
		P50:   ms(Percentile(d, 50)),
		P90:   ms(Percentile(d, 90)),
		P99:   ms(Percentile(d, 99)),
		Max:   ms(d[len(d)-1]),
	}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by nearest
// rank, or 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// ServerStats is what /proc says of the server process over a run.
type ServerStats struct {
	PID int `json:"pid"`
	// CPUSeconds is user plus system time the process used during the run.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUSecondsPerMillionPoints is CPUSeconds per million points accepted.
	CPUSecondsPerMillionPoints float64 `json:"cpu_seconds_per_million_points,omitempty"`
	// PeakRSSBytes is the process's high-water mark of resident memory
	// (VmHWM), over its whole life, not only the run.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// RSSBytes is the resident memory at the end of the run.
	RSSBytes int64 `json:"rss_bytes"`
}

// QueryStats is one query kind's outcome.
type QueryStats struct {
	Latency Summary `json:"latency"`
	Errors  int64   `json:"errors"`
	// Series and Points are the mean number of series and points per
	// successful answer: a check that the query found data.
	Series float64 `json:"mean_series"`
	Points float64 `json:"mean_points"`
	// Empty counts the successful answers with no series.
	Empty int64 `json:"empty_answers,omitempty"`
	// Example is one query as sent.
	Example string `json:"example,omitempty"`
}

// Report is the outcome of a write or query run.
type Report struct {
	Label   string    `json:"label,omitempty"`
	Mode    string    `json:"mode"` // write or query
	Dialect string    `json:"dialect"`
	Target  string    `json:"target"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Stopped says why the run ended: "data" (all of it written), "points"
	// (the bound on points), "duration", "queries", "interrupted".
	Stopped string `json:"stopped"`

	// Write runs.
	Workers        int     `json:"workers,omitempty"`
	BatchSize      int     `json:"batch_size,omitempty"`
	Series         int     `json:"series,omitempty"`
	DistinctSeries int64   `json:"distinct_series,omitempty"`
	IntervalSec    float64 `json:"interval_seconds,omitempty"`
	FirstTs        int64   `json:"first_timestamp_ms,omitempty"`
	LastTs         int64   `json:"last_timestamp_ms,omitempty"`
	PointsSent     int64   `json:"points_sent"`
	PointsAccepted int64   `json:"points_accepted"`
	// HistogramSamples is how many of the points accepted are native
	// histogram samples (counted from batches accepted whole).
	HistogramSamples int64 `json:"histogram_samples,omitempty"`
	PointsRejected   int64 `json:"points_rejected"`
	// PointsUnconfirmed were sent over a protocol with no acknowledgement
	// (telnet without a sync command).
	PointsUnconfirmed int64   `json:"points_unconfirmed,omitempty"`
	PointsPerSec      float64 `json:"points_per_second"`
	Requests          int64   `json:"requests"`
	RequestErrors     int64   `json:"request_errors"`
	Latency           Summary `json:"request_latency"`
	// Disk is the server's data directory sampled while the run wrote.
	Disk *DiskStats `json:"disk,omitempty"`

	// Query runs.
	Concurrency int                    `json:"concurrency,omitempty"`
	Queries     map[string]*QueryStats `json:"queries,omitempty"`

	Server *ServerStats `json:"server,omitempty"`
	// ClientCPUSeconds is this process's own CPU time during the run: on a
	// shared machine it was not available to the server.
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	// Errors are the first distinct error messages, with their counts.
	Errors []ErrorCount `json:"errors,omitempty"`
}

// ErrorCount is an error message and how often it was seen.
type ErrorCount struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// errorLog keeps the first maxErrors distinct messages. Safe for concurrent
// use.
type errorLog struct {
	mu    sync.Mutex
	order []string
	n     map[string]int64
}

const maxErrors = 10

func (e *errorLog) add(msg string) {
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = make(map[string]int64)
	}
	if _, ok := e.n[msg]; !ok {
		if len(e.order) >= maxErrors {
			e.n["(other errors)"]++
			if e.n["(other errors)"] == 1 {
				e.order = append(e.order, "(other errors)")
			}
			return
		}
		e.order = append(e.order, msg)
	}
	e.n[msg]++
}

func (e *errorLog) list() []ErrorCount {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]ErrorCount, 0, len(e.order))
	for _, m := range e.order {
		out = append(out, ErrorCount{m, e.n[m]})
	}
	return out
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	return &r, nil
}

// WriteText writes the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	title := r.Mode + " " + r.Dialect + " → " + r.Target
	if r.Label != "" {
		title = r.Label + ": " + title
	}
	fmt.Fprintf(&b, "%s\n", title)
	fmt.Fprintf(&b, "  ran %.1fs, stopped by %s\n", r.Seconds, r.Stopped)
	if r.Mode == "write" {
		fmt.Fprintf(&b, "  series %d at a time (%d distinct), every %gs, %d workers, %d points per request\n",
			r.Series, r.DistinctSeries, r.IntervalSec, r.Workers, r.BatchSize)
		if r.FirstTs != 0 || r.LastTs != 0 {
			fmt.Fprintf(&b, "  timestamps %s .. %s\n", time.UnixMilli(r.FirstTs).UTC().Format(time.RFC3339), time.UnixMilli(r.LastTs).UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(&b, "  points sent %d, accepted %d, rejected %d", r.PointsSent, r.PointsAccepted, r.PointsRejected)
		if r.PointsUnconfirmed > 0 {
			fmt.Fprintf(&b, ", unconfirmed %d (no acknowledgement in the protocol)", r.PointsUnconfirmed)
		}
		if r.HistogramSamples > 0 {
			fmt.Fprintf(&b, "; %d of the accepted are histogram samples", r.HistogramSamples)
		}
		fmt.Fprintf(&b, "\n  %s points/s\n", thousands(r.PointsPerSec))
		fmt.Fprintf(&b, "  requests %d, failed %d; latency %s\n", r.Requests, r.RequestErrors, r.Latency.text())
		if d := r.Disk; d != nil {
			fmt.Fprintf(&b, "  data directory while writing: peak %s bytes, %s at the end (%d samples)", thousands(float64(d.PeakBytes)), thousands(float64(d.EndBytes)), d.Samples)
			if d.Error != "" {
				fmt.Fprintf(&b, "; sampling failed: %s", d.Error)
			}
			b.WriteString("\n")
		}
	}
	if r.Mode == "query" {
		fmt.Fprintf(&b, "  concurrency %d\n", r.Concurrency)
		fmt.Fprintf(&b, "  %-8s %7s %6s %9s %9s %9s %9s %9s %8s\n", "kind", "queries", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms", "series", "points")
		for _, k := range sortedKinds(r.Queries) {
			q := r.Queries[k]
			fmt.Fprintf(&b, "  %-8s %7d %6d %9.2f %9.2f %9.2f %9.2f %9.1f %8.0f\n", k, q.Latency.Count, q.Errors,
				q.Latency.P50, q.Latency.P90, q.Latency.P99, q.Latency.Max, q.Series, q.Points)
		}
	}
	if s := r.Server; s != nil {
		fmt.Fprintf(&b, "  server pid %d: %.2f CPU-s", s.PID, s.CPUSeconds)
		if s.CPUSecondsPerMillionPoints > 0 {
			fmt.Fprintf(&b, " (%.3f per million points)", s.CPUSecondsPerMillionPoints)
		}
		fmt.Fprintf(&b, ", peak RSS %.1f MB, RSS now %.1f MB\n", float64(s.PeakRSSBytes)/1e6, float64(s.RSSBytes)/1e6)
	}
	fmt.Fprintf(&b, "  client CPU %.2f s\n", r.ClientCPUSeconds)
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  error ×%d: %s\n", e.Count, e.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (s Summary) text() string {
	if s.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %.2fms p90 %.2fms p99 %.2fms max %.2fms", s.P50, s.P90, s.P99, s.Max)
}

// sortedKinds lists the kinds of m in KindOrder, unknown ones after.
func sortedKinds(m map[string]*QueryStats) []string {
	var out []string
	for _, k := range QueryKinds {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(QueryKinds, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// thousands formats x rounded to an integer with commas.
func thousands(x float64) string {
	n := int64(math.Round(x))
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
