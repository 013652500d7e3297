package loadtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
)

// Kind is how a metric's values move.
type Kind uint8

const (
	// Gauge is a random walk within bounds, with two decimals.
	Gauge Kind = iota
	// Counter is an integer that grows every step and now and then resets.
	Counter
	// Constant is an integer that never changes for a host.
	Constant
	// Histogram is a native histogram whose counts grow as a counter (see
	// GenConfig.Histograms).
	Histogram
)

func (k Kind) String() string {
	switch k {
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	case Constant:
		return "constant"
	case Histogram:
		return "histogram"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MetricDef is one metric every host has.
type MetricDef struct {
	Name string
	Kind Kind
	// Gauge: bounds and largest step, in hundredths.
	Lo, Hi, Step int64
	// Counter: mean increment per step; ResetEvery is the mean number of
	// steps between resets.
	Inc, ResetEvery int64
}

// Metrics is the metric set of every host. Names use only letters, digits
// and underscores, so they are valid in OpenTSDB and Prometheus alike.
var Metrics = []MetricDef{
	{Name: "sys_cpu_user_percent", Kind: Gauge, Lo: 0, Hi: 100_00, Step: 150},
	{Name: "sys_cpu_system_percent", Kind: Gauge, Lo: 0, Hi: 100_00, Step: 50},
	{Name: "sys_load_1m", Kind: Gauge, Lo: 0, Hi: 64_00, Step: 20},
	{Name: "mem_used_percent", Kind: Gauge, Lo: 5_00, Hi: 99_00, Step: 10},
	{Name: "disk_used_percent", Kind: Gauge, Lo: 1_00, Hi: 99_00, Step: 1},
	{Name: "net_latency_ms", Kind: Gauge, Lo: 0, Hi: 500_00, Step: 300},
	{Name: "net_bytes_in_total", Kind: Counter, Inc: 1 << 20, ResetEvery: 20_000},
	{Name: "net_bytes_out_total", Kind: Counter, Inc: 1 << 19, ResetEvery: 20_000},
	{Name: "http_requests_total", Kind: Counter, Inc: 500, ResetEvery: 10_000},
	{Name: "disk_io_ops_total", Kind: Counter, Inc: 200, ResetEvery: 20_000},
	{Name: "mem_total_bytes", Kind: Constant},
	{Name: "cpu_cores", Kind: Constant},
}

// MetricIndex returns the position of a metric in Metrics, or -1.
func MetricIndex(name string) int {
	for i, m := range Metrics {
		if m.Name == name {
			return i
		}
	}
	return -1
}

var (
	regions  = []string{"us-east", "us-west", "eu-west", "ap-south"}
	services = []string{"web", "api", "db", "cache", "queue", "search", "auth", "batch"}
)

const (
	dcsPerRegion = 3
	racksPerDC   = 16
)

// Value is one point's value: an integer or a float.
type Value struct {
	Int     int64
	Float   float64
	IsFloat bool
}

// F returns the value as a float64.
func (v Value) F() float64 {
	if v.IsFloat {
		return v.Float
	}
	return float64(v.Int)
}

// AppendText appends the value as OpenTSDB and Prometheus print it: an
// integer without a decimal point, a float in the shortest form that reads
// back to the same float64.
func (v Value) AppendText(dst []byte) []byte {
	if v.IsFloat {
		return strconv.AppendFloat(dst, v.Float, 'f', -1, 64)
	}
	return strconv.AppendInt(dst, v.Int, 10)
}

func (v Value) String() string { return string(v.AppendText(nil)) }

// Tag is one tag (label) of a series.
type Tag struct{ Key, Value string }

// Series is one series: a metric and its host's tags. A Series never changes
// once made; churn makes new ones.
type Series struct {
	Metric string
	Kind   Kind
	// Tags are sorted by key: dc, host, rack, region, service.
	Tags []Tag
	// Host is the host's number, unique over the whole run.
	Host int
}

// Tag returns the value of tag key, or "".
func (s *Series) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// Point is one point of a series. T is Unix milliseconds.
type Point struct {
	S *Series
	T int64
	V Value
	// H is the sample of a Histogram series (V is then zero).
	H *histogram.Histogram
}

// GenConfig says what data to make.
type GenConfig struct {
	// Seed makes the data: the same seed and configuration give the same
	// points.
	Seed uint64
	// Series is the number of series written at any one time: hosts times
	// len(Metrics), the last host having only the first metrics if it does
	// not divide.
	Series int
	// Interval is the time between two points of a series.
	Interval time.Duration
	// Start is the first timestamp; it is truncated to the millisecond.
	Start time.Time
	// Steps is the number of points of every series slot (0: no end, for
	// live runs bounded by time or points).
	Steps int
	// Churn is the fraction of hosts replaced per hour of data time: a
	// replaced host's series stop and a new host's start. 0 for none.
	Churn float64
	// Values is how values are written: ValuesDecimal (the default, ""
	// too) or ValuesFloat.
	Values string
	// Histograms is the number of native histogram series every host has
	// besides its Series share of float series (0: none). Only the remote
	// write dialects carry them.
	Histograms int
}

// The value modes of GenConfig.Values.
const (
	// ValuesDecimal: gauges with two decimals, counters and constants
	// integers — values a decimal encoding suits.
	ValuesDecimal = "decimal"
	// ValuesFloat: gauges and counters full-precision float64s (random low
	// bits, as a rate or a ratio a collector computes has), constants
	// integers. The same series and timestamps as ValuesDecimal.
	ValuesFloat = "float"
)

// Generator makes points as GenConfig says. It holds no mutable state: the
// sources it hands out do. Safe for concurrent use.
type Generator struct {
	cfg      GenConfig
	start    int64 // ms
	interval int64 // ms
	hosts    int   // host slots
	lifetime int64 // steps a host lives, 0 for ever
}

// NewGenerator checks cfg and returns its generator.
func NewGenerator(cfg GenConfig) (*Generator, error) {
	if cfg.Series <= 0 {
		return nil, fmt.Errorf("series %d: must be positive", cfg.Series)
	}
	if cfg.Interval < time.Millisecond {
		return nil, fmt.Errorf("interval %v: must be at least 1ms", cfg.Interval)
	}
	if cfg.Steps < 0 {
		return nil, fmt.Errorf("steps %d: must not be negative", cfg.Steps)
	}
	if cfg.Churn < 0 || math.IsNaN(cfg.Churn) || math.IsInf(cfg.Churn, 0) {
		return nil, fmt.Errorf("churn %v: must be a fraction per hour, 0 or more", cfg.Churn)
	}
	if cfg.Histograms < 0 || cfg.Histograms > 100 {
		return nil, fmt.Errorf("histograms %d: want 0 to 100 per host", cfg.Histograms)
	}
	if cfg.Start.IsZero() {
		return nil, errors.New("start time not set")
	}
	switch cfg.Values {
	case "":
		cfg.Values = ValuesDecimal
	case ValuesDecimal, ValuesFloat:
	default:
		return nil, fmt.Errorf("values %q: want %s or %s", cfg.Values, ValuesDecimal, ValuesFloat)
	}
	g := &Generator{
		cfg:      cfg,
		start:    cfg.Start.UnixMilli(),
		interval: cfg.Interval.Milliseconds(),
		hosts:    (cfg.Series + len(Metrics) - 1) / len(Metrics),
	}
	if cfg.Churn > 0 {
		stepsPerHour := float64(time.Hour) / float64(cfg.Interval)
		g.lifetime = max(1, int64(math.Round(stepsPerHour/cfg.Churn)))
	}
	return g, nil
}

// Config returns the generator's configuration.
func (g *Generator) Config() GenConfig { return g.cfg }

// HostSlots is the number of hosts alive at any one time.
func (g *Generator) HostSlots() int { return g.hosts }

// StartMs is the first timestamp, Unix milliseconds.
func (g *Generator) StartMs() int64 { return g.start }

// IntervalMs is the step, in milliseconds.
func (g *Generator) IntervalMs() int64 { return g.interval }

// StepTime is the timestamp of step i, Unix milliseconds.
func (g *Generator) StepTime(i int64) int64 { return g.start + i*g.interval }

// Points is the number of points the whole run makes (0 when Steps is 0).
func (g *Generator) Points() int64 {
	return (int64(g.cfg.Series) + int64(g.hosts*g.cfg.Histograms)) * int64(g.cfg.Steps)
}

// metricsOf is the number of metrics host slot j has.
func (g *Generator) metricsOf(j int) int {
	if j < g.hosts-1 || g.cfg.Series%len(Metrics) == 0 {
		return len(Metrics)
	}
	return g.cfg.Series % len(Metrics)
}

// generation is the generation of host slot j at step i: it grows by one
// every lifetime steps, the slots' turns spread evenly over a lifetime.
func (g *Generator) generation(j int, i int64) int64 {
	if g.lifetime == 0 {
		return 0
	}
	offset := int64(j) * g.lifetime / int64(g.hosts)
	return (i + offset) / g.lifetime
}

// HostAt is the host number in slot j at step i.
func (g *Generator) HostAt(j int, i int64) int {
	return j + int(g.generation(j, i))*g.hosts
}

// DistinctSeries is the number of series the first steps steps touch,
// churn included.
func (g *Generator) DistinctSeries(steps int64) int64 {
	if steps <= 0 {
		return 0
	}
	var n int64
	for j := 0; j < g.hosts; j++ {
		gens := g.generation(j, steps-1) - g.generation(j, 0) + 1
		n += gens * int64(g.metricsOf(j)+g.cfg.Histograms)
	}
	return n
}

// mix makes a well-spread 64-bit number from a few (SplitMix64's finaliser).
func mix(xs ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, x := range xs {
		h ^= x
		h += 0x9e3779b97f4a7c15
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// HostTags returns the tags of host h, sorted by key.
func (g *Generator) HostTags(h int) []Tag {
	r := rand.New(rand.NewPCG(g.cfg.Seed, mix(uint64(h), 0x7a6773)))
	region := regions[r.IntN(len(regions))]
	dc := region + "-" + string(rune('a'+r.IntN(dcsPerRegion)))
	rack := fmt.Sprintf("%s-r%02d", dc, r.IntN(racksPerDC))
	service := services[r.IntN(len(services))]
	return []Tag{
		{"dc", dc},
		{"host", fmt.Sprintf("host-%06d", h)},
		{"rack", rack},
		{"region", region},
		{"service", service},
	}
}

// Regions, Services list the tag values the generator uses.
func Regions() []string  { return append([]string(nil), regions...) }
func Services() []string { return append([]string(nil), services...) }

// slot is the state of one series slot: the current host's series and its
// last value.
type slot struct {
	host   int // host slot j
	metric int
	gen    int64 // generation the state below is for; -1 before the first
	s      *Series
	rng    *rand.Rand
	cur    int64 // cents for a gauge, the count for a counter, the value for a constant
	// float is set in ValuesFloat mode: gauges and counters move fcur
	// instead of cur.
	float bool
	fcur  float64
	// hist is the state of a histogram slot (metric >= len(Metrics)).
	hist histState
}

func (g *Generator) reset(sl *slot, gen int64, tags []Tag) {
	h := sl.host + int(gen)*g.hosts
	sl.gen = gen
	if k := sl.metric - len(Metrics); k >= 0 {
		sl.s = &Series{Metric: HistogramMetric(k), Kind: Histogram, Tags: tags, Host: h}
		sl.rng = rand.New(rand.NewPCG(g.cfg.Seed, mix(uint64(h), uint64(sl.metric))))
		sl.resetHistogram()
		return
	}
	md := &Metrics[sl.metric]
	sl.s = &Series{Metric: md.Name, Kind: md.Kind, Tags: tags, Host: h}
	sl.rng = rand.New(rand.NewPCG(g.cfg.Seed, mix(uint64(h), uint64(sl.metric))))
	sl.float = g.cfg.Values == ValuesFloat && md.Kind != Constant
	switch md.Kind {
	case Gauge:
		sl.cur = md.Lo + sl.rng.Int64N(md.Hi-md.Lo+1)
		sl.fcur = float64(sl.cur) / 100
	case Counter:
		sl.cur = sl.rng.Int64N(md.Inc * 1000)
		if sl.float { // only then: the decimal data stays what it was
			sl.fcur = float64(sl.cur) + sl.rng.Float64()
		}
	case Constant:
		switch md.Name {
		case "mem_total_bytes":
			sl.cur = int64(16<<sl.rng.IntN(4)) << 30
		case "cpu_cores":
			sl.cur = int64(4 << sl.rng.IntN(4))
		default:
			sl.cur = sl.rng.Int64N(1000)
		}
	}
}

// advance moves the slot to its next value (not called for a series' first
// point).
func (sl *slot) advance() {
	if sl.metric >= len(Metrics) {
		sl.advanceHistogram()
		return
	}
	md := &Metrics[sl.metric]
	if sl.float {
		sl.advanceFloat(md)
		return
	}
	switch md.Kind {
	case Gauge:
		v := sl.cur + sl.rng.Int64N(2*md.Step+1) - md.Step
		if v < md.Lo {
			v = 2*md.Lo - v
		}
		if v > md.Hi {
			v = 2*md.Hi - v
		}
		sl.cur = min(max(v, md.Lo), md.Hi)
	case Counter:
		if sl.rng.Int64N(md.ResetEvery) == 0 {
			sl.cur = sl.rng.Int64N(md.Inc)
			return
		}
		sl.cur += md.Inc/2 + sl.rng.Int64N(md.Inc+1)
	}
}

// advanceFloat is advance in ValuesFloat mode: the same walks as advance,
// in float64 with random low bits.
func (sl *slot) advanceFloat(md *MetricDef) {
	switch md.Kind {
	case Gauge:
		lo, hi := float64(md.Lo)/100, float64(md.Hi)/100
		v := sl.fcur + (2*sl.rng.Float64()-1)*float64(md.Step)/100
		if v < lo {
			v = 2*lo - v
		}
		if v > hi {
			v = 2*hi - v
		}
		sl.fcur = min(max(v, lo), hi)
	case Counter:
		if sl.rng.Int64N(md.ResetEvery) == 0 {
			sl.fcur = sl.rng.Float64() * float64(md.Inc)
			return
		}
		sl.fcur += float64(md.Inc) * (0.5 + sl.rng.Float64())
	}
}

func (sl *slot) value() Value {
	if sl.float {
		return Value{Float: sl.fcur, IsFloat: true}
	}
	if Metrics[sl.metric].Kind == Gauge {
		return Value{Float: float64(sl.cur) / 100, IsFloat: true}
	}
	return Value{Int: sl.cur}
}

type hostTags struct {
	host int
	tags []Tag
}

// Source makes the points of some host slots, step after step: all its
// series' points of step i, in a fixed order, then those of step i+1. Not
// safe for concurrent use; give each worker its own.
type Source struct {
	g     *Generator
	slots []slot
	tags  map[int]hostTags // host slot → its current host's tags, shared by its series
	step  int64            // the step being made
	next  int              // the next slot within it
}

// Source returns a source of the host slots j with j % parts == part.
func (g *Generator) Source(part, parts int) *Source {
	if parts < 1 || part < 0 || part >= parts {
		panic(fmt.Sprintf("loadtest: Source(%d, %d): part out of range", part, parts))
	}
	src := &Source{g: g, tags: make(map[int]hostTags)}
	for j := part; j < g.hosts; j += parts {
		for m := 0; m < g.metricsOf(j); m++ {
			src.slots = append(src.slots, slot{host: j, metric: m, gen: -1})
		}
		for k := range g.cfg.Histograms {
			src.slots = append(src.slots, slot{host: j, metric: len(Metrics) + k, gen: -1})
		}
	}
	return src
}

// Len is the number of series the source writes at any one time.
func (s *Source) Len() int { return len(s.slots) }

// Step is the step the source is at: every point of the steps before it has
// been made.
func (s *Source) Step() int64 { return s.step }

// Done tells whether every step has been made (never, when Steps is 0).
func (s *Source) Done() bool {
	return len(s.slots) == 0 || (s.g.cfg.Steps > 0 && s.step >= int64(s.g.cfg.Steps))
}

// Fill appends up to n points to dst, none of a step at or past stepLimit,
// and returns dst.
func (s *Source) Fill(dst []Point, n int, stepLimit int64) []Point {
	for added := 0; added < n && !s.Done() && s.step < stepLimit; added++ {
		sl := &s.slots[s.next]
		gen := s.g.generation(sl.host, s.step)
		if gen != sl.gen {
			h := sl.host + int(gen)*s.g.hosts
			ht, ok := s.tags[sl.host]
			if !ok || ht.host != h {
				ht = hostTags{host: h, tags: s.g.HostTags(h)}
				s.tags[sl.host] = ht
			}
			s.g.reset(sl, gen, ht.tags)
		} else {
			sl.advance()
		}
		if sl.metric >= len(Metrics) {
			dst = append(dst, Point{S: sl.s, T: s.g.StepTime(s.step), H: sl.hist.histogram()})
		} else {
			dst = append(dst, Point{S: sl.s, T: s.g.StepTime(s.step), V: sl.value()})
		}
		s.next++
		if s.next == len(s.slots) {
			s.next = 0
			s.step++
		}
	}
	return dst
}

// Each calls fn for every point of the whole run in order, one source at a
// time; it is how a checker recomputes what a run wrote. It needs Steps > 0.
func (g *Generator) Each(fn func(Point)) {
	if g.cfg.Steps == 0 {
		panic("loadtest: Each on an endless generator")
	}
	src := g.Source(0, 1)
	var buf []Point
	for !src.Done() {
		buf = src.Fill(buf[:0], 4096, math.MaxInt64)
		for _, p := range buf {
			fn(p)
		}
	}
}

// SeriesKey is a canonical text of a series: metric{k=v,...}, tags sorted.
func SeriesKey(metric string, tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte(metric)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, tags[k]...)
	}
	return string(append(b, '}'))
}

// Key is the series' SeriesKey.
func (s *Series) Key() string {
	m := make(map[string]string, len(s.Tags))
	for _, t := range s.Tags {
		m[t.Key] = t.Value
	}
	return SeriesKey(s.Metric, m)
}
