package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// batchOf makes a batch in the order a worker sends: steps of all series.
func batchOf(t *testing.T, series, steps int) []Point {
	t.Helper()
	g := mustGen(t, GenConfig{Seed: 3, Series: series, Interval: 10 * time.Second, Start: t0, Steps: steps})
	return g.Source(0, 1).Fill(nil, series*steps, math.MaxInt64)
}

// want is the points of a batch keyed as the decoders below key them.
func want(pts []Point) map[string]float64 {
	m := map[string]float64{}
	for _, p := range pts {
		m[p.S.Key()+"@"+strconv.FormatInt(p.T, 10)] = p.V.F()
	}
	return m
}

func sameAs(t *testing.T, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d points decoded, want %d", len(got), len(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Float64bits(g) != math.Float64bits(v) {
			t.Fatalf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func TestPutJSON(t *testing.T) {
	pts := batchOf(t, 30, 3)
	body, err := appendPutJSON(nil, pts)
	if err != nil {
		t.Fatal(err)
	}
	var dps []struct {
		Metric    string            `json:"metric"`
		Timestamp int64             `json:"timestamp"`
		Value     json.Number       `json:"value"`
		Tags      map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(body, &dps); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	got := map[string]float64{}
	for i, dp := range dps {
		v, err := dp.Value.Float64()
		if err != nil {
			t.Fatal(err)
		}
		if dp.Timestamp > 1e10 {
			t.Fatalf("whole-second timestamp %d sent in milliseconds", dp.Timestamp)
		}
		if !pts[i].V.IsFloat && strings.Contains(string(dp.Value), ".") {
			t.Fatalf("integer %v sent as %s", pts[i].V, dp.Value)
		}
		got[SeriesKey(dp.Metric, dp.Tags)+"@"+strconv.FormatInt(dp.Timestamp*1000, 10)] = v
	}
	sameAs(t, got, want(pts))
	if string(appendTimestamp(nil, 1_700_000_000_123)) != "1700000000123" {
		t.Fatal("a millisecond timestamp is not sent in milliseconds")
	}
}

func TestTelnetLines(t *testing.T) {
	pts := batchOf(t, 13, 2)
	got := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSuffix(string(appendTelnet(nil, pts)), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 9 || f[0] != "put" {
			t.Fatalf("line %q: want put metric ts value and five tags", line)
		}
		ts, err1 := strconv.ParseInt(f[2], 10, 64)
		v, err2 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %q: %v %v", line, err1, err2)
		}
		tags := map[string]string{}
		for _, kv := range f[4:] {
			k, val, _ := strings.Cut(kv, "=")
			tags[k] = val
		}
		got[SeriesKey(f[1], tags)+"@"+strconv.FormatInt(ts*1000, 10)] = v
	}
	sameAs(t, got, want(pts))
}

func TestRemoteWrite1(t *testing.T) {
	pts := batchOf(t, 25, 4)
	e := &rw1Encoder{}
	for round := range 2 { // the second reuses the encoder's buffers
		body, err := e.encode(nil, pts)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			t.Fatalf("round %d: not snappy: %v", round, err)
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(raw); err != nil {
			t.Fatalf("round %d: not a WriteRequest: %v", round, err)
		}
		if len(req.Timeseries) != 25 {
			t.Fatalf("%d time series, want one per series (25)", len(req.Timeseries))
		}
		got := map[string]float64{}
		for _, ts := range req.Timeseries {
			tags := map[string]string{}
			name := ""
			for i, l := range ts.Labels {
				if i > 0 && ts.Labels[i-1].Name >= l.Name {
					t.Fatalf("labels not sorted: %v", ts.Labels)
				}
				if l.Name == "__name__" {
					name = l.Value
				} else {
					tags[l.Name] = l.Value
				}
			}
			for i, s := range ts.Samples {
				if i > 0 && s.Timestamp <= ts.Samples[i-1].Timestamp {
					t.Fatal("samples out of order")
				}
				got[SeriesKey(name, tags)+"@"+strconv.FormatInt(s.Timestamp, 10)] = s.Value
			}
		}
		sameAs(t, got, want(pts))
	}
}

func TestRemoteWrite2(t *testing.T) {
	pts := batchOf(t, 25, 4)
	e := &rw2Encoder{symbols: writev2.NewSymbolTable()}
	for round := range 2 {
		body, err := e.encode(nil, pts)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			t.Fatalf("round %d: not snappy: %v", round, err)
		}
		var req writev2.Request
		if err := req.Unmarshal(raw); err != nil {
			t.Fatalf("round %d: not a v2 Request: %v", round, err)
		}
		if len(req.Symbols) == 0 || req.Symbols[0] != "" {
			t.Fatal("symbol table must start with the empty string")
		}
		got := map[string]float64{}
		for _, ts := range req.Timeseries {
			if len(ts.LabelsRefs)%2 != 0 {
				t.Fatal("odd labels_refs")
			}
			tags := map[string]string{}
			name := ""
			prev := ""
			for i := 0; i < len(ts.LabelsRefs); i += 2 {
				k, v := req.Symbols[ts.LabelsRefs[i]], req.Symbols[ts.LabelsRefs[i+1]]
				if k <= prev {
					t.Fatalf("labels not sorted at %q", k)
				}
				prev = k
				if k == "__name__" {
					name = v
				} else {
					tags[k] = v
				}
			}
			md := Metrics[MetricIndex(name)]
			wantType := writev2.Metadata_METRIC_TYPE_GAUGE
			if md.Kind == Counter {
				wantType = writev2.Metadata_METRIC_TYPE_COUNTER
			}
			if ts.Metadata.Type != wantType {
				t.Fatalf("%s: type %v, want %v", name, ts.Metadata.Type, wantType)
			}
			for _, s := range ts.Samples {
				got[SeriesKey(name, tags)+"@"+strconv.FormatInt(s.Timestamp, 10)] = s.Value
			}
		}
		sameAs(t, got, want(pts))
	}
}

func TestReplies(t *testing.T) {
	resp := func(code int, hdr ...string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
	for _, tc := range []struct {
		name               string
		r                  sendResult
		accepted, rejected int
		wantErr            bool
	}{
		{"put 204", putReply(resp(204), nil, 10), 10, 0, false},
		{"put summary 200", putReply(resp(200), []byte(`{"success":10,"failed":0}`), 10), 10, 0, false},
		{"put summary 400", putReply(resp(400), []byte(`{"success":7,"failed":3,"errors":[{"error":"bad"}]}`), 10), 7, 3, true},
		{"put 400 no summary", putReply(resp(400), []byte(`{"error":{}}`), 10), 0, 10, true},
		{"put 503", putReply(resp(503), []byte(`busy`), 10), 0, 0, true},
		{"rw 204", rwReply(resp(204), nil, 10), 10, 0, false},
		{"rw 204 partial header", rwReply(resp(204, "X-Prometheus-Remote-Write-Samples-Written", "6"), nil, 10), 6, 4, true},
		{"rw 400 with header", rwReply(resp(400, "X-Prometheus-Remote-Write-Samples-Written", "8"), []byte("out of bounds"), 10), 8, 2, true},
		{"rw 204 samples and histograms", rwReply(resp(204, "X-Prometheus-Remote-Write-Samples-Written", "7",
			"X-Prometheus-Remote-Write-Histograms-Written", "3"), nil, 10), 10, 0, false},
		{"rw 400 samples and histograms", rwReply(resp(400, "X-Prometheus-Remote-Write-Samples-Written", "5",
			"X-Prometheus-Remote-Write-Histograms-Written", "2"), []byte("bad"), 10), 7, 3, true},
		{"rw 400", rwReply(resp(400), []byte("bad"), 10), 0, 10, true},
		{"rw 500", rwReply(resp(500), []byte("oops"), 10), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.accepted != tc.accepted || tc.r.rejected != tc.rejected || (tc.r.err != nil) != tc.wantErr {
				t.Fatalf("got accepted %d rejected %d err %v; want %d %d err %v",
					tc.r.accepted, tc.r.rejected, tc.r.err, tc.accepted, tc.rejected, tc.wantErr)
			}
		})
	}
}

// fakeTelnet is a line server: it answers "version" with two lines (if
// answerVersion) and a put of metric reject_me with an error line, and
// counts the other puts.
func fakeTelnet(t *testing.T, answerVersion bool) (addr string, puts *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	puts = &atomic.Int64{}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					switch {
					case len(f) == 0:
					case f[0] == "version" && answerVersion:
						io.WriteString(c, "fake 1.0\nBuilt with go\n")
					case f[0] == "put" && len(f) > 1 && f[1] == "reject_me":
						io.WriteString(c, "put: illegal argument: rejected\n")
					case f[0] == "put":
						puts.Add(1)
					case f[0] == "exit":
						return
					}
				}
			})
		}
	})
	return ln.Addr().String(), puts
}

func TestTelnetSender(t *testing.T) {
	pts := batchOf(t, 12, 2)
	t.Run("sync", func(t *testing.T) {
		addr, puts := fakeTelnet(t, true)
		s, err := dialTelnet(context.Background(), senderConfig{addr: addr, telnetSync: true, probeQuiet: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		if !s.sync || s.replyLines != 2 {
			t.Fatalf("sync %v with %d reply lines, want true and 2", s.sync, s.replyLines)
		}
		r := s.send(context.Background(), pts)
		if r.accepted != len(pts) || r.rejected != 0 || r.err != nil {
			t.Fatalf("clean batch: %+v", r)
		}
		if puts.Load() != int64(len(pts)) {
			t.Fatalf("server read %d puts before the reply, want %d", puts.Load(), len(pts))
		}
		bad := append([]Point(nil), pts...)
		bad[3].S = &Series{Metric: "reject_me"}
		bad[7].S = bad[3].S
		r = s.send(context.Background(), bad)
		if r.accepted != len(pts)-2 || r.rejected != 2 || r.err == nil || !strings.Contains(r.err.Error(), "rejected") {
			t.Fatalf("batch with two refused lines: %+v", r)
		}
		if r = s.send(context.Background(), pts[:3]); r.accepted != 3 || r.rejected != 0 {
			t.Fatalf("the batch after: %+v (a reply line left over from the last?)", r)
		}
	})
	t.Run("no version reply", func(t *testing.T) {
		addr, puts := fakeTelnet(t, false)
		s, err := dialTelnet(context.Background(), senderConfig{addr: addr, telnetSync: true, probeFirst: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if s.sync {
			t.Fatal("sync on although the server answers nothing to version")
		}
		r := s.send(context.Background(), pts)
		if r.unconfirmed != len(pts) || r.accepted != 0 || r.err != nil {
			t.Fatalf("unacknowledged batch: %+v", r)
		}
		s.close()
		deadline := time.Now().Add(10 * time.Second)
		for puts.Load() < int64(len(pts)) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if puts.Load() != int64(len(pts)) {
			t.Fatalf("server read %d puts, want %d", puts.Load(), len(pts))
		}
	})
}

// TestWriteAgainstFake runs Write against an /api/put and remote-write
// receiver that decodes every body and keeps every point, and checks the
// server got exactly the generator's data and the report says so.
func TestWriteAgainstFake(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dialect   string
		maxPoints int64
		rate      float64
	}{
		{"put, all", DialectPut, 0, 0},
		{"rw1, bounded points", DialectRW1, 1234, 0},
		{"rw2, rate", DialectRW2, 0, 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]float64{}
			lastTs := map[string]int64{}
			var newest int64 // the newest timestamp any request has brought
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				add := func(k string, ts int64, v float64) {
					if ts <= lastTs[k] {
						t.Errorf("%s: %d after %d", k, ts, lastTs[k])
					}
					// The workers keep within MaxSkew (30s) of each other,
					// give or take the steps of a batch in flight (a batch of
					// 97 points over 20 series spans 6 steps, 60s).
					if newest-ts > (30+60+10)*1000 {
						t.Errorf("%s: %d arrives %ds behind the newest point sent", k, ts, (newest-ts)/1000)
					}
					newest = max(newest, ts)
					lastTs[k] = ts
					got[k+"@"+strconv.FormatInt(ts, 10)] = v
				}
				switch r.URL.Path {
				case "/api/put":
					var dps []struct {
						Metric    string
						Timestamp int64
						Value     float64
						Tags      map[string]string
					}
					if err := json.Unmarshal(body, &dps); err != nil {
						http.Error(w, err.Error(), 400)
						return
					}
					for _, dp := range dps {
						add(SeriesKey(dp.Metric, dp.Tags), dp.Timestamp*1000, dp.Value)
					}
				case "/api/v1/write":
					raw, err := snappy.Decode(nil, body)
					if err != nil {
						http.Error(w, err.Error(), 400)
						return
					}
					v2 := strings.Contains(r.Header.Get("Content-Type"), "io.prometheus.write.v2.Request")
					if v2 {
						var req writev2.Request
						if err := req.Unmarshal(raw); err != nil {
							http.Error(w, err.Error(), 400)
							return
						}
						for _, ts := range req.Timeseries {
							tags := map[string]string{}
							for i := 0; i < len(ts.LabelsRefs); i += 2 {
								tags[req.Symbols[ts.LabelsRefs[i]]] = req.Symbols[ts.LabelsRefs[i+1]]
							}
							name := tags["__name__"]
							delete(tags, "__name__")
							for _, s := range ts.Samples {
								add(SeriesKey(name, tags), s.Timestamp, s.Value)
							}
						}
					} else {
						var req prompb.WriteRequest
						if err := req.Unmarshal(raw); err != nil {
							http.Error(w, err.Error(), 400)
							return
						}
						for _, ts := range req.Timeseries {
							tags := map[string]string{}
							for _, l := range ts.Labels {
								tags[l.Name] = l.Value
							}
							name := tags["__name__"]
							delete(tags, "__name__")
							for _, s := range ts.Samples {
								add(SeriesKey(name, tags), s.Timestamp, s.Value)
							}
						}
					}
				default:
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			defer srv.Close()
			g := mustGen(t, GenConfig{Seed: 11, Series: 60, Interval: 10 * time.Second, Start: t0, Steps: 40, Churn: 3})
			r, err := Write(context.Background(), g, WriteConfig{
				Dialect: tc.dialect, URL: srv.URL, Workers: 3, BatchSize: 97, MaxPoints: tc.maxPoints,
				Rate: tc.rate, Duration: time.Minute, MaxSkew: 30 * time.Second, ServerPID: -1,
			})
			if err != nil {
				t.Fatal(err)
			}
			wantN := g.Points()
			if tc.maxPoints > 0 {
				wantN = tc.maxPoints
			}
			if r.PointsSent != wantN || r.PointsAccepted != wantN || r.PointsRejected != 0 || r.RequestErrors != 0 {
				t.Fatalf("report: sent %d accepted %d rejected %d failed requests %d; want %d sent and accepted (errors %v)",
					r.PointsSent, r.PointsAccepted, r.PointsRejected, r.RequestErrors, wantN, r.Errors)
			}
			if int64(len(got)) != wantN {
				t.Fatalf("server got %d points, want %d", len(got), wantN)
			}
			if tc.maxPoints == 0 {
				if r.Stopped != "data" {
					t.Fatalf("stopped by %q, want data", r.Stopped)
				}
				all := map[string]float64{}
				g.Each(func(p Point) { all[p.S.Key()+"@"+strconv.FormatInt(p.T, 10)] = p.V.F() })
				sameAs(t, got, all)
			} else if r.Stopped != "points" {
				t.Fatalf("stopped by %q, want points", r.Stopped)
			}
			if tc.rate > 0 {
				// The last batch may go when the points before it are due:
				// the run cannot be shorter (a lower bound, whatever the load).
				if least := float64(wantN-97) / tc.rate; r.Seconds < least {
					t.Fatalf("%d points at %v/s took %.3fs, less than %.3fs", wantN, tc.rate, r.Seconds, least)
				}
			}
			if wantReq := (wantN + 96) / 97; r.Requests < wantReq || r.Latency.Count != int(r.Requests) {
				t.Fatalf("%d requests (%d latencies) for %d points in batches of 97", r.Requests, r.Latency.Count, wantN)
			}
		})
	}
}

func TestWriteStopsAtDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	// Endless and live: a step every 10s, so only the duration ends it.
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: 10 * time.Second, Start: time.Now()})
	r, err := Write(context.Background(), g, WriteConfig{
		Dialect: DialectPut, URL: srv.URL, Workers: 2, BatchSize: 100, Duration: 300 * time.Millisecond, Live: true, ServerPID: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stopped != "duration" {
		t.Fatalf("stopped by %q, want duration", r.Stopped)
	}
	// Only the first step was due.
	if r.PointsSent != 24 {
		t.Fatalf("sent %d points, want the 24 of the one step due", r.PointsSent)
	}
	if _, err := Write(context.Background(), g, WriteConfig{Dialect: DialectPut, URL: srv.URL, Workers: 1, BatchSize: 1}); err == nil {
		t.Fatal("a run with no duration bound was accepted")
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain-name_1.2/x", `q"uote`, `back\slash`, "tab\there", "ünïcode", "\x7f", "\u2028"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("appendJSONString(%q) = %s: reads back as %q, %v", s, got, back, err)
		}
	}
}
