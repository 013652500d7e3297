package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// TestPromGrafanaDatasource sends what Grafana's Prometheus data source
// sends: its health check (1+1 at time 4, GET and POST), its start-up
// probes, and its metadata calls.
func TestPromGrafanaDatasource(t *testing.T) {
	s := start(t, t.TempDir())
	want := `{"status":"success","data":{"resultType":"scalar","result":[4,"2"]}}`
	if code, body := s.do("GET", "/api/v1/query?query=1%2B1&time=4", "", nil); code != 200 || string(body) != want {
		t.Errorf("health check GET: %d %s", code, body)
	}
	if code, body := s.do("POST", "/api/v1/query", "application/x-www-form-urlencoded", []byte("query=1%2B1&time=4")); code != 200 || string(body) != want {
		t.Errorf("health check POST: %d %s", code, body)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{"/api/v1/rules", `{"status":"success","data":{"groups":[]}}`},
		{"/api/v1/query_exemplars?query=test&start=1767225600000&end=1767229200000", `{"status":"success","data":[]}`},
		{"/api/v1/label/__name__/values?limit=40000&start=1767225600&end=1767229200", `{"status":"success","data":[]}`},
		{"/api/v1/labels?limit=40000&start=1767225600&end=1767229200&match[]=%7B__name__%3D~%22.%2Acpu.%2A%22%7D", `{"status":"success","data":[]}`},
		{"/api/v1/metadata?limit=40000", `{"status":"success","data":{}}`},
	} {
		if code, body := s.do("GET", tc.path, "", nil); code != 200 || string(body) != tc.want {
			t.Errorf("%s: %d %s, want %s", tc.path, code, body, tc.want)
		}
	}
	code, body := s.do("GET", "/api/v1/status/buildinfo", "", nil)
	var bi struct {
		Status string            `json:"status"`
		Data   map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &bi); code != 200 || err != nil || bi.Status != "success" || bi.Data["version"] == "" {
		t.Errorf("buildinfo: %d %s", code, body)
	}
	// An error has Prometheus' shape and status.
	code, body = s.do("GET", "/api/v1/query?query=sum(", "", nil)
	var e struct{ Status, ErrorType, Error string }
	if err := json.Unmarshal(body, &e); code != 400 || err != nil || e.Status != "error" || e.ErrorType != "bad_data" || !strings.Contains(e.Error, "parse error") {
		t.Errorf("bad query: %d %s", code, body)
	}
}

// TestPromClientGolang drives the server with client_golang's API client,
// which the PromQL compliance tester uses (POST first, GET on 405).
func TestPromClientGolang(t *testing.T) {
	s := start(t, t.TempDir())
	base := time.Now().Add(time.Hour).Truncate(time.Hour).UnixMilli()
	d := newPromDataset(base)
	promSendWithPrometheus(t, s, d, remoteapi.WriteV2MessageType)
	c, err := promapi.NewClient(promapi.Config{Address: s.url})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(c)
	ctx := context.Background()
	v, _, _, err := api.Query(ctx, "1+1", time.Unix(4, 0))
	if err != nil || v.String() != "scalar: 2 @[4]" {
		t.Fatalf("1+1: %v %v", v, err)
	}
	end := time.UnixMilli(base + 300000)
	v, _, _, err = api.Query(ctx, `sum(rate(e2e_http_requests_total[2m]))`, end)
	if vec, ok := v.(model.Vector); err != nil || !ok || len(vec) != 1 || math.Abs(float64(vec[0].Value)-6) > 1e-9 {
		t.Fatalf("sum(rate): %v %v", v, err)
	}
	v, _, _, err = api.QueryRange(ctx, `e2e_http_requests_total{instance="a"}`, promv1.Range{Start: time.UnixMilli(base), End: time.UnixMilli(base + 60000), Step: 30 * time.Second})
	m, ok := v.(model.Matrix)
	if err != nil || !ok || len(m) != 1 || len(m[0].Values) != 3 || m[0].Values[2].Value != 60 || m[0].Values[2].Timestamp != model.Time(base+60000) {
		t.Fatalf("query_range: %v %v", v, err)
	}
	names, _, _, err := api.LabelNames(ctx, []string{`{job="db"}`}, time.UnixMilli(base), end)
	if err != nil || names.String() != "__name__, instance, job" {
		t.Fatalf("label names: %v %v", names, err)
	}
	vals, _, _, err := api.LabelValues(ctx, "le", nil, time.UnixMilli(base), end)
	if err != nil || len(vals) != 4 || vals[0] != model.LabelValue("+Inf") {
		t.Fatalf("label values: %v %v", vals, err)
	}
	series, _, _, err := api.Series(ctx, []string{`e2e_http_requests_total`}, time.UnixMilli(base), end)
	if err != nil || len(series) != 3 {
		t.Fatalf("series: %v %v", series, err)
	}
	if _, err := api.Buildinfo(ctx); err != nil {
		t.Fatalf("buildinfo: %v", err)
	}
	if r, err := api.Rules(ctx, nil); err != nil || len(r.Groups) != 0 {
		t.Fatalf("rules: %v %v", r, err)
	}
	if _, err := api.Metadata(ctx, "", ""); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	// An execution error comes back as the client's API error.
	_, _, _, err = api.Query(ctx, `e2e_http_requests_total + on(job) e2e_http_requests_total`, end)
	var ae *promv1.Error
	if !errors.As(err, &ae) || ae.Type != promv1.ErrExec {
		t.Fatalf("many-to-many match: %v, want an execution error", err)
	}
}

// TestPromWriteStatuses checks remote write's answers on the real binary
// with Prometheus' write client (storage/remote.Client.Store).
func TestPromWriteStatuses(t *testing.T) {
	s := start(t, t.TempDir(), "-prom-write-max-decoded-bytes", "100000")
	u, _ := url.Parse(s.url + "/api/v1/write")
	client := func(msg remoteapi.WriteMessageType) remote.WriteClient {
		c, err := remote.NewWriteClient("hourglass", &remote.ClientConfig{URL: &config_util.URL{URL: u},
			Timeout: model.Duration(30 * time.Second), HTTPClientConfig: config_util.DefaultHTTPClientConfig, WriteProtoMsg: msg})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	now := time.Now().UnixMilli()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "ok_total", "a", "1"), nil), Samples: []writev2.Sample{{Value: 1, Timestamp: now}, {Value: 2, Timestamp: now + 1}}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("job", "no name"), nil), Samples: []writev2.Sample{{Value: 1, Timestamp: now}}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "ok_total", "a", "2"), nil), Samples: []writev2.Sample{{Value: 3, Timestamp: now}}},
	}}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	stats, err := client(remoteapi.WriteV2MessageType).Store(context.Background(), snappy.Encode(nil, b), 0)
	var rec remote.RecoverableError
	if err == nil || errors.As(err, &rec) || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `{job="no name"}`) {
		t.Fatalf("a request with an invalid series: %v; want a 400 naming it, not to be retried", err)
	}
	if stats.Samples != 3 || !stats.Confirmed {
		t.Fatalf("stats %+v: the 3 valid samples are written and the headers say so", stats)
	}
	// A valid 1.0 request: 204, and no Written headers.
	v1 := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "v1_total"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: now}}}}}
	b, _ = v1.Marshal()
	stats, err = client(remoteapi.WriteV1MessageType).Store(context.Background(), snappy.Encode(nil, b), 0)
	if err != nil || stats.Confirmed {
		t.Fatalf("1.0 request: %v, stats %+v (no Written headers for 1.0)", err, stats)
	}
	// A body over the decoded limit.
	big := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: strings.Repeat("x", 200000)}}}}}
	b, _ = big.Marshal()
	if _, err = client(remoteapi.WriteV1MessageType).Store(context.Background(), snappy.Encode(nil, b), 0); err == nil || !strings.Contains(err.Error(), "413") {
		t.Fatalf("over the limit: %v", err)
	}
	// A header claiming 1 GiB decoded: refused before anything is allocated.
	if code, body := s.do("POST", "/api/v1/write", "application/x-protobuf", []byte{0x80, 0x80, 0x80, 0x80, 0x04, 0, 0}); code != 413 {
		t.Fatalf("claimed 1 GiB: %d %s", code, body)
	}
	if code, _ := s.do("POST", "/api/v1/write", "application/json", []byte("{}")); code != 415 {
		t.Fatalf("JSON: %d", code)
	}
	// Everything valid was stored.
	got := promInstant(t, s, "GET", `ok_total`, now+1)
	if got[`{__name__="ok_total", a="1"}`] != "2" || got[`{__name__="ok_total", a="2"}`] != "3" {
		t.Fatalf("stored: %v", got)
	}
}

// TestPromOpenTSDBInterop: one storage, two languages.
func TestPromOpenTSDBInterop(t *testing.T) {
	s := start(t, t.TempDir())
	base := time.Now().Add(-time.Hour).Truncate(time.Hour).UnixMilli()
	// OpenTSDB in, PromQL out.
	s.put([]point{
		{metric: "sys.cpu.user", tags: map[string]string{"host": "a"}, ts: base, value: int64(42)},
		{metric: "sys.cpu.user", tags: map[string]string{"host": "a"}, ts: base + 60000, value: 43.5},
		{metric: "sys.cpu.user", tags: map[string]string{"host": "b"}, ts: base, value: int64(7)},
	})
	s.telnetPut([]point{{metric: "sys.cpu.user", tags: map[string]string{"host": "a"}, ts: base + 120000, value: int64(44)}})
	got := promInstant(t, s, "GET", `{__name__="sys.cpu.user", host="a"}`, base+60000)
	if len(got) != 1 || got[`{__name__="sys.cpu.user", host="a"}`] != "43.5" {
		t.Fatalf("PromQL over OpenTSDB data: %v", got)
	}
	got = promInstant(t, s, "POST", `sum({"sys.cpu.user"})`, base)
	if got["{}"] != "49" {
		t.Fatalf("sum: %v", got)
	}
	code, env := promAPI(t, s, "GET", "/api/v1/query_range", url.Values{"query": {`{__name__="sys.cpu.user",host="a"}`},
		"start": {promSeconds(base)}, "end": {promSeconds(base + 120000)}, "step": {"60"}})
	wantRange := `{"resultType":"matrix","result":[{"metric":{"__name__":"sys.cpu.user","host":"a"},"values":[[` + promSeconds(base) + `,"42"],[` +
		promSeconds(base+60000) + `,"43.5"],[` + promSeconds(base+120000) + `,"44"]]}]}`
	if code != 200 || string(env["data"]) != wantRange {
		t.Fatalf("range over OpenTSDB data:\n%s\nwant\n%s", env["data"], wantRange)
	}
	// Prometheus in, OpenTSDB out.
	v1 := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "node_load1"}, {Name: "instance", Value: "x:9100"}, {Name: "job", Value: "node"}},
			Samples: []prompb.Sample{{Value: 0.5, Timestamp: base}, {Value: 1.25, Timestamp: base + 15000}}},
	}}
	b, _ := v1.Marshal()
	if code, body := s.do("POST", "/api/v1/write", "application/x-protobuf", snappy.Encode(nil, b)); code != 204 {
		t.Fatalf("remote write: %d %s", code, body)
	}
	raw := s.raw("node_load1", base, base+15000)
	if len(raw) != 1 {
		t.Fatalf("OpenTSDB read: %v", raw)
	}
	for k, dps := range raw {
		if !strings.Contains(k, "instance=x:9100") || !strings.Contains(k, "job=node") || len(dps) != 2 ||
			dps[0][1].String() != "0.5" || dps[1][1].String() != "1.25" {
			t.Fatalf("OpenTSDB read: %s %v", k, dps)
		}
	}
	// And through /api/query with a JSON body and a filter, as Grafana's OpenTSDB data source sends it.
	code, body := s.postJSON("/api/query", map[string]any{"start": base / 1000, "end": base/1000 + 60,
		"queries": []map[string]any{{"metric": "node_load1", "aggregator": "sum",
			"filters": []map[string]any{{"type": "literal_or", "tagk": "job", "filter": "node", "groupBy": true}}}}})
	var res []struct {
		Metric string             `json:"metric"`
		Tags   map[string]string  `json:"tags"`
		DPS    map[string]float64 `json:"dps"`
	}
	if err := json.Unmarshal(body, &res); code != 200 || err != nil || len(res) != 1 || res[0].Tags["job"] != "node" ||
		res[0].DPS[promSeconds(base)] != 0.5 || res[0].DPS[promSeconds(base+15000)] != 1.25 {
		t.Fatalf("/api/query: %d %s", code, body)
	}
}
