package query_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"

	"hourglass/internal/dbtest"
	"hourglass/query"
	"hourglass/series"
	"hourglass/store/pebble"
)

// histDB is an engine over a Pebble store in dir, which a test can close,
// crash and open again.
type histDB struct {
	t   *testing.T
	dir string
	st  *pebble.Store
	db  *series.DB
	eng *query.Engine
}

func openHistDB(t *testing.T, dir string) *histDB {
	t.Helper()
	e := dbtest.Open(t, dir, nil, nil)
	return &histDB{t: t, dir: dir, st: e.Pebble, db: e.DB, eng: query.NewEngine(e.DB.Head, e.Index, e.Store, e.Layout, query.Limits{})}
}

func (d *histDB) close() {
	if err := d.db.Close(); err != nil {
		d.t.Fatal(err)
	}
	d.st.Close()
}

func (d *histDB) crash() {
	if err := d.db.Abandon(); err != nil {
		d.t.Fatal(err)
	}
	d.st.Close()
}

// histSeries is one series of the reference data: its labels and samples.
type histSeries struct {
	lbls    labels.Labels
	samples []series.HistSample
}

// histData generates 90 minutes of native histograms every 15 s from base
// (two rows): latency counters of two instances (integer, schema 3, with a
// counter reset in one), a float gauge histogram and a custom-bucket
// counter.
func histData() []histSeries {
	rng := rand.New(rand.NewPCG(16, 16))
	var out []histSeries
	mk := func(lbls labels.Labels, gen func(i int) (*histogram.Histogram, *histogram.FloatHistogram)) {
		var tags []series.Tag
		metric := ""
		lbls.Range(func(l labels.Label) {
			if l.Name == "__name__" {
				metric = l.Value
			} else {
				tags = append(tags, series.Tag{Key: l.Name, Value: l.Value})
			}
		})
		hs := histSeries{lbls: lbls}
		for i := range 360 {
			h, fh := gen(i)
			hs.samples = append(hs.samples, series.HistSample{Labels: series.MakeLabels(metric, tags), T: base + int64(i)*15000, H: h, FH: fh})
		}
		out = append(out, hs)
	}
	for inst, reset := range map[string]int{"a": -1, "b": 200} {
		buckets := map[int]int64{}
		var count, zero int64
		var sum float64
		mk(labels.FromStrings("__name__", "lat_seconds", "job", "api", "instance", inst), func(i int) (*histogram.Histogram, *histogram.FloatHistogram) {
			if i == reset {
				clear(buckets)
				count, zero, sum = 0, 0, 0
			}
			for range 20 + rng.IntN(40) {
				v := math.Exp(math.Log(0.05) + rng.NormFloat64())
				count++
				sum += v
				if v < 0.001 {
					zero++
					continue
				}
				buckets[int(math.Ceil(math.Log2(v)*8))]++
			}
			return nativeOf(3, buckets, count, zero, sum), nil
		})
	}
	mk(labels.FromStrings("__name__", "queue_size", "job", "db"), func(i int) (*histogram.Histogram, *histogram.FloatHistogram) {
		return nil, &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Schema: 0, Count: float64(10 + i%7), Sum: 3.5 * float64(i%11),
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []float64{float64(4 + i%3), float64(6 + i%7 - i%3)}}
	})
	var cc [4]int64
	var csum float64
	mk(labels.FromStrings("__name__", "req_size_bytes", "job", "api"), func(i int) (*histogram.Histogram, *histogram.FloatHistogram) {
		for range 10 {
			k := rng.IntN(4)
			cc[k]++
			csum += float64(100 * (k + 1))
		}
		h := &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: uint64(cc[0] + cc[1] + cc[2] + cc[3]), Sum: csum,
			CustomValues: []float64{100, 200, 300}, PositiveSpans: []histogram.Span{{Offset: 0, Length: 4}},
			PositiveBuckets: []int64{cc[0], cc[1] - cc[0], cc[2] - cc[1], cc[3] - cc[2]}}
		return h, nil
	})
	return out
}

// nativeOf builds an integer histogram from absolute bucket counts.
func nativeOf(schema int32, buckets map[int]int64, count, zero int64, sum float64) *histogram.Histogram {
	h := &histogram.Histogram{Schema: schema, ZeroThreshold: 0.001, Count: uint64(count), ZeroCount: uint64(zero), Sum: sum}
	lo, hi := math.MaxInt, math.MinInt
	for k := range buckets {
		lo, hi = min(lo, k), max(hi, k)
	}
	if lo > hi {
		return h
	}
	// One span over every index from lo to hi: empty buckets included.
	h.PositiveSpans = []histogram.Span{{Offset: int32(lo), Length: uint32(hi - lo + 1)}}
	var prev int64
	for k := lo; k <= hi; k++ {
		h.PositiveBuckets = append(h.PositiveBuckets, buckets[k]-prev)
		prev = buckets[k]
	}
	return h
}

func appendHist(t *testing.T, db *histDB, samples []series.HistSample) {
	t.Helper()
	errs := make([]error, len(samples))
	if err := db.db.Head.AppendHistograms(context.Background(), samples, errs, &series.Request{}); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

var histQueries = []string{
	`lat_seconds`,
	`histogram_quantile(0.9, rate(lat_seconds[5m]))`,
	`histogram_quantile(0.5, sum by (job) (rate(lat_seconds[5m])))`,
	`histogram_count(rate(lat_seconds[5m]))`,
	`histogram_sum(increase(lat_seconds[10m]))`,
	`histogram_fraction(0, 0.1, rate(lat_seconds[5m]))`,
	`histogram_avg(rate(lat_seconds[5m]))`,
	`sum(rate(lat_seconds[5m]))`,
	`increase(lat_seconds[10m])`,
	`histogram_quantile(0.99, queue_size)`,
	`histogram_count(queue_size)`,
	`histogram_quantile(0.5, rate(req_size_bytes[5m]))`,
	`histogram_fraction(0, 200, increase(req_size_bytes[10m]))`,
}

// runRange runs every query over the 90 minutes, every minute, and returns
// the results as text.
func runRange(t *testing.T, qy storage.Queryable) []string {
	t.Helper()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	var out []string
	for _, expr := range histQueries {
		q, err := eng.NewRangeQuery(context.Background(), qy, nil, expr, time.UnixMilli(base), time.UnixMilli(base+90*60_000), time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s: %v", expr, res.Err)
		}
		out = append(out, expr+"\n"+res.Value.String())
		q.Close()
	}
	return out
}

func compareResults(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			g, w := got[i], want[i]
			if len(g) > 1500 {
				g = g[:1500] + "…"
			}
			if len(w) > 1500 {
				w = w[:1500] + "…"
			}
			t.Errorf("%s: %s\n--- hourglass\n%s\n--- prometheus\n%s", what, histQueries[i], g, w)
		}
	}
}

// TestHistogramsMatchPrometheus feeds the same native histograms to
// hourglass (half of them flushed to the store, half in the head) and to
// Prometheus' own TSDB (teststorage), and runs the histogram functions
// through Prometheus' PromQL engine over both: the results must be equal,
// text for text, before and after a restart and a crash.
func TestHistogramsMatchPrometheus(t *testing.T) {
	data := histData()
	ref := teststorage.New(t)
	app := ref.Appender(context.Background())
	for _, s := range data {
		for _, smp := range s.samples {
			if _, err := app.AppendHistogram(0, s.lbls, smp.T, smp.H, smp.FH); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	want := runRange(t, ref)
	for _, w := range want[:3] {
		if len(w) < 200 {
			t.Fatalf("the reference answers next to nothing: %s", w)
		}
	}

	dir := t.TempDir()
	db := openHistDB(t, dir)
	for _, s := range data {
		appendHist(t, db, s.samples[:200])
	}
	if err := db.db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range data {
		appendHist(t, db, s.samples[200:])
	}
	compareResults(t, "head and store", runRange(t, db.eng.Queryable(query.PromLimits{})), want)

	db.close()
	db = openHistDB(t, dir)
	compareResults(t, "after a restart", runRange(t, db.eng.Queryable(query.PromLimits{})), want)

	// Samples appended again after the restart, then a crash: the WAL
	// replays them over what the store holds.
	for _, s := range data {
		appendHist(t, db, s.samples[300:])
	}
	db.crash()
	db = openHistDB(t, dir)
	compareResults(t, "after a crash", runRange(t, db.eng.Queryable(query.PromLimits{})), want)
	db.close()
}
