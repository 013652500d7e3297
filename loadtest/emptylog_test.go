package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEmptyAnswersCountedAndLogged: every answer with no series is counted
// in its kind and recorded, the request with it, also when other answers
// of the same kind and round had series (a round's mean of series is then
// not 0, which is all the soak's count looked at before 2026-11-28).
func TestEmptyAnswersCountedAndLogged(t *testing.T) {
	var rates atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"aggregator":"none","metric"`)) && !bytes.Contains(body, []byte(`0all-max`)):
			fmt.Fprint(w, `[]`) // the raw kind: always empty
		case bytes.Contains(body, []byte(`"rate":true`)) && rates.Add(1) == 1:
			fmt.Fprint(w, `[]`) // the first rate query: empty
		default:
			fmt.Fprint(w, `[{"metric":"m","tags":{},"aggregateTags":[],"dps":{"1":1}}]`)
		}
	}))
	defer srv.Close()
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: 10 * time.Second, Start: t0, Steps: 100})
	var log bytes.Buffer
	el := &EmptyLog{W: &log, Max: 2, Newest: new(atomic.Int64)}
	el.Newest.Store(g.StepTime(99))
	r, err := RunQueries(context.Background(), g, QueryConfig{Dialect: QueryOpenTSDB, URL: srv.URL, Concurrency: 2,
		Queries: 2 * len(QueryKinds), Duration: time.Minute, End: g.StepTime(99), ServerPID: -1, Empties: el})
	if err != nil {
		t.Fatal(err)
	}
	if q := r.Queries[KindRate]; q.Latency.Count != 2 || q.Empty != 1 || q.Series != 0.5 {
		t.Fatalf("rate: %+v, want 2 answers, 1 empty", q)
	}
	if q := r.Queries[KindRaw]; q.Empty != 2 || q.Series != 0 {
		t.Fatalf("raw: %+v, want 2 empty answers", q)
	}
	if q := r.Queries[KindSum]; q.Empty != 0 {
		t.Fatalf("sum: %+v, want no empty answer", q)
	}
	sq := &SoakQueries{}
	sq.add(r, map[string]*Latencies{})
	if sq.Empty != 3 || sq.Kinds[KindRate].Empty != 1 {
		t.Fatalf("soak's count: %d empty, rate %d; want 3 and 1", sq.Empty, sq.Kinds[KindRate].Empty)
	}
	// Two recorded (Max), the third dropped.
	if n, err := el.Recorded(); n != 2 || err != nil || el.Dropped != 1 {
		t.Fatalf("recorded %d (%v), dropped %d; want 2 and 1", n, err, el.Dropped)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), log.String())
	}
	for _, l := range lines {
		var a EmptyAnswer
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatal(err)
		}
		if a.Dialect != QueryOpenTSDB || a.Method != http.MethodPost || a.Path != "/api/query" || a.Status != 200 ||
			a.Answer != "[]" || a.NewestSentMs != g.StepTime(99) || a.Sent.IsZero() {
			t.Fatalf("recorded %+v", a)
		}
		// The body is the query as sent: its range is the record's.
		var body struct{ Start, End int64 }
		if err := json.Unmarshal([]byte(a.Body), &body); err != nil || body.Start != a.Start || body.End != a.End ||
			!strings.Contains(a.Body, `"aggregator"`) {
			t.Fatalf("body %q (%v), range %d..%d", a.Body, err, a.Start, a.End)
		}
	}
}

// TestEmptyLogPromRequest: a PromQL answer with no series is recorded with
// its query string, to be sent again as it was.
func TestEmptyLogPromRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer srv.Close()
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: 10 * time.Second, Start: t0, Steps: 100})
	var log bytes.Buffer
	el := &EmptyLog{W: &log, Phase: "soak"}
	r, err := RunQueries(context.Background(), g, QueryConfig{Dialect: QueryProm, URL: srv.URL, Concurrency: 1,
		Kinds: []string{KindRate}, Queries: 1, Duration: time.Minute, End: g.StepTime(99), ServerPID: -1, Empties: el})
	if err != nil || r.Queries[KindRate].Empty != 1 {
		t.Fatalf("%v %+v", err, r.Queries[KindRate])
	}
	var a EmptyAnswer
	if err := json.Unmarshal(log.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if a.Phase != "soak" || a.Kind != KindRate || a.Method != http.MethodGet || !strings.HasPrefix(a.Path, "/api/v1/query_range?") ||
		!strings.Contains(a.Path, "rate%28") || a.Body != "" {
		t.Fatalf("recorded %+v", a)
	}
}

func TestFirstAnswerEnd(t *testing.T) {
	const s = 30_000
	for _, tc := range []struct{ first, want int64 }{
		{1_000 * s, 1_002 * s},   // on a bucket's start
		{1_000*s + 1, 1_002 * s}, // just after
		{1_001*s - 1, 1_002 * s}, // its bucket's last ms
		{-s - 1, -s - s + 2*s},   // before 1970: still aligned down
		{1_795_886_447_360, 1_795_886_490_000},
	} {
		if got := firstAnswerEnd(tc.first, s*time.Millisecond); got != tc.want {
			t.Errorf("firstAnswerEnd(%d, 30s) = %d, want %d", tc.first, got, tc.want)
		}
	}
	if got := firstAnswerEnd(123, 0); got != 123 {
		t.Errorf("no step: %d", got)
	}
}

// TestQueryLoopWaitsForTwoSteps: the soak's queries start when the end of
// their range (aligned to the step) leaves two steps of data, the first
// at which the rate kind has an answer; the clock is the loop's end(),
// moved on a third of a step each time it is read.
func TestQueryLoopWaitsForTwoSteps(t *testing.T) {
	const step = 300 * time.Millisecond
	base := time.Unix(1_800_000_000, 0) // on a step's boundary
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: 10 * time.Millisecond, Start: base.Add(70 * time.Millisecond)})
	var mu sync.Mutex
	var ends []int64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ End int64 }
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		ends = append(ends, body.End)
		if len(ends) >= 2*len(QueryKinds) {
			cancel() // two rounds are enough
		}
		mu.Unlock()
		fmt.Fprint(w, `[{"metric":"m","tags":{},"aggregateTags":[],"dps":{"1":1}}]`)
	}))
	defer srv.Close()
	var clock atomic.Int64
	clock.Store(g.StartMs())
	end := func() int64 { return clock.Add(step.Milliseconds() / 3) }
	cfg := SoakConfig{Write: WriteConfig{URL: srv.URL, RequestTimeout: 10 * time.Second}, Seed: 1, QueryConcurrency: 1,
		QueryRange: 10 * step, QueryLongRange: 24 * step, QueryStep: step} // the long kind's step is the short one's
	sq := &SoakQueries{}
	queryLoop(ctx, g, cfg, QueryOpenTSDB, sq, end)
	want := base.Add(2 * step).UnixMilli() // the data start 70 ms into the bucket at base
	mu.Lock()
	defer mu.Unlock()
	if len(ends) == 0 {
		t.Fatal("no query")
	}
	for _, e := range ends {
		if e < want {
			t.Fatalf("a query ends at %d, before %d: its rate has no bucket with a predecessor", e, want)
		}
	}
	if sq.Rounds == 0 || sq.Empty != 0 {
		t.Fatalf("%+v", sq)
	}
}

// TestReplayEmpty: each recorded answer is sent again, an OpenTSDB rate
// also without its rate and as PromQL's rate.
func TestReplayEmpty(t *testing.T) {
	var promQueries []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/query":
			if bytes.Contains(body, []byte(`"rate":true`)) {
				fmt.Fprint(w, `[]`)
				return
			}
			fmt.Fprint(w, `[{"metric":"m","tags":{"service":"a"},"aggregateTags":[],"dps":{"1800000000":1}},`+
				`{"metric":"m","tags":{"service":"b"},"aggregateTags":[],"dps":{"1800000000":2}}]`)
		case "/api/v1/query_range":
			mu.Lock()
			promQueries = append(promQueries, r.URL.Query().Get("query")+" step "+r.URL.Query().Get("step"))
			mu.Unlock()
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1800000000,"1"]]}]}}`)
		}
	}))
	defer srv.Close()
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: 10 * time.Second, Start: t0, Steps: 100})
	cfg := &QueryConfig{Seed: 1, End: 1_800_000_010_000, Range: 5 * time.Minute, LongRange: 10 * time.Minute, Step: 30 * time.Second}
	q, err := MakeQuery(g, cfg, KindRate, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	el := &EmptyLog{W: &log, Phase: "soak"}
	el.record(EmptyAnswer{Dialect: QueryOpenTSDB, Kind: KindRate, Sent: time.UnixMilli(q.End + 5000), Start: q.Start, End: q.End,
		Method: http.MethodPost, Path: "/api/query", Body: string(q.OpenTSDB), Status: 200, Answer: "[]"})
	el.record(EmptyAnswer{Dialect: QueryProm, Kind: KindRate, Sent: time.UnixMilli(q.End + 5000), Start: q.Start, End: q.End,
		Method: http.MethodGet, Path: "/api/v1/query_range?query=sum&start=1&end=2&step=30", Status: 200})
	var out bytes.Buffer
	if err := ReplayEmpty(context.Background(), srv.URL, &log, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	if l := lines[0]; !strings.Contains(l, "soak opentsdb rate") || !strings.Contains(l, "now 0 series") ||
		!strings.Contains(l, "without the rate 2 series, buckets at [08:00:00.000]") ||
		!strings.Contains(l, "PromQL sum by (service) (rate(") || !strings.HasSuffix(l, "[5m])): 1 series") {
		t.Fatalf("OpenTSDB rate line: %s", l)
	}
	if l := lines[1]; !strings.Contains(l, "soak prom rate") || !strings.HasSuffix(l, "now 1 series") {
		t.Fatalf("PromQL line: %s", l)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(promQueries) != 2 || !strings.HasSuffix(promQueries[0], " step 30") || promQueries[1] != "sum step 30" {
		t.Fatalf("PromQL queries sent: %q", promQueries)
	}
}
