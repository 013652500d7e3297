package e2e

import (
	"context"
	"math"
	"math/rand/v2"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/golang/snappy"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/util/teststorage"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// Native histograms through the real binary (issue 16): Prometheus' own
// remote-write queue manager sends integer and float histograms with the
// 2.0 message; the histogram functions over /api/v1/query must answer what
// Prometheus' engine answers over its own TSDB fed the same samples, after
// a kill -9 and after a clean restart.

type histE2ESeries struct {
	lbls labels.Labels
	ints []record.RefHistogramSample
	flts []record.RefFloatHistogramSample
}

func histE2EData(base int64) []histE2ESeries {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []histE2ESeries
	for i, inst := range []string{"a", "b"} {
		s := histE2ESeries{lbls: labels.FromStrings("__name__", "e2e_lat_seconds", "instance", inst)}
		counts := map[int]int64{}
		var count int64
		var sum float64
		for k := range 240 {
			for range 10 + rng.IntN(30) {
				v := math.Exp(math.Log(0.02*float64(i+1)) + rng.NormFloat64())
				counts[int(math.Ceil(math.Log2(v)*4))]++
				count++
				sum += v
			}
			h := &histogram.Histogram{Schema: 2, ZeroThreshold: 1e-128, Count: uint64(count), Sum: sum}
			lo, hi := math.MaxInt, math.MinInt
			for b := range counts {
				lo, hi = min(lo, b), max(hi, b)
			}
			h.PositiveSpans = []histogram.Span{{Offset: int32(lo), Length: uint32(hi - lo + 1)}}
			var prev int64
			for b := lo; b <= hi; b++ {
				h.PositiveBuckets = append(h.PositiveBuckets, counts[b]-prev)
				prev = counts[b]
			}
			s.ints = append(s.ints, record.RefHistogramSample{Ref: chunks.HeadSeriesRef(i + 1), T: base + int64(k)*15000, H: h})
		}
		out = append(out, s)
	}
	g := histE2ESeries{lbls: labels.FromStrings("__name__", "e2e_queue", "job", "x")}
	for k := range 240 {
		g.flts = append(g.flts, record.RefFloatHistogramSample{Ref: 3, T: base + int64(k)*15000, FH: &histogram.FloatHistogram{
			CounterResetHint: histogram.GaugeType, Count: float64(5 + k%4), Sum: 2.5 * float64(k%9),
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{float64(2 + k%2), float64(3 + k%4 - k%2)}}})
	}
	return append(out, g)
}

// histSendWithPrometheus has Prometheus' queue manager send the data with
// send_native_histograms and checks its counters: all sent, none failed.
func histSendWithPrometheus(t *testing.T, s *server, data []histE2ESeries) {
	t.Helper()
	q := newPromQueue(t, s, remoteapi.WriteV2MessageType, func(rwc *config.RemoteWriteConfig) { rwc.SendNativeHistograms = true })
	defer q.close()
	var refs []record.RefSeries
	want := 0
	for i, d := range data {
		refs = append(refs, record.RefSeries{Ref: chunks.HeadSeriesRef(i + 1), Labels: d.lbls})
		want += len(d.ints) + len(d.flts)
	}
	q.log(q.enc.Series(refs, nil))
	for _, d := range data {
		for i := 0; i < len(d.ints); i += 20 {
			b, _ := q.enc.HistogramSamples(d.ints[i:min(i+20, len(d.ints))], nil)
			q.log(b)
		}
		for i := 0; i < len(d.flts); i += 20 {
			b, _ := q.enc.FloatHistogramSamples(d.flts[i:min(i+20, len(d.flts))], nil)
			q.log(b)
		}
	}
	q.waitSent("histograms", want)
}

var histE2EQueries = []string{
	`histogram_count(e2e_lat_seconds)`,
	`histogram_sum(e2e_lat_seconds)`,
	`histogram_quantile(0.9, rate(e2e_lat_seconds[5m]))`,
	`histogram_quantile(0.5, sum(rate(e2e_lat_seconds[5m])))`,
	`histogram_fraction(0, 0.05, rate(e2e_lat_seconds[5m]))`,
	`histogram_avg(increase(e2e_lat_seconds[10m]))`,
	`histogram_quantile(0.75, e2e_queue)`,
}

// histExpected runs the queries in Prometheus' engine over its own TSDB
// holding data, at each of the times, as the API formats them.
func histExpected(t *testing.T, data []histE2ESeries, times []int64) []map[string]string {
	ref := teststorage.New(t)
	app := ref.Appender(context.Background())
	for _, d := range data {
		for _, h := range d.ints {
			if _, err := app.AppendHistogram(0, d.lbls, h.T, h.H, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range d.flts {
			if _, err := app.AppendHistogram(0, d.lbls, h.T, nil, h.FH); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	var out []map[string]string
	for _, q := range histE2EQueries {
		for _, ts := range times {
			qy, err := eng.NewInstantQuery(context.Background(), ref, nil, q, time.UnixMilli(ts))
			if err != nil {
				t.Fatal(err)
			}
			res := qy.Exec(context.Background())
			v, err := res.Vector()
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			m := map[string]string{}
			for _, s := range v {
				m[s.Metric.String()] = strconv.FormatFloat(s.F, 'f', -1, 64)
			}
			out = append(out, m)
			qy.Close()
		}
	}
	return out
}

func histCheck(t *testing.T, s *server, what string, times []int64, want []map[string]string) {
	t.Helper()
	i := 0
	for _, q := range histE2EQueries {
		for _, ts := range times {
			got := promInstant(t, s, "GET", q, ts)
			if len(want[i]) == 0 {
				t.Fatalf("the reference answers nothing to %s at %d", q, ts)
			}
			for k, v := range want[i] {
				if got[k] != v {
					t.Errorf("%s: %s at %d: %s = %q, want %q", what, q, ts, k, got[k], v)
				}
			}
			if len(got) != len(want[i]) {
				t.Errorf("%s: %s at %d: %d series, want %d", what, q, ts, len(got), len(want[i]))
			}
			i++
		}
	}
}

func TestPromNativeHistogramsEndToEnd(t *testing.T) {
	// In the future: the queue manager sends only samples newer than its start.
	base := time.Now().Add(time.Hour).Truncate(time.Hour).UnixMilli()
	data := histE2EData(base)
	times := []int64{base + 20*60_000, base + 45*60_000, base + 59*60_000 + 45_000}
	want := histExpected(t, data, times)

	s := start(t, t.TempDir())
	histSendWithPrometheus(t, s, data)
	histCheck(t, s, "as written", times, want)
	s.kill() // kill -9: the histograms are in the WAL only
	s.restart()
	histCheck(t, s, "after kill -9", times, want)
	s.stop()
	s.restart()
	histCheck(t, s, "after a restart", times, want)
}

// TestPromHistogramsExemplarsPlainV2 sends one plain 2.0 request carrying
// native histograms and exemplars with Prometheus' write client: 204 with
// every sample, histogram and exemplar counted as written; the exemplars
// are served by /api/v1/query_exemplars after a kill -9 and a restart.
func TestPromHistogramsExemplarsPlainV2(t *testing.T) {
	s := start(t, t.TempDir())
	u, _ := url.Parse(s.url + "/api/v1/write")
	c, err := remote.NewWriteClient("hourglass", &remote.ClientConfig{URL: &config_util.URL{URL: u},
		Timeout: model.Duration(30 * time.Second), HTTPClientConfig: config_util.DefaultHTTPClientConfig, WriteProtoMsg: remoteapi.WriteV2MessageType})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	h := &histogram.Histogram{Schema: 1, Count: 7, Sum: 3.5, PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 2, 0}}
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "e2e_req_seconds", "job", "api"), nil),
			Histograms: []writev2.Histogram{writev2.FromIntHistogram(0, now, h), writev2.FromIntHistogram(0, now+15000, h)},
			Exemplars:  []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "t1"), nil), Value: 0.25, Timestamp: now}}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "e2e_req_total", "job", "api"), nil),
			Samples:   []writev2.Sample{{Value: 7, Timestamp: now}},
			Exemplars: []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "t2", "span_id", "s2"), nil), Value: 7, Timestamp: now}}},
	}}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	stats, err := c.Store(context.Background(), snappy.Encode(nil, b), 0)
	if err != nil || !stats.Confirmed || stats.Samples != 1 || stats.Histograms != 2 || stats.Exemplars != 2 {
		t.Fatalf("Store: %v, stats %+v; want 204 with 1 sample, 2 histograms, 2 exemplars written", err, stats)
	}
	want := `[{"seriesLabels":{"__name__":"e2e_req_seconds","job":"api"},"exemplars":[{"labels":{"trace_id":"t1"},"value":"0.25","timestamp":` +
		promSeconds(now) + `}]},{"seriesLabels":{"__name__":"e2e_req_total","job":"api"},"exemplars":[{"labels":{"span_id":"s2","trace_id":"t2"},"value":"7","timestamp":` +
		promSeconds(now) + `}]}]`
	check := func(what string) {
		t.Helper()
		code, env := promAPI(t, s, "GET", "/api/v1/query_exemplars", url.Values{"query": {`{job="api"}`},
			"start": {promSeconds(now - 60000)}, "end": {promSeconds(now + 60000)}})
		if code != 200 || string(env["data"]) != want {
			t.Fatalf("%s: query_exemplars %d %s\nwant %s", what, code, env["data"], want)
		}
		if got := promInstant(t, s, "GET", `histogram_count(e2e_req_seconds)`, now+15000); got[`{job="api"}`] != "7" {
			t.Fatalf("%s: histogram_count %v", what, got)
		}
	}
	check("as written")
	s.kill()
	s.restart()
	check("after kill -9")
	s.stop()
	s.restart()
	check("after a restart")
}
