package loadtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRollupBench runs the benchmark against a fake server whose rollup
// answer differs from the raw one in one point: the comparison finds it,
// and every request is counted.
func TestRollupBench(t *testing.T) {
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/query":
			if strings.Contains(string(body), "ROLLUP_RAW") {
				calls["raw"]++
				io.WriteString(w, `[{"metric":"m","tags":{"dc":"a"},"aggregateTags":[],"dps":{"3600":1.5,"7200":2}}]`)
				return
			}
			calls["rollup"]++
			io.WriteString(w, `[{"metric":"m","tags":{"dc":"a"},"aggregateTags":[],"dps":{"3600":1.5,"7200":2.5}}]`)
		case "/api/v1/query_range":
			calls["prom"]++
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"dc":"a"},"values":[[3600,"1.5"]]}]}}`)
		case "/metrics":
			io.WriteString(w, "hourglass_query_rollup_reads_total{interval=\"1h\"} 3\n")
		}
	}))
	defer srv.Close()
	rep, err := RollupBench(context.Background(), RollupBenchConfig{URL: srv.URL, Start: 0, End: 7_200_000, Metrics: []string{"m", "n"},
		GroupBy: "dc", Downsample: "1h-avg", Aggregator: "avg", PromFunc: "avg_over_time(%s[1h])", Step: time.Hour, Rounds: 3, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if calls["raw"] != 3 || calls["rollup"] != 3 || calls["prom"] != 12 {
		t.Errorf("calls %v", calls)
	}
	c := rep.OpenTSDB
	if c.Identical || c.Points != 2 || c.Equal != 1 || c.Missing != 0 || c.MaxRelative != 0.25 {
		t.Errorf("comparison %+v", c)
	}
	if p := rep.Prom; p.Points != 2 || p.Equal != 2 {
		t.Errorf("PromQL comparison %+v", p)
	}
	if len(rep.OpenTSDBRaw.WallSeconds) != 3 || rep.OpenTSDBRaw.Points != 2 {
		t.Errorf("raw run %+v", rep.OpenTSDBRaw)
	}
	var sb strings.Builder
	WriteRollupReport(&sb, rep)
	if !strings.Contains(sb.String(), "identical byte for byte: false") {
		t.Errorf("report:\n%s", sb.String())
	}
}
