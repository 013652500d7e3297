package api

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"google.golang.org/protobuf/encoding/protowire"

	"hourglass/api/prom"
	"hourglass/api/promhttp"
	"hourglass/internal/dbtest"
	"hourglass/series"
	"hourglass/store"
)

// promServer is a whole server in process, over a Pebble store.
type promServer struct {
	t    testing.TB
	srv  *Server
	h    http.Handler
	head *series.DB
}

func newPromServer(t testing.TB, mod func(*Config)) *promServer {
	t.Helper()
	return newPromServerOver(t, nil, mod)
}

// newPromServerOver is newPromServer with the head over wrap(store), when
// wrap is not nil.
func newPromServerOver(t testing.TB, wrap func(store.Store) store.Store, mod func(*Config)) *promServer {
	t.Helper()
	dir := t.TempDir()
	e := dbtest.Open(t, dir, nil, wrap)
	t.Cleanup(func() { e.Close() })
	cfg := Config{SnapshotDir: filepath.Join(dir, "snapshots")}
	if mod != nil {
		mod(&cfg)
	}
	srv := newServerOver(cfg, e.DB, e.Index, e.Store, e.UIDs, e.Layout, prometheus.NewRegistry(), dbtest.Quiet)
	return &promServer{t: t, srv: srv, h: srv.Handler(), head: e.DB}
}

type promReply struct {
	code   int
	header http.Header
	body   []byte
}

func (ps *promServer) do(method, path string, hdr map[string]string, body []byte) promReply {
	ps.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	ps.h.ServeHTTP(rec, req)
	return promReply{rec.Code, rec.Header(), rec.Body.Bytes()}
}

var promV1Headers = map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
var promV2Headers = map[string]string{"Content-Type": "application/x-protobuf;proto=io.prometheus.write.v2.Request", "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "2.0.0"}

func (ps *promServer) writeV1(req *prompb.WriteRequest) promReply {
	ps.t.Helper()
	b, err := req.Marshal()
	if err != nil {
		ps.t.Fatal(err)
	}
	return ps.do("POST", "/api/v1/write", promV1Headers, snappy.Encode(nil, b))
}

func (ps *promServer) writeV2(req *writev2.Request) promReply {
	ps.t.Helper()
	b, err := req.Marshal()
	if err != nil {
		ps.t.Fatal(err)
	}
	return ps.do("POST", "/api/v1/write", promV2Headers, snappy.Encode(nil, b))
}

// promAPIResp is the envelope of the query API.
type promAPIResp struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

func (ps *promServer) api(method, path string, form url.Values) (int, promAPIResp) {
	ps.t.Helper()
	var r promReply
	if method == "POST" {
		r = ps.do("POST", path, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, []byte(form.Encode()))
	} else {
		if len(form) > 0 {
			path += "?" + form.Encode()
		}
		r = ps.do("GET", path, nil, nil)
	}
	var ar promAPIResp
	if err := json.Unmarshal(r.body, &ar); err != nil {
		ps.t.Fatalf("%s %s: %d, not JSON: %s", method, path, r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		ps.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return r.code, ar
}

// promVector decodes an instant vector into metric → value string.
func promVector(t *testing.T, ar promAPIResp) map[string]string {
	t.Helper()
	var d struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(ar.Data, &d); err != nil || d.ResultType != "vector" {
		t.Fatalf("not a vector: %s (%v)", ar.Data, err)
	}
	out := map[string]string{}
	for _, r := range d.Result {
		out[labels.FromMap(r.Metric).String()] = r.Value[1].(string)
	}
	return out
}

const promT0 = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z

func TestPromGrafanaHealthCheck(t *testing.T) {
	ps := newPromServer(t, nil)
	want := `{"status":"success","data":{"resultType":"scalar","result":[4,"2"]}}`
	for _, method := range []string{"GET", "POST"} {
		form := url.Values{"query": {"1+1"}, "time": {"4"}}
		var r promReply
		if method == "GET" {
			r = ps.do("GET", "/api/v1/query?"+form.Encode(), nil, nil)
		} else {
			r = ps.do("POST", "/api/v1/query", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, []byte(form.Encode()))
		}
		if r.code != 200 || string(r.body) != want {
			t.Errorf("%s: %d %s, want 200 %s", method, r.code, r.body, want)
		}
	}
}

func TestPromWriteV1AndQuery(t *testing.T) {
	ps := newPromServer(t, nil)
	var samples []prompb.Sample
	for i := 0; i < 5; i++ {
		samples = append(samples, prompb.Sample{Timestamp: promT0 + int64(i)*15000, Value: float64(i) * 1.5})
	}
	r := ps.writeV1(&prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "job", Value: "node exporter"}, {Name: "__name__", Value: "node.load1"}, {Name: "empty", Value: ""}}, Samples: samples},
		},
		Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "node.load1", Help: "1m load <avg>.", Unit: ""}},
	})
	if r.code != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("write: %d %s", r.code, r.body)
	}
	for _, h := range []string{"X-Prometheus-Remote-Write-Samples-Written", "X-Prometheus-Remote-Write-Histograms-Written", "X-Prometheus-Remote-Write-Exemplars-Written"} {
		if r.header.Get(h) != "" {
			t.Errorf("a 1.0 request got %s", h)
		}
	}
	code, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {`{"node.load1"}`}, "time": {strconv.FormatInt(promT0/1000+60, 10)}})
	if code != 200 {
		t.Fatalf("query: %d %+v", code, ar)
	}
	got := promVector(t, ar)
	if v := got[`{__name__="node.load1", job="node exporter"}`]; v != "6" || len(got) != 1 {
		t.Fatalf("query result %v", got)
	}
	// A range query: values as strings, timestamps as seconds.
	code, ar = ps.api("POST", "/api/v1/query_range", url.Values{"query": {`{__name__="node.load1"}`},
		"start": {strconv.FormatInt(promT0/1000, 10)}, "end": {strconv.FormatInt(promT0/1000+30, 10)}, "step": {"15"}})
	if code != 200 {
		t.Fatalf("query_range: %d %+v", code, ar)
	}
	wantData := `{"resultType":"matrix","result":[{"metric":{"__name__":"node.load1","job":"node exporter"},"values":[[1767225600,"0"],[1767225615,"1.5"],[1767225630,"3"]]}]}`
	if string(ar.Data) != wantData {
		t.Errorf("query_range data\n%s\nwant\n%s", ar.Data, wantData)
	}
	// Metadata from the 1.0 request.
	code, ar = ps.api("GET", "/api/v1/metadata", nil)
	if want := `{"node.load1":[{"type":"gauge","help":"1m load \u003cavg\u003e.","unit":""}]}`; code != 200 || string(ar.Data) != want {
		t.Errorf("metadata: %d %s, want %s", code, ar.Data, want)
	}
}

func TestPromWriteV2(t *testing.T) {
	ps := newPromServer(t, nil)
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "requests_total", "path", "/a b\n"), nil),
			Samples:  []writev2.Sample{{Value: 1, Timestamp: promT0}, {Value: 3, Timestamp: promT0 + 15000}},
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("Requests."), UnitRef: st.Symbolize("requests")}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "temp"), nil),
			Samples: []writev2.Sample{{Value: math.Float64frombits(value.StaleNaN), Timestamp: promT0}}},
	}}
	req.Symbols = st.Symbols()
	r := ps.writeV2(req)
	if r.code != http.StatusNoContent {
		t.Fatalf("write: %d %s", r.code, r.body)
	}
	for h, want := range map[string]string{promhttp.HeaderSamplesWritten: "3", promhttp.HeaderHistogramsWritten: "0", promhttp.HeaderExemplarsWritten: "0"} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	code, ar := ps.api("GET", "/api/v1/metadata", url.Values{"metric": {"requests_total"}})
	if want := `{"requests_total":[{"type":"counter","help":"Requests.","unit":"requests"}]}`; code != 200 || string(ar.Data) != want {
		t.Errorf("metadata: %s, want %s", ar.Data, want)
	}
}

// A series the decoder remembers records its metadata again when it
// changes, and only the metadata it sends: the table follows the last
// change, and keeps its own copies of the strings.
func TestPromWriteV2MetadataChanges(t *testing.T) {
	ps := newPromServer(t, nil)
	write := func(k int, typ writev2.Metadata_MetricType, help string) {
		t.Helper()
		st := writev2.NewSymbolTable()
		md := writev2.Metadata{Type: typ}
		if help != "" {
			md.HelpRef = st.Symbolize(help)
		}
		req := &writev2.Request{Timeseries: []writev2.TimeSeries{{
			LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "jobs", "q", "a"), nil),
			Samples:    []writev2.Sample{{Value: 1, Timestamp: promT0 + int64(k)*15000}}, Metadata: md}}}
		req.Symbols = st.Symbols()
		if r := ps.writeV2(req); r.code != http.StatusNoContent {
			t.Fatalf("write %d: %d %s", k, r.code, r.body)
		}
	}
	check := func(want string) {
		t.Helper()
		code, ar := ps.api("GET", "/api/v1/metadata", url.Values{"metric": {"jobs"}})
		if code != 200 || string(ar.Data) != want {
			t.Fatalf("metadata: %d %s, want %s", code, ar.Data, want)
		}
	}
	write(0, writev2.Metadata_METRIC_TYPE_GAUGE, "Jobs.")
	check(`{"jobs":[{"type":"gauge","help":"Jobs.","unit":""}]}`)
	write(1, writev2.Metadata_METRIC_TYPE_GAUGE, "Jobs.")
	write(2, writev2.Metadata_METRIC_TYPE_GAUGE, "Jobs queued.")
	check(`{"jobs":[{"type":"gauge","help":"Jobs queued.","unit":""}]}`)
	write(3, writev2.Metadata_METRIC_TYPE_COUNTER, "Jobs queued.")
	check(`{"jobs":[{"type":"counter","help":"Jobs queued.","unit":""}]}`)
	write(4, writev2.Metadata_METRIC_TYPE_UNSPECIFIED, "") // none: the table keeps what it has
	check(`{"jobs":[{"type":"counter","help":"Jobs queued.","unit":""}]}`)
	write(5, writev2.Metadata_METRIC_TYPE_GAUGE, "Jobs.")
	check(`{"jobs":[{"type":"gauge","help":"Jobs.","unit":""}]}`)
}

func TestPromWriteRejects(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.WriteMaxDecodedBytes = 1 << 16 })
	good := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "good"}}, Samples: []prompb.Sample{{Timestamp: promT0, Value: 1}}}
	marshal := func(r *prompb.WriteRequest) []byte {
		b, _ := r.Marshal()
		return snappy.Encode(nil, b)
	}
	goodBody := marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good}})
	// A snappy header claiming 1 GiB, with no data behind it.
	hugeClaim := append([]byte{0x80, 0x80, 0x80, 0x80, 0x04}, 0, 0, 0)
	big := make([]byte, 1<<17)
	for _, tc := range []struct {
		name    string
		hdr     map[string]string
		method  string
		body    []byte
		code    int
		bodyHas string
	}{
		{"json content type", map[string]string{"Content-Type": "application/json", "Content-Encoding": "snappy"}, "POST", goodBody, 415, "Content-Type"},
		{"unknown proto", map[string]string{"Content-Type": "application/x-protobuf;proto=io.prometheus.write.v9.Request", "Content-Encoding": "snappy"}, "POST", goodBody, 415, "unknown proto"},
		{"gzip", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, "POST", goodBody, 415, "Content-Encoding"},
		{"decoded size claimed over the limit", promV1Headers, "POST", hugeClaim, 413, "decodes to 1073741824 bytes"},
		{"decoded size over the limit", promV1Headers, "POST", snappy.Encode(nil, big), 413, "more than the limit of 65536"},
		{"not snappy", promV1Headers, "POST", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 400, "snappy"},
		{"corrupt snappy", promV1Headers, "POST", []byte{0x10, 0x00}, 400, "snappy"},
		{"malformed protobuf", promV1Headers, "POST", snappy.Encode(nil, []byte{0x0a, 0x7f, 0x01}), 400, "nothing written: malformed"},
		{"get", promV1Headers, "GET", nil, 405, "Method Not Allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ps.do(tc.method, "/api/v1/write", tc.hdr, tc.body)
			if r.code != tc.code || !strings.Contains(string(r.body), tc.bodyHas) {
				t.Fatalf("%d %q, want %d with %q", r.code, r.body, tc.code, tc.bodyHas)
			}
		})
	}
}

func TestPromWriteInvalidSeries(t *testing.T) {
	ps := newPromServer(t, nil)
	lbl := func(kv ...string) []prompb.Label {
		var out []prompb.Label
		for i := 0; i < len(kv); i += 2 {
			out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	one := []prompb.Sample{{Timestamp: promT0, Value: 7}}
	for _, tc := range []struct {
		name  string
		bad   prompb.TimeSeries
		inMsg string
	}{
		{"no name", prompb.TimeSeries{Labels: lbl("job", "x"), Samples: one}, `invalid series #1 {job="x"}: no __name__`},
		{"empty label name", prompb.TimeSeries{Labels: lbl("__name__", "m", "", "x"), Samples: one}, "empty label name"},
		{"duplicate label", prompb.TimeSeries{Labels: lbl("__name__", "m", "a", "1", "a", "2"), Samples: one}, `duplicate label name "a"`},
		{"negative timestamp", prompb.TimeSeries{Labels: lbl("__name__", "m"), Samples: []prompb.Sample{{Timestamp: -1, Value: 1}}}, "outside the range"},
		{"too many tags", prompb.TimeSeries{Labels: append(lbl("__name__", "m"), promManyLabels(40)...), Samples: one}, "more than the limit of 32"},
		{"long value", prompb.TimeSeries{Labels: lbl("__name__", "m", "a", strings.Repeat("x", 300)), Samples: one}, "more than 256 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "good_" + strings.ReplaceAll(tc.name, " ", "_")
			good := prompb.TimeSeries{Labels: lbl("__name__", name), Samples: one}
			r := ps.writeV1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good, tc.bad, good}})
			if r.code != 400 || !strings.Contains(string(r.body), tc.inMsg) {
				t.Fatalf("%d %q, want 400 naming %q", r.code, r.body, tc.inMsg)
			}
			code, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {name}, "time": {strconv.FormatInt(promT0/1000, 10)}})
			if code != 200 || promVector(t, ar)[`{__name__="`+name+`"}`] != "7" {
				t.Fatalf("the valid series of a rejected request must be stored: %d %s", code, ar.Data)
			}
		})
	}
}

func promManyLabels(n int) []prompb.Label {
	var out []prompb.Label
	for i := 0; i < n; i++ {
		out = append(out, prompb.Label{Name: "l" + strconv.Itoa(i), Value: "v"})
	}
	return out
}

func TestPromWriteV2HistogramsAndExemplarsStored(t *testing.T) {
	ps := newPromServer(t, nil)
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "latency_seconds"), nil),
			Histograms: []writev2.Histogram{writev2.FromFloatHistogram(0, promT0, &histogram.FloatHistogram{Count: 2, Sum: 1})}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "requests_total", "job", "x"), nil),
			Samples: []writev2.Sample{{Value: 5, Timestamp: promT0}},
			Exemplars: []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "abc"), nil), Value: 5, Timestamp: promT0},
				{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", strings.Repeat("y", 200)), nil), Value: 6, Timestamp: promT0 + 1}}},
	}}
	req.Symbols = st.Symbols()
	r := ps.writeV2(req)
	if r.code != 204 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	// The exemplar of 203 characters is dropped (Prometheus' limit is 128),
	// as Prometheus' receiver drops it, failing nothing.
	if r.header.Get(promhttp.HeaderSamplesWritten) != "1" || r.header.Get(promhttp.HeaderHistogramsWritten) != "1" || r.header.Get(promhttp.HeaderExemplarsWritten) != "1" {
		t.Fatalf("written headers %v", r.header)
	}
	code, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {"requests_total"}, "time": {strconv.FormatInt(promT0/1000, 10)}})
	if code != 200 || promVector(t, ar)[`{__name__="requests_total", job="x"}`] != "5" {
		t.Fatalf("the float sample must be stored: %s", ar.Data)
	}
	code, ar = ps.api("GET", "/api/v1/query", url.Values{"query": {"latency_seconds"}, "time": {strconv.FormatInt(promT0/1000, 10)}})
	if code != 200 || !strings.Contains(string(ar.Data), `"histogram":[`) || !strings.Contains(string(ar.Data), `"count":"2"`) {
		t.Fatalf("the histogram must be stored and read back: %d %s", code, ar.Data)
	}
	code, ar = ps.api("GET", "/api/v1/query_exemplars", url.Values{"query": {`rate(requests_total{job="x"}[5m])`},
		"start": {strconv.FormatInt(promT0/1000-60, 10)}, "end": {strconv.FormatInt(promT0/1000+60, 10)}})
	want := `[{"seriesLabels":{"__name__":"requests_total","job":"x"},"exemplars":[{"labels":{"trace_id":"abc"},"value":"5","timestamp":` + string(prom.AppendTimestamp(nil, promT0)) + `}]}]`
	if code != 200 || string(ar.Data) != want {
		t.Fatalf("query_exemplars: %d %s, want %s", code, ar.Data, want)
	}
	if m := string(ps.do("GET", "/metrics", nil, nil).body); !strings.Contains(m, `hourglass_remote_write_exemplars_refused_total{reason="limit"} 1`) {
		t.Fatalf("/metrics does not count the dropped exemplar")
	}
}

// TestPromWriteHistogramsBoundedKeepFloats: a histogram over the bucket
// bound is refused alone (400 naming the flag), the float samples and the
// other histograms of the request are written, and /metrics counts it.
func TestPromWriteHistogramsBoundedKeepFloats(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.WriteMaxHistogramBuckets = 2 })
	small := &histogram.Histogram{Count: 3, Sum: 1.5, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}
	big := &histogram.Histogram{Count: 3, Sum: 1.5, PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 0, 0}}
	r := ps.writeV1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "lat"}}, Histograms: []prompb.Histogram{prompb.FromIntHistogram(promT0, small), prompb.FromIntHistogram(promT0+1000, big)}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "up"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: promT0}}},
	}})
	if r.code != 400 || !strings.Contains(string(r.body), "prom-write-max-histogram-buckets") {
		t.Fatalf("%d %s", r.code, r.body)
	}
	code, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {"up"}, "time": {strconv.FormatInt(promT0/1000, 10)}})
	if code != 200 || promVector(t, ar)[`{__name__="up"}`] != "1" {
		t.Fatalf("the float sample must be stored: %s", ar.Data)
	}
	code, ar = ps.api("GET", "/api/v1/query", url.Values{"query": {"histogram_count(lat)"}, "time": {strconv.FormatInt(promT0/1000, 10)}})
	if code != 200 || promVector(t, ar)[`{}`] != "3" {
		t.Fatalf("the histogram within the bound must be stored: %d %s", code, ar.Data)
	}
	if m := string(ps.do("GET", "/metrics", nil, nil).body); !strings.Contains(m, `hourglass_remote_write_histograms_refused_total{reason="limit"} 1`) {
		t.Fatalf("/metrics does not count the refused histogram:\n%s", m)
	}
}

func TestPromWriteSheds(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.WriteMaxInflightBytes = 1000 })
	body := snappy.Encode(nil, promMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels: []prompb.Label{{Name: "__name__", Value: "slow"}}, Samples: []prompb.Sample{{Timestamp: promT0, Value: 1}}}}}))
	// Request A announces 900 bytes and sends them slowly.
	pr, pw := io.Pipe()
	reqA := httptest.NewRequest("POST", "/api/v1/write", pr)
	reqA.ContentLength = 900
	for k, v := range promV1Headers {
		reqA.Header.Set(k, v)
	}
	recA := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ps.h.ServeHTTP(recA, reqA) }()
	if _, err := pw.Write(body[:1]); err != nil { // returns once A is reading: it holds its 900 bytes
		t.Fatal(err)
	}
	// B does not fit beside it.
	reqB := httptest.NewRequest("POST", "/api/v1/write", bytes.NewReader(body))
	reqB.ContentLength = int64(len(body)) + 200
	for k, v := range promV1Headers {
		reqB.Header.Set(k, v)
	}
	recB := httptest.NewRecorder()
	ps.h.ServeHTTP(recB, reqB)
	if recB.Code != http.StatusTooManyRequests || recB.Header().Get("Retry-After") != "2" {
		t.Fatalf("B: %d Retry-After %q, want 429 with Retry-After 2", recB.Code, recB.Header().Get("Retry-After"))
	}
	pw.Write(body[1:])
	pw.Close()
	wg.Wait()
	// A's body is shorter than announced; what matters is that it ran.
	if recA.Code == http.StatusTooManyRequests {
		t.Fatalf("A was shed")
	}
	// Once A is done, B fits.
	r := ps.do("POST", "/api/v1/write", promV1Headers, body)
	if r.code != http.StatusNoContent {
		t.Fatalf("after A: %d %s", r.code, r.body)
	}
}

func promMarshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPromQueryErrors(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.MaxSamples = 10 })
	var samples []prompb.Sample
	for i := 0; i < 20; i++ {
		samples = append(samples, prompb.Sample{Timestamp: promT0 + int64(i)*1000, Value: 1})
	}
	if r := ps.writeV1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "m"}}, Samples: samples}}}); r.code != 204 {
		t.Fatal(r.code, string(r.body))
	}
	end := strconv.FormatInt(promT0/1000+20, 10)
	for _, tc := range []struct {
		name, path string
		form       url.Values
		code       int
		typ, msg   string
	}{
		{"parse error", "/api/v1/query", url.Values{"query": {"sum("}}, 400, "bad_data", `invalid parameter "query": 1:5: parse error`},
		{"bad time", "/api/v1/query", url.Values{"query": {"1"}, "time": {"x"}}, 400, "bad_data", `invalid parameter "time": invalid time value for 'time': cannot parse "x" to a valid timestamp`},
		{"zero step", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"0"}, "end": {"10"}, "step": {"0"}}, 400, "bad_data", "zero or negative query resolution step"},
		{"end before start", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"10"}, "end": {"0"}, "step": {"1"}}, 400, "bad_data", "end timestamp must not be before start time"},
		{"too many points", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"0"}, "end": {"100000"}, "step": {"1"}}, 400, "bad_data", "exceeded maximum resolution of 11,000 points"},
		{"too many samples", "/api/v1/query", url.Values{"query": {"m[1m]"}, "time": {end}}, 422, "execution", "samples"},
		{"timeout", "/api/v1/query", url.Values{"query": {"m"}, "time": {end}, "timeout": {"0.000000001"}}, 503, "timeout", ""},
		{"bad limit", "/api/v1/labels", url.Values{"limit": {"-1"}}, 400, "bad_data", "limit must be non-negative"},
		{"empty matcher", "/api/v1/series", url.Values{"match[]": {`{a=""}`}}, 400, "bad_data", "match[] must contain at least one non-empty matcher"},
		{"no match", "/api/v1/series", nil, 400, "bad_data", "no match[] parameter provided"},
		{"bad label name", "/api/v1/label/a%ffb/values", nil, 400, "bad_data", "invalid label name"},
		{"exemplars bad query", "/api/v1/query_exemplars", url.Values{"query": {"("}}, 400, "bad_data", "parse error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ar := ps.api("GET", tc.path, tc.form)
			if code != tc.code || ar.Status != "error" || ar.ErrorType != tc.typ || !strings.Contains(ar.Error, tc.msg) {
				t.Fatalf("%d %+v, want %d %s %q", code, ar, tc.code, tc.typ, tc.msg)
			}
		})
	}
}

func TestPromMetadataEndpoints(t *testing.T) {
	ps := newPromServer(t, nil)
	ts := func(name string, kv ...string) prompb.TimeSeries {
		l := []prompb.Label{{Name: "__name__", Value: name}}
		for i := 0; i < len(kv); i += 2 {
			l = append(l, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		return prompb.TimeSeries{Labels: l, Samples: []prompb.Sample{{Timestamp: promT0, Value: 1}}}
	}
	if r := ps.writeV1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts("up", "job", "a", "instance", "x:1"), ts("up", "job", "b", "instance", "y:1"), ts("http.requests", "job", "a", "ünï code", "✓"),
	}}); r.code != 204 {
		t.Fatal(r.code, string(r.body))
	}
	start, end := strconv.FormatInt(promT0/1000-60, 10), strconv.FormatInt(promT0/1000+60, 10)
	for _, tc := range []struct {
		name, path string
		form       url.Values
		data       string
		warning    bool
	}{
		{"labels", "/api/v1/labels", nil, `["__name__","instance","job","ünï code"]`, false},
		{"labels matched", "/api/v1/labels", url.Values{"match[]": {`{job="b"}`}, "start": {start}, "end": {end}}, `["__name__","instance","job"]`, false},
		{"labels two sets", "/api/v1/labels", url.Values{"match[]": {`{job="b"}`, `{__name__="http.requests"}`}}, `["__name__","instance","job","ünï code"]`, false},
		{"label values", "/api/v1/label/job/values", nil, `["a","b"]`, false},
		{"metric names", "/api/v1/label/__name__/values", url.Values{"limit": {"40000"}, "start": {start}, "end": {end}}, `["http.requests","up"]`, false},
		{"values matched", "/api/v1/label/instance/values", url.Values{"match[]": {`up{job="a"}`}}, `["x:1"]`, false},
		{"values escaped name", "/api/v1/label/" + model.EscapeName("ünï code", model.ValueEncodingEscaping) + "/values", nil, `["✓"]`, false},
		{"values limit", "/api/v1/label/job/values", url.Values{"limit": {"1"}}, `["a"]`, true},
		{"series", "/api/v1/series", url.Values{"match[]": {"up"}, "start": {start}, "end": {end}},
			`[{"__name__":"up","instance":"x:1","job":"a"},{"__name__":"up","instance":"y:1","job":"b"}]`, false},
		{"series limit", "/api/v1/series", url.Values{"match[]": {"up"}, "limit": {"1"}}, `[{"__name__":"up","instance":"x:1","job":"a"}]`, true},
		{"series out of range", "/api/v1/series", url.Values{"match[]": {"up"}, "start": {"0"}, "end": {"100"}}, `[]`, false},
		{"buildinfo", "/api/v1/status/buildinfo", nil, "", false},
		{"rules", "/api/v1/rules", nil, `{"groups":[]}`, false},
		{"exemplars probe", "/api/v1/query_exemplars", url.Values{"query": {"test"}, "start": {"1767225600000"}, "end": {"1767229200000"}}, `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ar := ps.api("GET", tc.path, tc.form)
			if code != 200 || ar.Status != "success" {
				t.Fatalf("%d %+v", code, ar)
			}
			if tc.data != "" && string(ar.Data) != tc.data {
				t.Errorf("data %s, want %s", ar.Data, tc.data)
			}
			if tc.warning != (len(ar.Warnings) > 0) {
				t.Errorf("warnings %q", ar.Warnings)
			}
		})
	}
	code, ar := ps.api("GET", "/api/v1/status/buildinfo", nil)
	var bi map[string]string
	if err := json.Unmarshal(ar.Data, &bi); code != 200 || err != nil || bi["version"] != promhttp.PromAPIVersion || bi["goVersion"] == "" {
		t.Errorf("buildinfo %s", ar.Data)
	}
	// POST with a form works where Prometheus takes it, 405 elsewhere.
	if code, _ := ps.api("POST", "/api/v1/labels", url.Values{"match[]": {"up"}}); code != 200 {
		t.Errorf("POST labels: %d", code)
	}
	if r := ps.do("POST", "/api/v1/label/job/values", nil, nil); r.code != 405 {
		t.Errorf("POST label values: %d", r.code)
	}
}

// TestPromQueryPathShared: /api/v1/query is PromQL with a query parameter and
// OpenTSDB's /api/query otherwise.
func TestPromQueryPathShared(t *testing.T) {
	ps := newPromServer(t, nil)
	if r := ps.writeV1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels: []prompb.Label{{Name: "__name__", Value: "sys.cpu.user"}, {Name: "host", Value: "a"}}, Samples: []prompb.Sample{{Timestamp: promT0, Value: 42}}}}}); r.code != 204 {
		t.Fatal(r.code)
	}
	startS := strconv.FormatInt(promT0/1000-10, 10)
	// OpenTSDB GET with m=.
	r := ps.do("GET", "/api/v1/query?start="+startS+"&m=sum:sys.cpu.user{host=a}", nil, nil)
	if r.code != 200 || !strings.Contains(string(r.body), `"metric":"sys.cpu.user"`) || !strings.Contains(string(r.body), `"1767225600":42`) {
		t.Fatalf("OpenTSDB GET: %d %s", r.code, r.body)
	}
	// OpenTSDB POST with a JSON body.
	r = ps.do("POST", "/api/v1/query", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"start":`+startS+`,"queries":[{"metric":"sys.cpu.user","aggregator":"sum","tags":{"host":"a"}}]}`))
	if r.code != 200 || !strings.Contains(string(r.body), `"1767225600":42`) {
		t.Fatalf("OpenTSDB POST: %d %s", r.code, r.body)
	}
	// PromQL, GET and POST.
	for _, m := range []string{"GET", "POST"} {
		code, ar := ps.api(m, "/api/v1/query", url.Values{"query": {`{__name__="sys.cpu.user",host="a"}`}, "time": {strconv.FormatInt(promT0/1000, 10)}})
		if code != 200 || promVector(t, ar)[`{__name__="sys.cpu.user", host="a"}`] != "42" {
			t.Fatalf("PromQL %s: %d %s", m, code, ar.Data)
		}
	}
}

// TestPromRead reads back over remote read, both response types.
func TestPromRead(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.ReadMaxBytesInFrame = 512 })
	var samples []prompb.Sample
	for i := 0; i < 300; i++ {
		samples = append(samples, prompb.Sample{Timestamp: promT0 + int64(i)*1000, Value: float64(i) / 3})
	}
	samples[7].Value = math.Float64frombits(value.StaleNaN)
	samples[8].Value = math.Inf(-1)
	write := []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "cpu"}, {Name: "host", Value: "a"}}, Samples: samples},
		{Labels: []prompb.Label{{Name: "__name__", Value: "cpu"}, {Name: "host", Value: "b"}}, Samples: samples[:3]},
	}
	if r := ps.writeV1(&prompb.WriteRequest{Timeseries: write}); r.code != 204 {
		t.Fatal(r.code)
	}
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{
		{StartTimestampMs: promT0, EndTimestampMs: promT0 + 299000, Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "cpu"}, {Type: prompb.LabelMatcher_NEQ, Name: "host", Value: "b"}}},
		{StartTimestampMs: promT0, EndTimestampMs: promT0 + 1000, Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "c.u"}, {Type: prompb.LabelMatcher_NRE, Name: "host", Value: "a"}}},
	}}
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		t.Run(rt.String(), func(t *testing.T) {
			rr.AcceptedResponseTypes = []prompb.ReadRequest_ResponseType{rt}
			r := ps.do("POST", "/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"},
				snappy.Encode(nil, promMarshal(t, rr)))
			if r.code != 200 {
				t.Fatalf("%d %s", r.code, r.body)
			}
			got := promReadResults(t, r)
			want := []map[string][]prompb.Sample{
				{`{__name__="cpu", host="a"}`: samples},
				{`{__name__="cpu", host="b"}`: samples[:2]},
			}
			for qi := range want {
				for k, ws := range want[qi] {
					gs := got[qi][k]
					if len(gs) != len(ws) {
						t.Fatalf("query %d %s: %d samples, want %d", qi, k, len(gs), len(ws))
					}
					for i := range ws {
						if gs[i].Timestamp != ws[i].Timestamp || math.Float64bits(gs[i].Value) != math.Float64bits(ws[i].Value) {
							t.Fatalf("query %d %s sample %d: %v, want %v", qi, k, i, gs[i], ws[i])
						}
					}
				}
				if len(got[qi]) != len(want[qi]) {
					t.Fatalf("query %d: %d series, want %d", qi, len(got[qi]), len(want[qi]))
				}
			}
		})
	}
	// Bad requests.
	for _, tc := range []struct {
		name string
		body []byte
		code int
	}{
		{"not snappy", []byte("xx"), 400},
		{"bad regex", snappy.Encode(nil, promMarshal(t, &prompb.ReadRequest{Queries: []*prompb.Query{{Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "a", Value: "("}}}}})), 400},
		{"unknown response type", snappy.Encode(nil, promMarshal(t, &prompb.ReadRequest{AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{5}})), 400},
	} {
		r := ps.do("POST", "/api/v1/read", map[string]string{"Content-Encoding": "snappy"}, tc.body)
		if r.code != tc.code {
			t.Errorf("%s: %d %s", tc.name, r.code, r.body)
		}
	}
}

func promReadResults(t *testing.T, r promReply) []map[string][]prompb.Sample {
	t.Helper()
	var out []map[string][]prompb.Sample
	key := func(ls []prompb.Label) string {
		var b labels.ScratchBuilder
		for _, l := range ls {
			b.Add(l.Name, l.Value)
		}
		return b.Labels().String()
	}
	if r.header.Get("Content-Encoding") == "snappy" {
		raw, err := snappy.Decode(nil, r.body)
		if err != nil {
			t.Fatal(err)
		}
		var resp prompb.ReadResponse
		if err := resp.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		for _, qr := range resp.Results {
			m := map[string][]prompb.Sample{}
			for _, ts := range qr.Timeseries {
				m[key(ts.Labels)] = ts.Samples
			}
			out = append(out, m)
		}
		return out
	}
	if ct := r.header.Get("Content-Type"); ct != "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse" {
		t.Fatalf("Content-Type %q", ct)
	}
	rd := promChunkedFrames(t, r.body)
	for _, cr := range rd {
		for int(cr.QueryIndex) >= len(out) {
			out = append(out, map[string][]prompb.Sample{})
		}
		for _, cs := range cr.ChunkedSeries {
			k := key(cs.Labels)
			out[cr.QueryIndex][k] = append(out[cr.QueryIndex][k], promChunkSamples(t, cs.Chunks)...)
		}
	}
	return out
}

// promChunkedFrames reads a STREAMED_XOR_CHUNKS body with Prometheus' reader.
func promChunkedFrames(t *testing.T, body []byte) []prompb.ChunkedReadResponse {
	t.Helper()
	rd := remote.NewChunkedReader(bytes.NewReader(body), 1<<20, nil)
	var out []prompb.ChunkedReadResponse
	for {
		var cr prompb.ChunkedReadResponse
		err := rd.NextProto(&cr)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cr)
	}
}

func promChunkSamples(t *testing.T, chks []prompb.Chunk) []prompb.Sample {
	t.Helper()
	var out []prompb.Sample
	for _, c := range chks {
		chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
		if err != nil {
			t.Fatal(err)
		}
		it := chk.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			out = append(out, prompb.Sample{Timestamp: ts, Value: v})
		}
	}
	return out
}

// TestPromNegativeZero: Prometheus' own encoder drops a zero double, -0
// included, but a sender that writes -0 gets it back, bit for bit.
func TestPromNegativeZero(t *testing.T) {
	ps := newPromServer(t, nil)
	label := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "__name__")
	label = protowire.AppendString(protowire.AppendTag(label, 2, protowire.BytesType), "negzero")
	sample := protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), math.Float64bits(math.Copysign(0, -1)))
	sample = protowire.AppendVarint(protowire.AppendTag(sample, 2, protowire.VarintType), uint64(promT0))
	ts := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), label)
	ts = protowire.AppendBytes(protowire.AppendTag(ts, 2, protowire.BytesType), sample)
	req := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), ts)
	if r := ps.do("POST", "/api/v1/write", promV1Headers, snappy.Encode(nil, req)); r.code != 204 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: promT0, EndTimestampMs: promT0,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "negzero"}}}}}
	r := ps.do("POST", "/api/v1/read", map[string]string{"Content-Encoding": "snappy"}, snappy.Encode(nil, promMarshal(t, rr)))
	got := promReadResults(t, r)[0][`{__name__="negzero"}`]
	if len(got) != 1 || math.Float64bits(got[0].Value) != math.Float64bits(math.Copysign(0, -1)) {
		t.Fatalf("read back %v", got)
	}
	_, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {"negzero"}, "time": {strconv.FormatInt(promT0/1000, 10)}})
	if v := promVector(t, ar)[`{__name__="negzero"}`]; v != "-0" {
		t.Fatalf("PromQL: %q, want -0", v)
	}
}

// TestPromWriteStorageDown: when the storage cannot take the write, the
// answer is a 5xx, which senders retry.
func TestPromWriteStorageDown(t *testing.T) {
	ps := newPromServer(t, nil)
	if err := ps.head.Close(); err != nil {
		t.Fatal(err)
	}
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "m"), nil),
		Samples: []writev2.Sample{{Value: 1, Timestamp: promT0}}}}}
	req.Symbols = st.Symbols()
	r := ps.writeV2(req)
	if r.code != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "retry") || r.header.Get(promhttp.HeaderSamplesWritten) != "0" {
		t.Fatalf("%d %s %v", r.code, r.body, r.header)
	}
}

// TestPromMaxSeries: a query selecting more series than allowed fails with
// an execution error, and one within the limit runs.
func TestPromMaxSeries(t *testing.T) {
	ps := newPromServer(t, func(c *Config) { c.Prom.MaxSeries = 2 })
	var ts []prompb.TimeSeries
	for _, inst := range []string{"a", "b", "c"} {
		ts = append(ts, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "instance", Value: inst}},
			Samples: []prompb.Sample{{Timestamp: promT0, Value: 1}}})
	}
	if r := ps.writeV1(&prompb.WriteRequest{Timeseries: ts}); r.code != 204 {
		t.Fatal(r.code, string(r.body))
	}
	at := strconv.FormatInt(promT0/1000, 10)
	code, ar := ps.api("GET", "/api/v1/query", url.Values{"query": {"count(up)"}, "time": {at}})
	if code != 422 || ar.ErrorType != "execution" || !strings.Contains(ar.Error, "limit of 2 series") {
		t.Fatalf("3 series: %d %+v", code, ar)
	}
	code, ar = ps.api("GET", "/api/v1/query", url.Values{"query": {`count(up{instance!="c"})`}, "time": {at}})
	if code != 200 || promVector(t, ar)["{}"] != "2" {
		t.Fatalf("2 series: %d %+v", code, ar)
	}
}
