package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hourglass/loadtest"
)

// TestGrafanaDashboardQueries runs every query of deploy/grafana's
// dashboards against the binary the way the data sources send them: over
// the load generator's data, each query of the load generator's dashboard
// (OpenTSDB and PromQL) must answer with data; each of the self
// dashboard's PromQL queries must be accepted (the data, hourglass's own
// /metrics, comes from a Prometheus scraping it).
func TestGrafanaDashboardQueries(t *testing.T) {
	s := start(t, t.TempDir())
	end := time.Now().Truncate(time.Second)
	g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 1, Series: 120, Interval: 10 * time.Second, Start: end.Add(-10 * time.Minute), Steps: 60})
	if err != nil {
		t.Fatal(err)
	}
	var pts []point
	g.Each(func(p loadtest.Point) {
		tags := map[string]string{}
		for _, tg := range p.S.Tags {
			tags[tg.Key] = tg.Value
		}
		var v any = p.V.Int
		if p.V.IsFloat {
			v = p.V.Float
		}
		pts = append(pts, point{metric: p.S.Metric, tags: tags, ts: p.T, value: v})
	})
	for i := 0; i < len(pts); i += 2000 {
		if code, body := s.do("POST", "/api/put", "application/json", putBody(pts[i:min(i+2000, len(pts))])); code != http.StatusNoContent {
			t.Fatalf("put: %d %s", code, body)
		}
	}
	for _, f := range []string{"loadtest.json", "hourglass-self.json"} {
		b, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "dashboards", f))
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Datasource struct{ Type string } `json:"datasource"`
					Expr       string                `json:"expr"`
					Metric     string                `json:"metric"`
					Aggregator string                `json:"aggregator"`
					DSAgg      string                `json:"downsampleAggregator"`
					DSInterval string                `json:"downsampleInterval"`
					Rate       bool                  `json:"shouldComputeRate"`
					Counter    bool                  `json:"isCounter"`
					Filters    []map[string]any      `json:"filters"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				what := f + ": " + p.Title
				var n int
				switch tg.Datasource.Type {
				case "prometheus":
					expr := strings.ReplaceAll(tg.Expr, "$__rate_interval", "1m")
					q := url.Values{"query": {expr}, "start": {fmt.Sprint(end.Add(-10 * time.Minute).Unix())}, "end": {fmt.Sprint(end.Unix())}, "step": {"30"}}
					code, body := s.do("GET", "/api/v1/query_range?"+q.Encode(), "", nil)
					var r struct {
						Status string
						Data   struct{ Result []json.RawMessage }
					}
					if err := json.Unmarshal(body, &r); code != 200 || err != nil || r.Status != "success" {
						t.Errorf("%s: %q: %d %s", what, expr, code, body)
						continue
					}
					n = len(r.Data.Result)
				case "opentsdb":
					sub := map[string]any{"metric": tg.Metric, "aggregator": tg.Aggregator, "downsample": tg.DSInterval + "-" + tg.DSAgg,
						"rate": tg.Rate, "rateOptions": map[string]any{"counter": tg.Counter}, "filters": tg.Filters}
					body, _ := json.Marshal(map[string]any{"start": end.Add(-10 * time.Minute).UnixMilli(), "end": end.UnixMilli(), "queries": []any{sub}})
					code, resp := s.do("POST", "/api/query?arrays=true", "application/json", body)
					var r []json.RawMessage
					if err := json.Unmarshal(resp, &r); code != 200 || err != nil {
						t.Errorf("%s: %s: %d %s", what, body, code, resp)
						continue
					}
					n = len(r)
				}
				if f == "loadtest.json" && n == 0 {
					t.Errorf("%s: no series over the load generator's data", what)
				}
			}
		}
	}
}
