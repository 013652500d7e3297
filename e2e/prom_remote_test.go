package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/record"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// These tests send data to the real binary with Prometheus' own remote-write
// pipeline: samples go into a Prometheus WAL, the remote-write queue manager
// (storage/remote, what Prometheus runs for each remote_write section) tails
// it and sends them with its sharding, batching, retries and, for 2.0, its
// check of the X-Prometheus-Remote-Write-*-Written headers. They are read
// back with Prometheus' remote-read client (both response types) and over
// the PromQL HTTP API, and compared with what was sent.

// promSeries is a series the tests send, with its samples.
type promSeries struct {
	lbls    labels.Labels
	samples []record.RefSample
}

// promDataset is what the tests send: counters, a classic histogram, a
// gauge that goes stale, special values, and awkward names.
type promDataset struct {
	base   int64 // ms; every timestamp is base + k*15s
	series []promSeries
}

func (d *promDataset) add(ls labels.Labels, vals ...float64) {
	s := promSeries{lbls: ls}
	for i, v := range vals {
		s.samples = append(s.samples, record.RefSample{Ref: chunks.HeadSeriesRef(len(d.series) + 1), T: d.base + int64(i)*15000, V: v})
	}
	d.series = append(d.series, s)
}

func (d *promDataset) samples() int {
	n := 0
	for _, s := range d.series {
		n += len(s.samples)
	}
	return n
}

// newPromDataset: samples every 15 s from base for 300 s (21 samples).
func newPromDataset(base int64) *promDataset {
	d := &promDataset{base: base}
	ramp := func(perSecond float64) []float64 {
		out := make([]float64, 21)
		for i := range out {
			out[i] = perSecond * float64(i*15)
		}
		return out
	}
	// Counters: a grows 1/s, b 2/s, c 3/s.
	d.add(labels.FromStrings("__name__", "e2e_http_requests_total", "job", "api", "instance", "a"), ramp(1)...)
	d.add(labels.FromStrings("__name__", "e2e_http_requests_total", "job", "api", "instance", "b"), ramp(2)...)
	d.add(labels.FromStrings("__name__", "e2e_http_requests_total", "job", "db", "instance", "c"), ramp(3)...)
	// A classic histogram: per second, 1 observation ≤ 0.1, 2 in (0.1, 0.5],
	// 1 in (0.5, 1], none above.
	for _, b := range []struct {
		le   string
		rate float64
	}{{"0.1", 1}, {"0.5", 3}, {"1", 4}, {"+Inf", 4}} {
		d.add(labels.FromStrings("__name__", "e2e_latency_seconds_bucket", "job", "api", "le", b.le), ramp(b.rate)...)
	}
	// A gauge that goes stale after its fourth sample, with awkward labels.
	d.add(labels.FromStrings("__name__", "e2e.temp celsius", "room", "x y\nz", "site.name", "日本 ✓"),
		20, 21, 22, math.Float64frombits(value.StaleNaN))
	// Special values. (Not -0: Prometheus' sender does not write a zero
	// double, so -0 arrives as 0; api/ tests -0 with a hand-built request.)
	d.add(labels.FromStrings("__name__", "e2e_special"), math.NaN(), math.Inf(1), math.Inf(-1), 5e-324, 1e-300, math.MaxFloat64)
	return d
}

// promSendWithPrometheus writes d into a Prometheus WAL and lets Prometheus'
// remote-write queue manager send it to url with the given message, then
// checks the queue manager's own counters: every sample sent, none failed.
func promSendWithPrometheus(t *testing.T, s *server, d *promDataset, msg remoteapi.WriteMessageType) {
	t.Helper()
	q := newPromQueue(t, s, msg, func(rwc *config.RemoteWriteConfig) { rwc.QueueConfig.MaxShards = 4 })
	defer q.close()
	var refs []record.RefSeries
	var samples []record.RefSample
	for i, ps := range d.series {
		refs = append(refs, record.RefSeries{Ref: chunks.HeadSeriesRef(i + 1), Labels: ps.lbls})
		samples = append(samples, ps.samples...)
	}
	q.log(q.enc.Series(refs, nil))
	// Samples in time order across series, as a scrape loop logs them.
	slices.SortStableFunc(samples, func(a, b record.RefSample) int { return int(a.T - b.T) })
	for i := 0; i < len(samples); i += 20 {
		q.log(q.enc.Samples(samples[i:min(i+20, len(samples))], nil))
	}
	q.waitSent("samples", d.samples())
}

// promRecordingTransport notes the Content-Type of every response.
type promRecordingTransport struct {
	mu    sync.Mutex
	types []string
	rt    http.RoundTripper
}

func (r *promRecordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.types = append(r.types, resp.Header.Get("Content-Type"))
		r.mu.Unlock()
	}
	return resp, err
}

// promRemoteRead reads with Prometheus' remote-read client accepting only rt,
// and returns series → samples, values as bits.
func promRemoteRead(t *testing.T, s *server, rt prompb.ReadRequest_ResponseType, start, end int64, ms ...*labels.Matcher) map[string][][2]uint64 {
	t.Helper()
	u, _ := url.Parse(s.url + "/api/v1/read")
	c, err := remote.NewReadClient("hourglass", &remote.ClientConfig{
		URL: &config_util.URL{URL: u}, Timeout: model.Duration(30 * time.Second),
		HTTPClientConfig: config_util.DefaultHTTPClientConfig, ChunkedReadLimit: config.DefaultChunkedReadLimit,
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &promRecordingTransport{}
	cl := c.(*remote.Client)
	rec.rt, cl.Client.Transport = cl.Client.Transport, rec
	q, err := remote.ToQuery(start, end, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.Read(context.Background(), q, true)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]uint64{}
	for ss.Next() {
		se := ss.At()
		it := se.Iterator(nil)
		var got [][2]uint64
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			got = append(got, [2]uint64{uint64(ts), math.Float64bits(v)})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out[se.Labels().String()] = got
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	wantCT := "application/x-protobuf"
	if rt == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		wantCT = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
	}
	if len(rec.types) != 1 || rec.types[0] != wantCT {
		t.Fatalf("answered as %q, want %q", rec.types, wantCT)
	}
	return out
}

func promMatcher(t *testing.T, typ labels.MatchType, name, val string) *labels.Matcher {
	t.Helper()
	m, err := labels.NewMatcher(typ, name, val)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// promAPI runs a PromQL API request (GET or form POST) and decodes the envelope.
func promAPI(t *testing.T, s *server, method, path string, form url.Values) (int, map[string]json.RawMessage) {
	t.Helper()
	var code int
	var body []byte
	if method == "GET" {
		code, body = s.do("GET", path+"?"+form.Encode(), "", nil)
	} else {
		code, body = s.do("POST", path, "application/x-www-form-urlencoded", []byte(form.Encode()))
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %s", method, path, code, body)
	}
	return code, env
}

// promInstant runs an promInstant query at ms and returns metric → value string.
func promInstant(t *testing.T, s *server, method, q string, ms int64) map[string]string {
	t.Helper()
	code, env := promAPI(t, s, method, "/api/v1/query", url.Values{"query": {q}, "time": {promSeconds(ms)}})
	if code != 200 || string(env["status"]) != `"success"` {
		t.Fatalf("%s: %d %s %s", q, code, env["errorType"], env["error"])
	}
	var d struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string  `json:"metric"`
			Value  [2]json.RawMessage `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(env["data"], &d); err != nil || d.ResultType != "vector" {
		t.Fatalf("%s: not a vector: %s", q, env["data"])
	}
	out := map[string]string{}
	for _, r := range d.Result {
		var v string
		if err := json.Unmarshal(r.Value[1], &v); err != nil {
			t.Fatalf("%s: value %s is not a JSON string", q, r.Value[1])
		}
		if string(r.Value[0]) != promSeconds(ms) {
			t.Errorf("%s: timestamp %s, want %s", q, r.Value[0], promSeconds(ms))
		}
		out[labels.FromMap(r.Metric).String()] = v
	}
	return out
}

func promSeconds(ms int64) string {
	s := strconv.FormatInt(ms/1000, 10)
	if f := ms % 1000; f != 0 {
		s += fmt.Sprintf(".%03d", f)
	}
	return s
}

func promNear(s string, want float64) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && math.Abs(f-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func TestPromRemoteWriteReadQuery(t *testing.T) {
	for _, msg := range []remoteapi.WriteMessageType{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType} {
		t.Run(string(msg), func(t *testing.T) {
			s := start(t, t.TempDir())
			// Timestamps after the queue manager starts (it sends nothing older).
			base := time.Now().Add(time.Hour).Truncate(time.Hour).UnixMilli()
			d := newPromDataset(base)
			promSendWithPrometheus(t, s, d, msg)
			promCheckRemoteRead(t, s, d)
			promCheckPromQL(t, s, d)
		})
	}
}

func promCheckRemoteRead(t *testing.T, s *server, d *promDataset) {
	want := map[string][][2]uint64{}
	for _, ps := range d.series {
		var ss [][2]uint64
		for _, x := range ps.samples {
			ss = append(ss, [2]uint64{uint64(x.T), math.Float64bits(x.V)})
		}
		want[ps.lbls.String()] = ss
	}
	start, end := d.base, d.base+300000
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		t.Run("remote read "+rt.String(), func(t *testing.T) {
			for _, tc := range []struct {
				name string
				ms   []*labels.Matcher
				keep func(labels.Labels) bool
			}{
				{"everything", []*labels.Matcher{promMatcher(t, labels.MatchRegexp, "__name__", ".+")}, func(labels.Labels) bool { return true }},
				{"equal", []*labels.Matcher{promMatcher(t, labels.MatchEqual, "__name__", "e2e_http_requests_total"), promMatcher(t, labels.MatchEqual, "instance", "b")},
					func(l labels.Labels) bool {
						return l.Get("__name__") == "e2e_http_requests_total" && l.Get("instance") == "b"
					}},
				{"not equal", []*labels.Matcher{promMatcher(t, labels.MatchEqual, "__name__", "e2e_http_requests_total"), promMatcher(t, labels.MatchNotEqual, "job", "api")},
					func(l labels.Labels) bool {
						return l.Get("__name__") == "e2e_http_requests_total" && l.Get("job") != "api"
					}},
				{"regex", []*labels.Matcher{promMatcher(t, labels.MatchRegexp, "__name__", "e2e_(latency|special).*"), promMatcher(t, labels.MatchRegexp, "le", "0\\..*|")},
					func(l labels.Labels) bool {
						n := l.Get("__name__")
						return n == "e2e_special" || n == "e2e_latency_seconds_bucket" && strings.HasPrefix(l.Get("le"), "0.")
					}},
				{"not regex", []*labels.Matcher{promMatcher(t, labels.MatchNotRegexp, "__name__", "e2e_(http|latency).*")},
					func(l labels.Labels) bool {
						return !strings.HasPrefix(l.Get("__name__"), "e2e_http") && !strings.HasPrefix(l.Get("__name__"), "e2e_latency")
					}},
			} {
				got := promRemoteRead(t, s, rt, start, end, tc.ms...)
				n := 0
				for k, ws := range want {
					ls, _ := promFindSeries(k, d)
					if !tc.keep(ls) {
						if _, ok := got[k]; ok {
							t.Errorf("%s: %s should not be selected", tc.name, k)
						}
						continue
					}
					n++
					if !slices.Equal(got[k], ws) {
						t.Errorf("%s: %s\n got %v\nwant %v", tc.name, k, got[k], ws)
					}
				}
				if len(got) != n {
					t.Errorf("%s: %d series, want %d", tc.name, len(got), n)
				}
			}
		})
	}
}

// promFindSeries finds the series of d rendered as k.
func promFindSeries(k string, d *promDataset) (labels.Labels, bool) {
	for _, s := range d.series {
		if s.lbls.String() == k {
			return s.lbls, true
		}
	}
	return labels.EmptyLabels(), false
}

func promCheckPromQL(t *testing.T, s *server, d *promDataset) {
	end := d.base + 300000
	t.Run("rate", func(t *testing.T) {
		// Evenly spaced samples of a linear counter: the rate is exact.
		for _, m := range []string{"GET", "POST"} {
			got := promInstant(t, s, m, `rate(e2e_http_requests_total[2m])`, end)
			want := map[string]float64{
				`{instance="a", job="api"}`: 1, `{instance="b", job="api"}`: 2, `{instance="c", job="db"}`: 3,
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %v", m, got)
			}
			for k, w := range want {
				if !promNear(got[k], w) {
					t.Errorf("%s: rate %s = %q, want %v", m, k, got[k], w)
				}
			}
		}
	})
	t.Run("sum by", func(t *testing.T) {
		got := promInstant(t, s, "POST", `sum by (job) (rate(e2e_http_requests_total[2m]))`, end)
		if len(got) != 2 || !promNear(got[`{job="api"}`], 3) || !promNear(got[`{job="db"}`], 3) {
			t.Fatalf("%v, want api=3, db=3", got)
		}
		got = promInstant(t, s, "GET", `sum by (job) (e2e_http_requests_total)`, end)
		// At 300 s: a=300, b=600, c=900.
		if got[`{job="api"}`] != "900" || got[`{job="db"}`] != "900" {
			t.Fatalf("%v, want api=900, db=900", got)
		}
	})
	t.Run("histogram_quantile", func(t *testing.T) {
		// Bucket rates per second: ≤0.1: 1, ≤0.5: 3, ≤1: 4, +Inf: 4.
		// q=0.5: rank 2 of 4 lies in (0.1, 0.5] at (2-1)/(3-1): 0.1+0.4*0.5 = 0.3.
		// q=0.9: rank 3.6 lies in (0.5, 1] at (3.6-3)/(4-3): 0.5+0.5*0.6 = 0.8.
		// q=0.2: rank 0.8 lies in [0, 0.1] at 0.8/1: 0.08.
		for q, want := range map[string]float64{"0.5": 0.3, "0.9": 0.8, "0.2": 0.08} {
			got := promInstant(t, s, "GET", `histogram_quantile(`+q+`, sum by (le) (rate(e2e_latency_seconds_bucket[2m])))`, end)
			if len(got) != 1 || !promNear(got["{}"], want) {
				t.Errorf("q=%s: %v, want %v", q, got, want)
			}
		}
	})
	t.Run("staleness", func(t *testing.T) {
		// Samples at +0 (20), +15 (21), +30 (22), stale at +45.
		sel := `{__name__="e2e.temp celsius"}`
		key := labels.FromStrings("__name__", "e2e.temp celsius", "room", "x y\nz", "site.name", "日本 ✓").String()
		if got := promInstant(t, s, "GET", sel, d.base+40000); got[key] != "22" || len(got) != 1 {
			t.Errorf("before the marker: %v", got)
		}
		// After the marker the series is gone, though the lookback (5m)
		// still reaches the sample of +30.
		if got := promInstant(t, s, "GET", sel, d.base+50000); len(got) != 0 {
			t.Errorf("after the marker: %v", got)
		}
		// Without the marker it would be found: the same at +44.999.
		if got := promInstant(t, s, "GET", sel, d.base+44999); got[key] != "22" {
			t.Errorf("just before the marker: %v", got)
		}
	})
	t.Run("special values", func(t *testing.T) {
		code, env := promAPI(t, s, "GET", "/api/v1/query_range", url.Values{"query": {"e2e_special"},
			"start": {promSeconds(d.base)}, "end": {promSeconds(d.base + 75000)}, "step": {"15"}})
		if code != 200 {
			t.Fatalf("%d %s", code, env["error"])
		}
		want := fmt.Sprintf(`{"resultType":"matrix","result":[{"metric":{"__name__":"e2e_special"},"values":[[%s,"NaN"],[%s,"+Inf"],[%s,"-Inf"],[%s,"5e-324"],[%s,"1e-300"],[%s,"1.7976931348623157e+308"]]}]}`,
			promSeconds(d.base), promSeconds(d.base+15000), promSeconds(d.base+30000), promSeconds(d.base+45000), promSeconds(d.base+60000), promSeconds(d.base+75000))
		if string(env["data"]) != want {
			t.Errorf("data\n%s\nwant\n%s", env["data"], want)
		}
	})
	t.Run("metadata endpoints", func(t *testing.T) {
		code, env := promAPI(t, s, "GET", "/api/v1/label/__name__/values", url.Values{"limit": {"40000"}})
		want := `["e2e.temp celsius","e2e_http_requests_total","e2e_latency_seconds_bucket","e2e_special"]`
		if code != 200 || string(env["data"]) != want {
			t.Errorf("metric names: %s, want %s", env["data"], want)
		}
		code, env = promAPI(t, s, "POST", "/api/v1/series", url.Values{"match[]": {`e2e_http_requests_total{job="db"}`},
			"start": {promSeconds(d.base)}, "end": {promSeconds(end)}})
		if want := `[{"__name__":"e2e_http_requests_total","instance":"c","job":"db"}]`; code != 200 || string(env["data"]) != want {
			t.Errorf("series: %s, want %s", env["data"], want)
		}
	})
}
