package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFitRSS(t *testing.T) {
	// 10 MB/min from 100 MB, one sample every 6 s for 5 minutes; the
	// first two minutes at 900 MB must be ignored.
	var s []RSSSample
	for i := 0; i <= 50; i++ {
		sec := float64(i * 6)
		mb := 100 + 10*sec/60
		if sec < 120 {
			mb = 900
		}
		s = append(s, RSSSample{Seconds: sec, Bytes: int64(mb * 1e6)})
	}
	f := FitRSS(s, 2*time.Minute)
	if f.Samples != 31 || math.Abs(f.SlopeMBPerMin-10) > 1e-6 {
		t.Fatalf("fit %+v, want 31 samples and a slope of 10 MB/min", f)
	}
	if math.Abs(f.MinMB-120) > 1e-6 || math.Abs(f.MaxMB-150) > 1e-6 || math.Abs(f.MedianMB-135) > 1e-6 {
		t.Fatalf("fit %+v, want min 120, median 135, max 150", f)
	}
	even := FitRSS([]RSSSample{{Seconds: 0, Bytes: 1e6}, {Seconds: 1, Bytes: 3e6}, {Seconds: 2, Bytes: 2e6}, {Seconds: 3, Bytes: 10e6}}, 0)
	if even.MedianMB != 2.5 {
		t.Fatalf("median of 1, 3, 2, 10 MB: %v, want 2.5", even.MedianMB)
	}
	if f := FitRSS([]RSSSample{{Seconds: 0, Bytes: 5e6}}, 0); f.SlopeMBPerMin != 0 || f.Samples != 1 {
		t.Fatalf("one sample: %+v", f)
	}
}

func TestJudge(t *testing.T) {
	flat := func(mb ...float64) []RSSSample {
		var s []RSSSample
		for i, m := range mb {
			s = append(s, RSSSample{Seconds: float64(i * 60), Bytes: int64(m * 1e6)})
		}
		return s
	}
	okWrite := &Report{PointsSent: 10, PointsAccepted: 10}
	okQueries := map[string]*SoakQueries{"prom": {Queries: 5}}
	cases := []struct {
		name string
		r    SoakReport
		want string // "" for a pass
	}{
		{"flat", SoakReport{Write: okWrite, Queries: okQueries, RSS: flat(300, 310, 305, 300, 308)}, ""},
		{"growing", SoakReport{Write: okWrite, Queries: okQueries, RSS: flat(300, 310, 320, 330, 340)}, "grows 10.00 MB/min"},
		{"spike", SoakReport{Write: okWrite, Queries: okQueries, RSS: flat(300, 300, 400, 300, 300)}, "peaked at 400.0 MB"},
		{"few samples", SoakReport{Write: okWrite, Queries: okQueries, RSS: flat(300, 300)}, "2 samples"},
		{"write errors", SoakReport{Write: &Report{PointsSent: 10, PointsAccepted: 5, PointsRejected: 5, RequestErrors: 1},
			Queries: okQueries, RSS: flat(1, 1, 1)}, "5 of 10 points rejected"},
		{"query errors", SoakReport{Write: okWrite, Queries: map[string]*SoakQueries{"prom": {Queries: 5, Errors: 1}}, RSS: flat(1, 1, 1)}, "queries prom: 1 errors of 5"},
		{"no queries", SoakReport{Write: okWrite, Queries: map[string]*SoakQueries{"opentsdb": {}}, RSS: flat(1, 1, 1)}, "none completed"},
		{"measure query errors", SoakReport{Write: okWrite, Queries: okQueries, RSS: flat(1, 1, 1),
			MeasureQueries: map[string]*SoakQueries{"prom": {Queries: 5, Errors: 2}}}, "measure queries prom: 2 errors of 5"},
		{"behind the target", SoakReport{Write: &Report{PointsSent: 10, PointsAccepted: 10, PointsPerSec: 900}, Queries: okQueries,
			RSS: flat(1, 1, 1), TargetRate: 1000, Achieved: 0.9, MinAchieved: 0.95}, "900 points/s is 90.0 % of the target 1,000, under the 95 % required"},
		{"at the target", SoakReport{Write: &Report{PointsSent: 10, PointsAccepted: 10, PointsPerSec: 960}, Queries: okQueries,
			RSS: flat(1, 1, 1), TargetRate: 1000, Achieved: 0.96, MinAchieved: 0.95}, ""},
	}
	for _, c := range cases {
		c.r.MaxSlope, c.r.MaxSpread = 5, 0.2
		c.r.judge(0)
		got := strings.Join(c.r.Failures, "; ")
		if (c.want == "") != c.r.Passed() || !strings.Contains(got, c.want) {
			t.Errorf("%s: failures %q, want %q", c.name, got, c.want)
		}
	}
}

// fakeTSDB answers remote write and both query dialects; failQueries makes
// /api/query answer 500.
func fakeTSDB(t *testing.T, failQueries bool) (srv *httptest.Server, writes, promQ, otsdbQ *atomic.Int64) {
	writes, promQ, otsdbQ = new(atomic.Int64), new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/write":
			io.Copy(io.Discard, r.Body)
			writes.Add(1)
			w.WriteHeader(http.StatusNoContent)
		case "/api/v1/query_range":
			promQ.Add(1)
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"]]}]}}`)
		case "/metrics":
			fmt.Fprint(w, "# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes 1e+08\ngo_memstats_next_gc_bytes 2e+08\n"+
				"go_memstats_sys_bytes 3e+08\ngo_memstats_heap_released_bytes 5e+07\nhourglass_head_flush_queue_chunks 7\n"+
				"hourglass_store_block_cache_bytes 4e+07\nhourglass_store_memtable_bytes 2e+07\nhourglass_store_block_cache_capacity_bytes 2.68435456e+08\n")
		case "/api/query":
			otsdbQ.Add(1)
			if failQueries {
				http.Error(w, `{"error":{"code":500,"message":"no"}}`, 500)
				return
			}
			fmt.Fprint(w, `[{"metric":"m","tags":{},"aggregateTags":[],"dps":{"1":1}}]`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, writes, promQ, otsdbQ
}

func soakConfig(url string) SoakConfig {
	return SoakConfig{
		Write:  WriteConfig{Dialect: DialectRW1, URL: url, Workers: 2, BatchSize: 500, RequestTimeout: 5 * time.Second},
		Series: 120, Seed: 1, Measure: 300 * time.Millisecond, Fraction: 0.5,
		Duration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond, SampleEvery: 100 * time.Millisecond,
		QueryDialects: []string{QueryOpenTSDB, QueryProm}, QueryConcurrency: 1,
		QueryRange: time.Hour, QueryLongRange: 2 * time.Hour, QueryStep: 100 * time.Millisecond,
		MaxSlope: 1e9, MaxSpread: 1e9, // the test process's own memory is not what is judged here
		PID: os.Getpid(), MeasureQueries: true, MeasureWarmup: 200 * time.Millisecond,
	}
}

func TestSoakAgainstFake(t *testing.T) {
	srv, writes, promQ, otsdbQ := fakeTSDB(t, false)
	cfg := soakConfig(srv.URL)
	r, err := Soak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed() {
		t.Fatalf("failures: %v", r.Failures)
	}
	if r.Measure == nil || r.MaxRate <= 0 || math.Abs(r.TargetRate-0.5*r.MaxRate) > 1e-6 {
		t.Fatalf("measure %v: max %v, target %v, want half the max", r.Measure != nil, r.MaxRate, r.TargetRate)
	}
	// The measure: the soak's writer, live, 1 ms apart, with the queries.
	m := r.Measure
	if m.Workers != 2 || m.BatchSize != 500 || m.IntervalSec != 0.001 || m.LastTs > m.Started.Add(time.Second+cfg.Measure).UnixMilli() {
		t.Fatalf("measure: %d workers, batch %d, interval %v s, last point %d ms after its start", m.Workers, m.BatchSize, m.IntervalSec, m.LastTs-m.Started.UnixMilli())
	}
	if r.Write.FirstTs <= m.LastTs {
		t.Fatalf("the soak's first point %d is not after the measure's last %d", r.Write.FirstTs, m.LastTs)
	}
	if w := r.MeasureWarmup; w == nil || w.PointsAccepted == 0 || w.LastTs >= m.FirstTs {
		t.Fatalf("the measure's warm-up %+v: its points must come before the measure's (first %d)", w, m.FirstTs)
	}
	for _, d := range cfg.QueryDialects {
		if q := r.MeasureQueries[d]; q == nil || q.Queries == 0 || q.Errors != 0 {
			t.Fatalf("%s queries during the measure: %+v", d, q)
		}
	}
	// 120 series at the target rate: the interval that makes at least that rate.
	if want := int64(120 * 1000 / r.TargetRate); r.IntervalMs != max(1, want) {
		t.Fatalf("interval %d ms, want %d", r.IntervalMs, want)
	}
	w := r.Write
	if w.PointsSent == 0 || w.PointsAccepted != w.PointsSent || w.Stopped != "duration" {
		t.Fatalf("writes: %d sent, %d accepted, stopped by %s", w.PointsSent, w.PointsAccepted, w.Stopped)
	}
	// Live: no point stamped after the soak's end.
	if w.LastTs > w.Started.Add(cfg.Duration+time.Second).UnixMilli() {
		t.Fatalf("last timestamp %d is after the soak's end", w.LastTs)
	}
	if writes.Load() == 0 || promQ.Load() == 0 || otsdbQ.Load() == 0 {
		t.Fatalf("requests: %d writes, %d prom, %d opentsdb", writes.Load(), promQ.Load(), otsdbQ.Load())
	}
	for _, d := range cfg.QueryDialects {
		q := r.Queries[d]
		if q.Queries == 0 || q.Errors != 0 || q.Rounds == 0 || len(q.Kinds) != len(QueryKinds) {
			t.Fatalf("%s: %+v", d, q)
		}
	}
	// Samples every 100 ms over 1.5 s, the first at the start.
	if len(r.RSS) < 8 || r.RSS[0].Seconds > 0.1 || r.RSS[0].Bytes <= 0 || r.Fit.Samples >= len(r.RSS) {
		t.Fatalf("%d samples, first %+v, %d after the warm-up", len(r.RSS), r.RSS[0], r.Fit.Samples)
	}
	// The Go runtime's figures from /metrics, with each RSS sample.
	if p := r.Parts; p == nil || p.Samples != r.Fit.Samples || p.Parts["go_heap_inuse"].MedianMB != 100 ||
		p.Parts["go_heap_goal"].MedianMB != 200 || p.Parts["go_runtime_mapped"].MedianMB != 250 || r.RSS[len(r.RSS)-1].FlushQueue != 7 {
		t.Fatalf("memory parts %+v", r.Parts)
	}
	// The store's, when the server exports them: cache and memtables, and
	// the rest outside Go.
	last := r.RSS[len(r.RSS)-1]
	if p := r.Parts.Parts; p["store_cache_memtables"].MedianMB != 60 || last.StoreCapacity != 256<<20 ||
		p["outside_go_beyond_store"].Samples != r.Fit.Samples {
		t.Fatalf("store memory: parts %+v, last sample %+v", r.Parts, last)
	}
	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "PASS") || !strings.Contains(text.String(), "Go heap in use: 100.0 MB") {
		t.Fatalf("text report (%v):\n%s", err, text.String())
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back SoakReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Write.PointsSent != w.PointsSent || len(back.RSS) != len(r.RSS) {
		t.Fatalf("JSON round trip (%v): %+v", err, back.Write)
	}
}

func TestSoakFailsOnQueryErrors(t *testing.T) {
	srv, _, _, _ := fakeTSDB(t, true)
	cfg := soakConfig(srv.URL)
	cfg.Measure, cfg.Rate, cfg.Duration, cfg.Warmup = 0, 2000, 800*time.Millisecond, 0
	r, err := Soak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed() || r.Measure != nil || r.TargetRate != 2000 {
		t.Fatalf("passed %v, measure %v, target %v", r.Passed(), r.Measure != nil, r.TargetRate)
	}
	q := r.Queries[QueryOpenTSDB]
	if q.Errors == 0 || q.Errors != q.Queries || len(q.Messages) == 0 || !strings.Contains(q.Messages[0].Message, "500") {
		t.Fatalf("opentsdb queries: %+v", q)
	}
	if !strings.Contains(strings.Join(r.Failures, ";"), "queries opentsdb") || r.Queries[QueryProm].Errors != 0 {
		t.Fatalf("failures %v", r.Failures)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), "FAIL: queries opentsdb") {
		t.Fatalf("text report:\n%s", text.String())
	}
}

func TestSoakConfigChecked(t *testing.T) {
	base := soakConfig("http://127.0.0.1:1")
	for name, mut := range map[string]func(*SoakConfig){
		"no pid":           func(c *SoakConfig) { c.PID = 0 },
		"warm-up too long": func(c *SoakConfig) { c.Warmup = c.Duration },
		"no rate":          func(c *SoakConfig) { c.Measure, c.Rate = 0, 0 },
		"fraction":         func(c *SoakConfig) { c.Fraction = 1.5 },
		"no dialect":       func(c *SoakConfig) { c.QueryDialects = nil },
		"min achieved":     func(c *SoakConfig) { c.MinAchieved = 1.5 },
	} {
		c := base
		mut(&c)
		if _, err := Soak(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSoakStopsWhenServerGone(t *testing.T) {
	srv, _, _, _ := fakeTSDB(t, false)
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	cfg := soakConfig(srv.URL)
	cfg.Measure, cfg.Rate, cfg.Duration, cfg.PID = 0, 2000, 20*time.Second, cmd.Process.Pid
	t0 := time.Now()
	r, err := Soak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("the soak ran %v after its server was gone", d)
	}
	if r.Passed() || !strings.Contains(strings.Join(r.Failures, ";"), "sampling the server's memory") {
		t.Fatalf("failures %v", r.Failures)
	}
}

func TestParseGauges(t *testing.T) {
	page := "# HELP a x\n# TYPE a gauge\na 1.5\nb{l=\"x\"} 7\nb 2e+06\nab 9\n"
	v, ok := parseGauges(strings.NewReader(page), []string{"a", "b"})
	if !ok || v[0] != 1.5 || v[1] != 2e6 {
		t.Fatalf("%v %v, want [1.5 2e6] true (labelled series and prefixes ignored)", v, ok)
	}
	if _, ok := parseGauges(strings.NewReader(page), []string{"a", "c"}); ok {
		t.Fatal("a missing series reported found")
	}
	if _, ok := parseGauges(strings.NewReader("a x\n"), []string{"a"}); ok {
		t.Fatal("a bad value accepted")
	}
	if v, seen, err := scanGauges(strings.NewReader(page), []string{"c", "b", "a"}); err != nil || seen != 0b110 || v[1] != 2e6 {
		t.Fatalf("scanGauges: %v %b %v, want b and a found (mask 110)", v, seen, err)
	}
}

func TestFitMemoryParts(t *testing.T) {
	var s []RSSSample
	for i := range 10 {
		// RSS grows 10 MB/min, all of it outside Go; the Go heap is flat.
		s = append(s, RSSSample{Seconds: float64(60 * i), Bytes: int64(500e6 + 10e6*float64(i)),
			GoHeapInuse: 100e6, GoNextGC: 200e6, GoMapped: 300e6})
	}
	s = append(s, RSSSample{Seconds: 601, Bytes: 1}) // no Go figures: left out
	p := FitMemoryParts(s, 2*time.Minute)
	if p == nil || p.Samples != 8 || math.Abs(p.Parts["outside_go"].SlopeMBPerMin-10) > 1e-6 || p.Parts["go_heap_inuse"].SlopeMBPerMin != 0 {
		t.Fatalf("parts %+v", p)
	}
	if _, ok := p.Parts["store_cache_memtables"]; ok {
		t.Fatal("store parts fitted from samples without the store's figures")
	}
	for i := range s[:10] {
		s[i].StoreBlockCache, s[i].StoreMemTables, s[i].StoreCapacity = 100e6+5e6*int64(i), 50e6, 256<<20
	}
	p = FitMemoryParts(s, 2*time.Minute)
	if st, rest := p.Parts["store_cache_memtables"], p.Parts["outside_go_beyond_store"]; math.Abs(st.SlopeMBPerMin-5) > 1e-6 || math.Abs(rest.SlopeMBPerMin-5) > 1e-6 || st.Samples != 8 {
		t.Fatalf("store parts: %+v and %+v, want 5 MB/min each", st, rest)
	}
	if FitMemoryParts([]RSSSample{{Seconds: 200, Bytes: 1}}, 0) != nil {
		t.Fatal("parts fitted from samples without the Go figures")
	}
}

// TestMeasureQueryConfig: the measure's query mix, over data 1 ms apart,
// is the soak's scaled to 5,000 steps of the short range: the soak's
// defaults (5m, 30s, 10m) become 5s, 500ms and 10s, and the long query
// over 10s gets a step of its own, not one truncated to nothing.
func TestMeasureQueryConfig(t *testing.T) {
	cfg := SoakConfig{QueryRange: 5 * time.Minute, QueryStep: 30 * time.Second, QueryLongRange: 10 * time.Minute}
	q := measureQueryConfig(cfg)
	if q.QueryRange != 5*time.Second || q.QueryStep != 500*time.Millisecond || q.QueryLongRange != 10*time.Second {
		t.Fatalf("range %v, step %v, long range %v", q.QueryRange, q.QueryStep, q.QueryLongRange)
	}
	g, err := NewGenerator(GenConfig{Seed: 1, Series: 120, Interval: measureInterval, Start: time.UnixMilli(1_700_000_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	qc := QueryConfig{End: 1_700_000_003_000, Range: q.QueryRange, LongRange: q.QueryLongRange, Step: q.QueryStep}
	long, err := MakeQuery(g, &qc, KindLong, 0)
	if err != nil {
		t.Fatal(err)
	}
	if q.endAhead() != 500 {
		t.Fatalf("the measure's queries end %d ms past the newest point, want a step, 500", q.endAhead())
	}
	if long.Step != 416*time.Millisecond || long.End > qc.End || long.End <= qc.End-long.Step.Milliseconds() || long.Start != long.End-10_000 {
		t.Fatalf("long query %+v", long)
	}
}

// TestSoakMeasureQueriesEndAtTheData: the measure's data, flat out at 1 ms
// apart against a server slower than the clock, runs behind the clock, and
// the queries of the measure end at the newest point written (a step past
// it), not at the clock; the measure's data continues the warm-up's.
func TestSoakMeasureQueriesEndAtTheData(t *testing.T) {
	type seen struct {
		at  time.Time
		end int64
	}
	var mu sync.Mutex
	var ends []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/write":
			io.Copy(io.Discard, r.Body)
			time.Sleep(20 * time.Millisecond) // 500 points in 20 ms a worker: behind the clock's 120 a ms
			w.WriteHeader(http.StatusNoContent)
		case "/api/v1/query_range":
			end, err := strconv.ParseFloat(r.FormValue("end"), 64)
			if err != nil {
				t.Errorf("end %q: %v", r.FormValue("end"), err)
			}
			mu.Lock()
			ends = append(ends, seen{time.Now(), int64(math.Round(end * 1000))})
			mu.Unlock()
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		case "/api/query":
			fmt.Fprint(w, `[]`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := soakConfig(srv.URL)
	cfg.QueryDialects = []string{QueryProm}
	cfg.QueryLongRange = 2 * time.Minute // scaled: steps of 83 ms and 6 ms, under the ~300 ms the data falls behind
	ahead := measureQueryConfig(cfg).endAhead()
	r, err := Soak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, w := r.Measure, r.MeasureWarmup
	// A warm-up that sent nothing (its 200 ms spent before the first
	// request on a loaded machine) leaves nothing to continue.
	if m == nil || w == nil || w.PointsSent > 0 && m.FirstTs != w.LastTs+1 {
		t.Fatalf("the measure's data does not continue the warm-up's: %+v, %+v", w, m)
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	measureEnd := m.Started.Add(time.Duration(m.Seconds * float64(time.Second)))
	for _, s := range ends {
		if s.at.After(measureEnd) {
			continue // perhaps the soak's, whose queries start before its writes
		}
		n++
		if s.end > m.LastTs+ahead {
			t.Fatalf("a query of the measure ends at %d, more than %d ms after the newest point written, %d (%d ms behind the clock at the end)",
				s.end, ahead, m.LastTs, measureEnd.UnixMilli()-m.LastTs)
		}
	}
	if n == 0 {
		t.Fatal("no query during the measure")
	}
}

// TestWarmupEnd: with a cache warm-up, the memory verdict starts when the
// store's block cache is full. A server whose RSS rises only while the
// cache fills, then is level, passes; one whose RSS keeps rising after the
// cache is full still fails, as does one whose cache never fills and whose
// RSS rises past the cap. Without the store's figures, or without a cache
// warm-up, the warm-up is the fixed one.
func TestWarmupEnd(t *testing.T) {
	const capacity = 256 << 20
	// One sample every 30 s over 14 minutes: the cache fills linearly until
	// fullAt (never if negative), RSS follows it by the same bytes plus
	// afterMB MB/min once it is full.
	series := func(fullAt float64, afterMB float64) []RSSSample {
		var s []RSSSample
		for i := 0; i <= 28; i++ {
			sec := float64(30 * i)
			fill := 1.0
			if fullAt < 0 || sec < fullAt {
				frac := sec / 600 // would be full at 10 min
				if fullAt > 0 {
					frac = sec / fullAt
				}
				fill = 0.95 * frac
			}
			cache := int64(fill*capacity) - 64<<20
			rss := 300e6 + float64(cache+64<<20)
			if fullAt >= 0 && sec > fullAt {
				rss += afterMB * 1e6 * (sec - fullAt) / 60
			}
			s = append(s, RSSSample{Seconds: sec, Bytes: int64(rss), StoreBlockCache: max(cache, 0), StoreMemTables: 64 << 20, StoreCapacity: capacity})
		}
		return s
	}
	okWrite := &Report{PointsSent: 10, PointsAccepted: 10}
	okQueries := map[string]*SoakQueries{"prom": {Queries: 5}}
	judge := func(s []RSSSample, warmup, cacheMax time.Duration) (*SoakReport, time.Duration, string) {
		r := &SoakReport{Write: okWrite, Queries: okQueries, RSS: s, MaxSlope: 5, MaxSpread: 0.2}
		w, why := WarmupEnd(s, warmup, cacheMax)
		r.judge(w)
		return r, w, why
	}
	// Full at 5 min: the warm-up ends there, and the level RSS after passes.
	r, w, why := judge(series(300, 0), 2*time.Minute, 6*time.Minute)
	if w != 5*time.Minute || !strings.Contains(why, "block cache full") || !r.Passed() {
		t.Fatalf("cache full at 300 s: warm-up %v (%s), failures %v", w, why, r.Failures)
	}
	// The same judged from 2 min fails: the cache's fill is growth.
	if r, _, _ := judge(series(300, 0), 2*time.Minute, 0); r.Passed() {
		t.Fatalf("the cache's fill judged as flat: %+v", r.Fit)
	}
	// Growth after the cache is full still fails.
	r, w, _ = judge(series(180, 10), 2*time.Minute, 6*time.Minute)
	if w != 3*time.Minute || r.Passed() || !strings.Contains(strings.Join(r.Failures, ";"), "RSS grows") {
		t.Fatalf("growth of 10 MB/min after the cache is full at 180 s: warm-up %v, failures %v", w, r.Failures)
	}
	// Full before the fixed warm-up: the fixed warm-up.
	if _, w, _ := judge(series(60, 0), 2*time.Minute, 6*time.Minute); w != 2*time.Minute {
		t.Fatalf("cache full at 60 s: warm-up %v, want the fixed 2m", w)
	}
	// Never full: the warm-up ends at the cap, and the rise after fails.
	r, w, why = judge(series(-1, 0), 2*time.Minute, 6*time.Minute)
	if w != 6*time.Minute || !strings.Contains(why, "not full") || r.Passed() {
		t.Fatalf("cache never full: warm-up %v (%s), failures %v", w, why, r.Failures)
	}
	// No store figures, or no cache warm-up: the fixed warm-up.
	bare := series(300, 0)
	for i := range bare {
		bare[i].StoreCapacity = 0
	}
	if _, w, why := judge(bare, 2*time.Minute, 6*time.Minute); w != 2*time.Minute || !strings.Contains(why, "no block cache figures") {
		t.Fatalf("no store figures: warm-up %v (%s)", w, why)
	}
	if w, why := WarmupEnd(series(300, 0), 2*time.Minute, 0); w != 2*time.Minute || why != "fixed" {
		t.Fatalf("no cache warm-up: %v (%s)", w, why)
	}
}

// TestWarmupRanges: with RangesWarmup the memory verdict starts once the
// longest query range has passed (a range of the soak's data alone), later
// than the fixed warm-up and the cache's; growth after it still fails, and
// a soak not longer than that range is refused.
func TestWarmupRanges(t *testing.T) {
	// One sample every 30 s over 20 minutes, the cache full from the start:
	// RSS rises by riseMB MB/min for the first 10 minutes, then by afterMB.
	series := func(riseMB, afterMB float64) []RSSSample {
		var s []RSSSample
		for i := 0; i <= 40; i++ {
			sec := float64(30 * i)
			rss := 500e6 + riseMB*1e6*min(sec, 600)/60 + afterMB*1e6*max(sec-600, 0)/60
			s = append(s, RSSSample{Seconds: sec, Bytes: int64(rss), StoreBlockCache: 200 << 20, StoreMemTables: 50 << 20, StoreCapacity: 256 << 20})
		}
		return s
	}
	cfg := SoakConfig{Warmup: 2 * time.Minute, CacheWarmupMax: 6 * time.Minute, QueryRange: 5 * time.Minute,
		QueryLongRange: 10 * time.Minute, RangesWarmup: true}
	judge := func(c SoakConfig, s []RSSSample) (*SoakReport, time.Duration, string) {
		r := &SoakReport{Write: &Report{PointsSent: 10, PointsAccepted: 10}, Queries: map[string]*SoakQueries{"prom": {Queries: 5}},
			RSS: s, MaxSlope: 5, MaxSpread: 0.2}
		w, why := c.warmupEnd(s)
		r.judge(w)
		return r, w, why
	}
	r, w, why := judge(cfg, series(20, 0))
	if w != 10*time.Minute || !strings.Contains(why, "longest query range") || !r.Passed() {
		t.Fatalf("rise while the ranges fill: warm-up %v (%s), failures %v", w, why, r.Failures)
	}
	if r, _, _ := judge(cfg, series(20, 10)); r.Passed() {
		t.Fatalf("growth of 10 MB/min after the ranges are full judged flat: %+v", r.Fit)
	}
	off := cfg
	off.RangesWarmup = false
	if r, w, _ := judge(off, series(20, 0)); w != 2*time.Minute || r.Passed() {
		t.Fatalf("without RangesWarmup: warm-up %v, passed %v", w, r.Passed())
	}
	short := SoakConfig{PID: 1, Series: 1, Duration: 10 * time.Minute, SampleEvery: time.Second, Warmup: time.Minute, Rate: 1,
		QueryConcurrency: 1, QueryDialects: []string{"prom"}, QueryRange: 5 * time.Minute, QueryLongRange: 10 * time.Minute, RangesWarmup: true}
	if err := short.check(); err == nil || !strings.Contains(err.Error(), "query ranges") {
		t.Fatalf("a soak as long as its longest range: %v", err)
	}
	short.Duration = 11 * time.Minute
	if err := short.check(); err != nil {
		t.Fatalf("a soak longer than its longest range: %v", err)
	}
}
