package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRollupQueries: points written hours ago and settled by a restart
// (the 1h rollups are written with their rows), more points written after
// it (the head holds them): a 1h-avg over the whole range answers from
// rollups joined with the head's raw points, byte for byte what
// ROLLUP_RAW answers, and the rollup reads are counted; PromQL with
// max_source_resolution reads them too and says so, and a bad value is
// Prometheus' bad_data.
func TestRollupQueries(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.stop()
	now := time.Now().UnixMilli()
	hour := int64(3_600_000)
	base := (now/hour - 8) * hour
	put := func(from, to int64) {
		var pts []map[string]any
		for ts := from; ts < to; ts += 10_000 {
			for h := range 6 {
				tags := map[string]string{"host": fmt.Sprintf("h%d", h), "dc": fmt.Sprintf("dc%d", h%2)}
				k := (ts - base) / 10_000
				var v any = math.Round(float64((k*int64(h+7))%10_000)) / 100 // two decimals
				if h%3 == 0 {
					v = k * int64(h+1) // an integer counter
				}
				pts = append(pts, map[string]any{"metric": "rollup.test", "timestamp": ts, "value": v, "tags": tags})
			}
			if len(pts) >= 5000 {
				if code, body := s.postJSON("/api/put", pts); code != 204 {
					t.Fatalf("/api/put: %d %s", code, body)
				}
				pts = pts[:0]
			}
		}
		if len(pts) > 0 {
			if code, body := s.postJSON("/api/put", pts); code != 204 {
				t.Fatalf("/api/put: %d %s", code, body)
			}
		}
	}
	put(base, base+6*hour)
	s.stop()
	s.restart() // every hour written so far is settled
	put(base+6*hour, base+7*hour+30*60_000)

	query := func(usage, downsample string) []byte {
		q := map[string]any{"start": base, "end": base + 8*hour, "queries": []map[string]any{{
			"aggregator": "avg", "metric": "rollup.test", "downsample": downsample, "rollupUsage": usage,
			"filters": []map[string]any{{"type": "wildcard", "tagk": "dc", "filter": "*", "groupBy": true}},
		}}}
		code, body := s.postJSON("/api/query", q)
		if code != 200 {
			t.Fatalf("/api/query %s %s: %d %s", usage, downsample, code, body)
		}
		return body
	}
	reads := `hourglass_query_rollup_reads_total{interval="1h"}`
	for _, ds := range []string{"1h-avg", "1h-sum", "2h-max", "1h-count", "1h-last"} {
		before := s.metricOf(reads)
		got := query("", ds)
		if s.metricOf(reads) != before+1 {
			t.Errorf("%s: the rollup reads went from %v to %v", ds, before, s.metricOf(reads))
		}
		raw := query("ROLLUP_RAW", ds)
		if string(got) != string(raw) {
			t.Errorf("%s from rollups:\n%s\nraw:\n%s", ds, got, raw)
		}
		if !strings.Contains(string(got), `"dps":{"`) || strings.Count(string(got), `":`) < 16 {
			t.Errorf("%s: too few points: %s", ds, got)
		}
	}

	// PromQL: an aligned range query with and without rollups.
	prom := func(res string) (int, map[string]any) {
		v := url.Values{"query": {`max_over_time({__name__="rollup.test"}[1h])`}, "start": {fmt.Sprint((base + 2*hour) / 1000)},
			"end": {fmt.Sprint((base + 6*hour) / 1000)}, "step": {"3600"}}
		if res != "" {
			v.Set("max_source_resolution", res)
		}
		code, body := s.do("POST", "/api/v1/query_range", "application/x-www-form-urlencoded", []byte(v.Encode()))
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return code, out
	}
	code, raw := prom("")
	if code != 200 {
		t.Fatalf("raw: %d %v", code, raw)
	}
	code, rolled := prom("1h")
	if code != 200 || !strings.Contains(fmt.Sprint(rolled["infos"]), "rollups") {
		t.Fatalf("max_source_resolution=1h: %d %v", code, rolled)
	}
	if n := len(rolled["data"].(map[string]any)["result"].([]any)); n != len(raw["data"].(map[string]any)["result"].([]any)) || n == 0 {
		t.Errorf("%d series from rollups, raw %v", n, raw)
	}
	code, bad := prom("-5m")
	if code != 400 || bad["errorType"] != "bad_data" || !strings.Contains(fmt.Sprint(bad["error"]), "max_source_resolution") {
		t.Errorf("max_source_resolution=-5m: %d %v", code, bad)
	}
}
