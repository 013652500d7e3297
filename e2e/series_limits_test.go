package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"

	"hourglass/loadtest"
)

// limitsWriteClient is Prometheus' own remote-write client to s.
func limitsWriteClient(t *testing.T, s *server, msg remoteapi.WriteMessageType) remote.WriteClient {
	t.Helper()
	u, _ := url.Parse(s.url + "/api/v1/write")
	c, err := remote.NewWriteClient("hourglass", &remote.ClientConfig{URL: &config_util.URL{URL: u},
		Timeout: model.Duration(120 * time.Second), HTTPClientConfig: config_util.DefaultHTTPClientConfig, WriteProtoMsg: msg})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statusSeries is the series count of /api/status (the index's).
func statusSeries(t *testing.T, s *server) int {
	t.Helper()
	code, body := s.do("GET", "/api/status", "", nil)
	if code != 200 {
		t.Fatalf("/api/status: %d %s", code, body)
	}
	var st struct {
		Series int `json:"series"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st.Series
}

// refusedMetric reads hourglass_series_refused_total{limit=...} from /metrics.
func refusedMetric(t *testing.T, s *server, limit string) int {
	t.Helper()
	_, body := s.do("GET", "/metrics", "", nil)
	m := regexp.MustCompile(`(?m)^hourglass_series_refused_total\{limit="` + limit + `"\} (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no hourglass_series_refused_total{limit=%q} in /metrics", limit)
	}
	n, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestSeriesLimitMillionNewSeries sends one remote-write request with a
// million new series, with 10 series that exist, on the default limits:
// answered within seconds with a 400 that Prometheus does not retry and
// that names -max-new-series-per-request; the existing series' samples and
// the first 100,000 new series (the default limit) are stored, nothing
// past them.
func TestSeriesLimitMillionNewSeries(t *testing.T) {
	// Under -race every series costs ~10 times more: the request holds
	// 200,000 new series and the limit is 10,000, so the test stays in
	// seconds; the path is the same.
	n, limit, args := 1_000_000, 100_000, []string{}
	if raceEnabled {
		n, limit, args = 200_000, 10_000, []string{"-max-new-series-per-request", "10000"}
	}
	s := start(t, t.TempDir(), args...)
	now := time.Now().UnixMilli()
	existing := &prompb.WriteRequest{}
	for i := range 10 {
		existing.Timeseries = append(existing.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "card_existing"}, {Name: "i", Value: strconv.Itoa(i)}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: now}}})
	}
	b, _ := existing.Marshal()
	c := limitsWriteClient(t, s, remoteapi.WriteV1MessageType)
	if _, err := c.Store(context.Background(), snappy.Encode(nil, b), 0); err != nil {
		t.Fatal(err)
	}
	req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, n+10)}
	for i := range n {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "card_new"}, {Name: "id", Value: strconv.Itoa(i)}},
			Samples: []prompb.Sample{{Value: float64(i), Timestamp: now}}})
	}
	for _, ts := range existing.Timeseries { // at the end: after the limit is reached
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: ts.Labels, Samples: []prompb.Sample{{Value: 2, Timestamp: now + 1000}}})
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body := snappy.Encode(nil, b)
	req = nil
	t.Logf("%d series, %d bytes (snappy)", n+10, len(body))
	cpu0, cpuErr := loadtest.ProcCPU(s.cmd.Process.Pid)
	began := time.Now()
	_, err = c.Store(context.Background(), body, 0)
	took := time.Since(began)
	cpu1, cpuErr1 := loadtest.ProcCPU(s.cmd.Process.Pid)
	t.Logf("answered in %v (server CPU %.1f s): %v", took, cpu1-cpu0, err)
	var rec remote.RecoverableError
	if err == nil || errors.As(err, &rec) || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "-max-new-series-per-request") {
		t.Fatalf("a million new series: %v; want a 400 naming -max-new-series-per-request, not to be retried", err)
	}
	// The work spent is bounded: the server's CPU for the request, which
	// a loaded machine does not inflate as it does the wall clock (a wall
	// bound of 60 s failed once under -race at load 25). Generous: -race.
	if cpuErr != nil || cpuErr1 != nil {
		t.Fatalf("server CPU: %v, %v", cpuErr, cpuErr1)
	}
	if cpu1-cpu0 > 60 {
		t.Fatalf("answered after %.1f s of server CPU (%v wall)", cpu1-cpu0, took)
	}
	// The peak RSS stays under issue 11's 1 GiB on defaults (the race
	// detector's shadow memory not counted: not checked under -race).
	if hwm := vmHWM(t, s); !raceEnabled && hwm > 1<<30 {
		t.Fatalf("peak RSS %d MiB, over 1 GiB", hwm>>20)
	} else {
		t.Logf("peak RSS %d MiB", hwm>>20)
	}
	if got := statusSeries(t, s); got != 10+limit {
		t.Fatalf("the store holds %d series, want 10 + %d", got, limit)
	}
	if got := refusedMetric(t, s, "max_new_series_per_request"); got != n-limit {
		t.Fatalf("hourglass_series_refused_total{limit=max_new_series_per_request} = %d, want %d", got, n-limit)
	}
	// The existing series' second samples were stored.
	code, out := s.do("GET", "/api/v1/query?query=sum(card_existing)&time="+strconv.FormatInt((now+1000)/1000+1, 10), "", nil)
	if code != 200 || !strings.Contains(string(out), `"20"`) {
		t.Fatalf("sum of the existing series after the request: %d %s, want 20", code, out)
	}
}

// TestSeriesLimitOpenTSDBPutDetails: with -max-series reached, a put of
// existing and new series stores the existing ones (success) and refuses
// the new ones naming the limit, leaving no UID for their names.
func TestSeriesLimitOpenTSDBPutDetails(t *testing.T) {
	s := start(t, t.TempDir(), "-max-series", "20")
	ts := time.Now().Unix() - 60
	var first []string
	for i := range 20 {
		first = append(first, otsDP("card.put", ts, "1", "host", fmt.Sprintf("old%02d", i)))
	}
	otsPutOK(t, s, otsArr(first...))
	var mix []string
	for i := range 10 {
		mix = append(mix, otsDP("card.put", ts+1, "2", "host", fmt.Sprintf("old%02d", i)))
		mix = append(mix, otsDP("card.put", ts+1, "3", "host", fmt.Sprintf("new%02d", i)))
	}
	code, _, body := otsCall(t, s, "POST", "/api/put?details", []byte(otsArr(mix...)))
	var rep struct {
		Success, Failed int
		Errors          []struct {
			Error string
		}
	}
	otsDecode(t, body, &rep)
	if code != 400 || rep.Success != 10 || rep.Failed != 10 || len(rep.Errors) != 10 {
		t.Fatalf("put of 10 existing and 10 new series over -max-series: %d %s", code, body)
	}
	for _, e := range rep.Errors {
		if !strings.Contains(e.Error, "-max-series") {
			t.Fatalf("error %q does not name the limit", e.Error)
		}
	}
	// Without details, the error names the limit too.
	code, _, body = otsCall(t, s, "POST", "/api/put", []byte(otsDP("card.put", ts, "3", "host", "new99")))
	if code != 400 || !strings.Contains(string(body), "-max-series") {
		t.Fatalf("put of a new series: %d %s", code, body)
	}
	if got := statusSeries(t, s); got != 20 {
		t.Fatalf("the store holds %d series, want 20", got)
	}
	// The existing series' points are stored; the new names have no UID.
	rs := otsQueryGET(t, s, fmt.Sprintf("start=%d&end=%d&m=sum:card.put", ts, ts+10))
	if r := otsSingle(t, "sum", rs); r.points(t)[ts+1] != "20" {
		t.Fatalf("sum at ts+1: %v, want 20 (10 existing series × 2)", r.points(t))
	}
	code, body = s.do("GET", "/api/suggest?type=tagv&q=new", "", nil)
	if code != 200 || string(body) != "[]" {
		t.Fatalf("tag values of refused series: %d %s, want none", code, body)
	}
	if got := refusedMetric(t, s, "max_series"); got != 11 {
		t.Fatalf("hourglass_series_refused_total{limit=max_series} = %d, want 11", got)
	}
}

// TestSeriesLimitRemoteWrite2Written: a 2.0 request over
// -max-series-per-metric is a 400 naming it, and its Written header counts
// the stored samples only.
func TestSeriesLimitRemoteWrite2Written(t *testing.T) {
	s := start(t, t.TempDir(), "-max-series-per-metric", "5")
	now := time.Now().UnixMilli()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i := range 8 { // 5 stored, 3 refused, two samples each
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
			LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "card_v2", "i", strconv.Itoa(i)), nil),
			Samples:    []writev2.Sample{{Value: 1, Timestamp: now}, {Value: 2, Timestamp: now + 1}}})
	}
	req.Timeseries = append(req.Timeseries, writev2.TimeSeries{ // another metric: under its own limit
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "card_other"), nil),
		Samples:    []writev2.Sample{{Value: 1, Timestamp: now}}})
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	stats, err := limitsWriteClient(t, s, remoteapi.WriteV2MessageType).Store(context.Background(), snappy.Encode(nil, b), 0)
	var rec remote.RecoverableError
	if err == nil || errors.As(err, &rec) || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "-max-series-per-metric") {
		t.Fatalf("over -max-series-per-metric: %v; want a 400 naming it, not to be retried", err)
	}
	if !stats.Confirmed || stats.Samples != 11 {
		t.Fatalf("stats %+v: want the 11 stored samples (5 series × 2 + 1) confirmed", stats)
	}
	if got := statusSeries(t, s); got != 6 {
		t.Fatalf("the store holds %d series, want 6", got)
	}
}
