package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Grafana's OpenTSDB datasource, both of its request paths, replayed
// against the running binary as ../shared/reference/clients.md §1 records
// them: the legacy frontend path (the browser calls OpenTSDB; Grafana core
// with opentsdbBackendMigration off) and the Go backend path (the external
// plugin), for datasource versions 1..4 ("<=2.1", "==2.2", "==2.3",
// "==2.4"). Each reply is parsed the way that path parses it.

// grafanaData is the fixture: three CPU series, a counter and a gauge.
//
//	cpu.usage host=web01 region=eu-west-1: t0:10 t0+30:20 t0+60:30 t0+90:40
//	cpu.usage host=web02 region=eu-west-1: t0:1 t0+60:3
//	cpu.usage host=db01  region=us-east-1: t0:100
//	net.bytes host=web01: t0:0 t0+60:600 t0+120:1200 t0+180:100 (reset) t0+240:700
//	memory.usage_bytes host=web01 region=eu-west-1: t0:2048
func grafanaData(t *testing.T, s *server) {
	otsPutOK(t, s, otsArr(
		otsDP("cpu.usage", otsT0, "10", "host", "web01", "region", "eu-west-1"),
		otsDP("cpu.usage", otsT0+30, "20", "host", "web01", "region", "eu-west-1"),
		otsDP("cpu.usage", otsT0+60, "30", "host", "web01", "region", "eu-west-1"),
		otsDP("cpu.usage", otsT0+90, "40", "host", "web01", "region", "eu-west-1"),
		otsDP("cpu.usage", otsT0, "1", "host", "web02", "region", "eu-west-1"),
		otsDP("cpu.usage", otsT0+60, "3", "host", "web02", "region", "eu-west-1"),
		otsDP("cpu.usage", otsT0, "100", "host", "db01", "region", "us-east-1"),
		otsDP("net.bytes", otsT0, "0", "host", "web01"),
		otsDP("net.bytes", otsT0+60, "600", "host", "web01"),
		otsDP("net.bytes", otsT0+120, "1200", "host", "web01"),
		otsDP("net.bytes", otsT0+180, "100", "host", "web01"),
		otsDP("net.bytes", otsT0+240, "700", "host", "web01"),
		otsDP("memory.usage_bytes", otsT0, "2048", "host", "web01", "region", "eu-west-1")))
	// A global annotation and one on web01's CPU series, for the annotation queries.
	var lk struct{ Results []struct{ TSUID string } }
	otsDecode(t, otsWant(t, s, 200, "GET", "/api/search/lookup?m="+url.QueryEscape("cpu.usage{host=web01}"), nil), &lk)
	otsWant(t, s, 200, "POST", "/api/annotation", fmt.Sprintf(`{"tsuid":%q,"startTime":%d,"description":"deploy web01"}`, lk.Results[0].TSUID, otsT0+45))
	otsWant(t, s, 200, "POST", "/api/annotation", fmt.Sprintf(`{"startTime":%d,"description":"maintenance"}`, otsT0+50))
}

// grafanaGet is a GET as Grafana sends it; it returns the status and body.
func grafanaGet(t *testing.T, s *server, path string) (int, []byte) {
	t.Helper()
	resp, err := client.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func grafanaPost(t *testing.T, s *server, path string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := client.Post(s.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// suggestTexts is the frontend's metricFindQuery over /api/suggest: an
// array of strings mapped to {text}.
func suggestTexts(t *testing.T, body []byte) []string {
	t.Helper()
	var names []string
	if err := json.Unmarshal(body, &names); err != nil {
		t.Fatalf("suggest reply %s is not an array of strings: %v", body, err)
	}
	return names
}

// lookupKeys and lookupValues read results[].tags as both paths do: unique,
// sorted.
func lookupKeys(t *testing.T, body []byte) []string {
	t.Helper()
	var r struct {
		Results []struct{ Tags map[string]string }
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("lookup reply %s: %v", body, err)
	}
	set := map[string]bool{}
	for _, x := range r.Results {
		for k := range x.Tags {
			set[k] = true
		}
	}
	return otsSortedKeys(set)
}

func lookupValues(t *testing.T, body []byte, key string) []string {
	t.Helper()
	var r struct {
		Results []struct{ Tags map[string]string }
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("lookup reply %s: %v", body, err)
	}
	set := map[string]bool{}
	for _, x := range r.Results {
		if v, ok := x.Tags[key]; ok {
			set[v] = true
		}
	}
	return otsSortedKeys(set)
}

// frame is what a path makes of one result: its name, labels and points
// (ms → value).
type grafanaFrame struct {
	metric  string
	tags    map[string]string
	aggTags []string
	points  map[int64]float64
	index   int // the legacy path's query.index (v3), -1 otherwise
	notes   []string
	globals []string
	tagKeys []string // the backend's meta.custom.tagKeys
}

func (f grafanaFrame) label() string {
	keys := otsSortedKeys(f.tags)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+f.tags[k])
	}
	return f.metric + "{" + strings.Join(parts, ", ") + "}"
}

// parseLegacy is transformMetricData: a JSON array; per element metric,
// tags, aggregateTags, and dps as an object whose keys are seconds (×1000)
// or, with tsdbResolution 2, ms.
func parseLegacy(t *testing.T, body []byte, msResolution bool) []grafanaFrame {
	t.Helper()
	var rs []map[string]any
	if err := json.Unmarshal(body, &rs); err != nil {
		t.Fatalf("legacy: the reply %s is not a JSON array: %v", body, err)
	}
	var out []grafanaFrame
	for _, r := range rs {
		f := grafanaFrame{metric: r["metric"].(string), tags: map[string]string{}, points: map[int64]float64{}, index: -1}
		for k, v := range r["tags"].(map[string]any) {
			f.tags[k] = v.(string)
		}
		for _, a := range r["aggregateTags"].([]any) {
			f.aggTags = append(f.aggTags, a.(string))
		}
		dps, ok := r["dps"].(map[string]any)
		if !ok {
			t.Fatalf("legacy: dps is not an object: %v", r["dps"])
		}
		for k, v := range dps {
			ts, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				t.Fatalf("legacy: dps key %q", k)
			}
			if !msResolution {
				ts *= 1000
			}
			n, ok := v.(float64)
			if !ok {
				t.Fatalf("legacy: value %v at %s is not a number", v, k)
			}
			f.points[ts] = n
		}
		if q, ok := r["query"].(map[string]any); ok {
			f.index = int(q["index"].(float64))
		}
		for _, a := range grafanaList(r["annotations"]) {
			f.notes = append(f.notes, fmt.Sprintf("%s@%d", a["description"], int64(a["startTime"].(float64))*1000))
		}
		for _, a := range grafanaList(r["globalAnnotations"]) {
			f.globals = append(f.globals, fmt.Sprintf("%s@%d", a["description"], int64(a["startTime"].(float64))*1000))
		}
		out = append(out, f)
	}
	return out
}

func grafanaList(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, x := range l {
		out = append(out, x.(map[string]any))
	}
	return out
}

// parseBackend is ParseResponse24 (dps [][]float64) or ParseResponseLT24
// (dps map[string]float64), decoded with encoding/json as the plugin does.
func parseBackend(t *testing.T, body []byte, v24 bool) []grafanaFrame {
	t.Helper()
	type common struct {
		Metric            string            `json:"metric"`
		Tags              map[string]string `json:"tags"`
		AggregateTags     []string          `json:"aggregateTags"`
		Annotations       []map[string]any  `json:"annotations"`
		GlobalAnnotations []map[string]any  `json:"globalAnnotations"`
	}
	var out []grafanaFrame
	add := func(c common, otsPts map[int64]float64) {
		f := grafanaFrame{metric: c.Metric, tags: c.Tags, aggTags: c.AggregateTags, points: otsPts, index: -1}
		keys := otsSortedKeys(c.Tags)
		f.tagKeys = append(keys, c.AggregateTags...)
		for _, a := range c.Annotations {
			f.notes = append(f.notes, fmt.Sprintf("%s@%d", a["description"], int64(a["startTime"].(float64))*1000))
		}
		for _, a := range c.GlobalAnnotations {
			f.globals = append(f.globals, fmt.Sprintf("%s@%d", a["description"], int64(a["startTime"].(float64))*1000))
		}
		out = append(out, f)
	}
	if v24 {
		var rs []struct {
			common
			DPS [][]float64 `json:"dps"`
		}
		if err := json.Unmarshal(body, &rs); err != nil {
			t.Fatalf("backend 2.4: %s: %v", body, err)
		}
		for _, r := range rs {
			points := map[int64]float64{}
			for _, p := range r.DPS {
				points[int64(p[0])*1000] = p[1] // time.Unix(seconds)
			}
			add(r.common, points)
		}
		return out
	}
	var rs []struct {
		common
		DPS map[string]float64 `json:"dps"`
	}
	if err := json.Unmarshal(body, &rs); err != nil {
		t.Fatalf("backend <2.4: %s: %v", body, err)
	}
	for _, r := range rs {
		points := map[int64]float64{}
		keys := otsSortedKeys(r.DPS)
		for _, k := range keys {
			sec, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				t.Fatalf("backend: dps key %q", k)
			}
			points[sec*1000] = r.DPS[k]
		}
		add(r.common, points)
	}
	return out
}

// byLabel indexes frames by label and fails on duplicates.
func grafanaByLabel(t *testing.T, fs []grafanaFrame) map[string]grafanaFrame {
	t.Helper()
	out := map[string]grafanaFrame{}
	for _, f := range fs {
		if _, dup := out[f.label()]; dup {
			t.Fatalf("two frames %s", f.label())
		}
		out[f.label()] = f
	}
	return out
}

func grafanaCheckFrame(t *testing.T, what string, f grafanaFrame, exp map[int64]float64) {
	t.Helper()
	if len(f.points) != len(exp) {
		t.Fatalf("%s: points %v, want %v", what, f.points, exp)
	}
	for ts, v := range exp {
		if g, ok := f.points[ts]; !ok || g != v {
			t.Fatalf("%s: points %v, want %v", what, f.points, exp)
		}
	}
}

// grafanaTarget is a query as a panel holds it.
type grafanaTarget struct {
	metric, aggregator, downsampleInterval, downsampleAggregator, fillPolicy string
	rate, counter, explicitTags                                              bool
	counterMax, resetValue                                                   string
	tags                                                                     map[string]string
	filters                                                                  []map[string]any
}

// legacyQuery builds convertTargetToQuery's sub-query for a version.
func (g grafanaTarget) legacyQuery(version int, interval string) map[string]any {
	q := map[string]any{"metric": g.metric, "aggregator": "avg"}
	if g.aggregator != "" {
		q["aggregator"] = g.aggregator
	}
	if g.rate {
		q["rate"] = true
		ro := map[string]any{"counter": g.counter}
		if g.counterMax != "" {
			n, _ := strconv.Atoi(g.counterMax)
			ro["counterMax"] = n
		}
		if g.resetValue != "" {
			n, _ := strconv.Atoi(g.resetValue)
			ro["resetValue"] = n
		}
		if version >= 2 {
			ro["dropResets"] = g.counterMax == "" // the ResetValue typo: !counterMax
		}
		q["rateOptions"] = ro
	}
	if g.downsampleAggregator != "" {
		iv := g.downsampleInterval
		if iv == "" {
			iv = interval
		}
		ds := iv + "-" + g.downsampleAggregator
		if g.fillPolicy != "" && g.fillPolicy != "none" {
			ds += "-" + g.fillPolicy
		}
		q["downsample"] = ds
	}
	if len(g.filters) > 0 {
		q["filters"] = g.filters
	} else if len(g.tags) > 0 {
		q["tags"] = g.tags
	}
	if g.explicitTags {
		q["explicitTags"] = true
	}
	return q
}

// backendQuery builds BuildMetric's sub-query: a Go map, so its keys come
// out sorted; counterMax and resetValue as float64.
func (g grafanaTarget) backendQuery(interval string) map[string]any {
	q := map[string]any{"metric": g.metric, "aggregator": g.aggregator}
	if g.downsampleAggregator != "" {
		iv := g.downsampleInterval
		if iv == "" {
			iv = interval
		}
		ds := iv + "-" + g.downsampleAggregator
		if g.fillPolicy != "" && g.fillPolicy != "none" {
			ds += "-" + g.fillPolicy
		}
		q["downsample"] = ds
	}
	if g.rate {
		q["rate"] = true
		ro := map[string]any{"counter": g.counter}
		if g.counterMax != "" {
			f, _ := strconv.ParseFloat(g.counterMax, 64)
			ro["counterMax"] = f
		}
		if g.resetValue != "" {
			f, _ := strconv.ParseFloat(g.resetValue, 64)
			ro["resetValue"] = f
		}
		if g.counterMax == "" && (g.resetValue == "" || g.resetValue == "0") {
			ro["dropResets"] = true
		}
		q["rateOptions"] = ro
	}
	if g.explicitTags {
		q["explicitTags"] = true
	}
	if len(g.filters) > 0 {
		q["filters"] = g.filters
	}
	if len(g.tags) > 0 {
		q["tags"] = g.tags
	}
	return q
}

func TestGrafanaOpenTSDBDatasource(t *testing.T) {
	s := start(t, t.TempDir())
	grafanaData(t, s)
	from, to := otsT0-3600, otsT0+3600 // the dashboard's time range, seconds

	// Targets and what each gives, by label (ms → value). Values worked out
	// from grafanaData: 1m-avg buckets of web01 are avg(10,20)=15 and
	// avg(30,40)=35; of web02 1 and 3; of db01 100.
	webAvg := map[string]map[int64]float64{
		"cpu.usage{host=web01, region=eu-west-1}": {otsT0 * 1000: 15, (otsT0 + 60) * 1000: 35},
		"cpu.usage{host=web02, region=eu-west-1}": {otsT0 * 1000: 1, (otsT0 + 60) * 1000: 3},
	}
	// net.bytes downsampled per minute, then the rate per second with the
	// reset at t0+180 dropped: 600/60, 600/60, (dropped), 600/60.
	rate := map[string]map[int64]float64{"net.bytes{host=web01}": {(otsT0 + 60) * 1000: 10, (otsT0 + 120) * 1000: 10, (otsT0 + 240) * 1000: 10}}

	for version := 1; version <= 4; version++ {
		t.Run(fmt.Sprintf("legacy frontend, tsdbVersion %d", version), func(t *testing.T) {
			lookupLimit := 1000
			// Save & test: any 2xx.
			if code, _ := grafanaGet(t, s, fmt.Sprintf("/api/suggest?type=metrics&q=cpu&max=%d", lookupLimit)); code/100 != 2 {
				t.Fatalf("health check: %d", code)
			}
			// Template variables.
			_, b := grafanaGet(t, s, fmt.Sprintf("/api/suggest?type=metrics&q=%s&max=%d", url.QueryEscape(""), lookupLimit))
			if got := suggestTexts(t, b); fmt.Sprint(got) != "[cpu.usage memory.usage_bytes net.bytes]" {
				t.Fatalf("metrics(): %v", got)
			}
			_, b = grafanaGet(t, s, fmt.Sprintf("/api/suggest?type=metrics&q=cpu&max=%d", lookupLimit))
			if got := suggestTexts(t, b); fmt.Sprint(got) != "[cpu.usage]" {
				t.Fatalf("metrics(cpu): %v", got)
			}
			_, b = grafanaGet(t, s, "/api/search/lookup?m=cpu.usage&limit=1000")
			if got := lookupKeys(t, b); fmt.Sprint(got) != "[host region]" {
				t.Fatalf("tag_names(cpu.usage): %v", got)
			}
			_, b = grafanaGet(t, s, fmt.Sprintf("/api/search/lookup?m=%s&limit=%d", url.QueryEscape("cpu.usage{host=*}"), lookupLimit))
			if got := lookupValues(t, b, "host"); fmt.Sprint(got) != "[db01 web01 web02]" {
				t.Fatalf("tag_values(cpu.usage, host): %v", got)
			}
			_, b = grafanaGet(t, s, fmt.Sprintf("/api/search/lookup?m=%s&limit=%d", url.QueryEscape("cpu.usage{host=*,region=eu-west-1}"), lookupLimit))
			if got := lookupValues(t, b, "host"); fmt.Sprint(got) != "[web01 web02]" {
				t.Fatalf("tag_values(cpu.usage, host, region=eu-west-1): %v", got)
			}
			_, b = grafanaGet(t, s, fmt.Sprintf("/api/suggest?type=tagk&q=re&max=%d", lookupLimit))
			if got := suggestTexts(t, b); fmt.Sprint(got) != "[region]" {
				t.Fatalf("suggest_tagk(re): %v", got)
			}
			_, b = grafanaGet(t, s, fmt.Sprintf("/api/suggest?type=tagv&q=web&max=%d", lookupLimit))
			if got := suggestTexts(t, b); fmt.Sprint(got) != "[web01 web02]" {
				t.Fatalf("suggest_tagv(web): %v", got)
			}
			// The editor's lists.
			_, b = grafanaGet(t, s, "/api/aggregators")
			var aggs []string
			if err := json.Unmarshal(b, &aggs); err != nil || len(aggs) == 0 {
				t.Fatalf("aggregators: %s", b)
			}
			_, b = grafanaGet(t, s, "/api/config/filters")
			var filters map[string]json.RawMessage
			if err := json.Unmarshal(b, &filters); err != nil || filters["wildcard"] == nil || filters["literal_or"] == nil {
				t.Fatalf("config/filters: %s", b)
			}

			for _, resolution := range []int{1, 2} {
				// One POST for every target of the panel, keys in Grafana's order.
				targets := []grafanaTarget{
					{metric: "cpu.usage", aggregator: "sum", downsampleAggregator: "avg"},
					{metric: "net.bytes", aggregator: "sum", downsampleAggregator: "avg", rate: true, counter: true},
				}
				if version >= 2 {
					targets[0].filters = []map[string]any{{"type": "wildcard", "tagk": "host", "filter": "web*", "groupBy": true}}
				} else {
					targets[0].tags = map[string]string{"host": "web01|web02"}
				}
				if version > 2 {
					// explicitTags: exactly the filtered keys (host).
					targets[1].explicitTags = true
					targets[1].filters = []map[string]any{{"type": "literal_or", "tagk": "host", "filter": "web01", "groupBy": false}}
				}
				var qs []string
				for _, tg := range targets {
					b, _ := json.Marshal(tg.legacyQuery(version, "1m"))
					qs = append(qs, string(b))
				}
				body := fmt.Sprintf(`{"start":%d,"queries":[%s],"msResolution":%v,"globalAnnotations":true`, from*1000, strings.Join(qs, ","), resolution == 2)
				if version == 3 {
					body += `,"showQuery":true`
				}
				body += fmt.Sprintf(`,"end":%d}`, to*1000)
				code, reply := grafanaPost(t, s, "/api/query", []byte(body))
				if code != 200 {
					t.Fatalf("query: %d %s", code, reply)
				}
				frames := parseLegacy(t, reply, resolution == 2)
				got := grafanaByLabel(t, frames)
				if len(got) != 3 {
					t.Fatalf("resolution %d: frames %v", resolution, got)
				}
				for label, exp := range webAvg {
					grafanaCheckFrame(t, label, got[label], exp)
					if fmt.Sprint(got[label].globals) != fmt.Sprintf("[maintenance@%d]", (otsT0+50)*1000) {
						t.Fatalf("%s globalAnnotations: %v", label, got[label].globals)
					}
				}
				for label, exp := range rate {
					if version == 1 {
						// Version 1 sends no dropResets: the counter wraps at 2^63-1.
						exp = map[int64]float64{(otsT0 + 60) * 1000: 10, (otsT0 + 120) * 1000: 10,
							(otsT0 + 180) * 1000: (float64(math.MaxInt64) - 1200 + 100) / 60, (otsT0 + 240) * 1000: 10}
					}
					grafanaCheckFrame(t, label, got[label], exp)
				}
				if version == 3 {
					// mapMetricsToTargets by query.index.
					for label, f := range got {
						if wantIndex := map[bool]int{true: 1, false: 0}[strings.HasPrefix(label, "net.")]; f.index != wantIndex {
							t.Fatalf("%s: query.index %d, want %d", label, f.index, wantIndex)
						}
					}
				}
			}

			// The annotation query: sum over the metric, annotations of the first result.
			body := fmt.Sprintf(`{"start":%d,"queries":[{"aggregator":"sum","metric":"cpu.usage"}],"msResolution":false,"globalAnnotations":true,"end":%d}`, from*1000, to*1000)
			code, reply := grafanaPost(t, s, "/api/query", []byte(body))
			if code != 200 {
				t.Fatalf("annotation query: %d %s", code, reply)
			}
			fs := parseLegacy(t, reply, false)
			if len(fs) != 1 || fmt.Sprint(fs[0].notes) != fmt.Sprintf("[deploy web01@%d]", (otsT0+45)*1000) ||
				fmt.Sprint(fs[0].globals) != fmt.Sprintf("[maintenance@%d]", (otsT0+50)*1000) {
				t.Fatalf("annotations: %+v", fs)
			}

			// An error shows err.data.error.message.
			code, reply = grafanaPost(t, s, "/api/query", []byte(fmt.Sprintf(`{"start":%d,"queries":[{"metric":"no.such","aggregator":"sum"}],"globalAnnotations":true}`, from*1000)))
			var e struct{ Error struct{ Message string } }
			if code != 400 || json.Unmarshal(reply, &e) != nil || !strings.Contains(e.Error.Message, "no.such") {
				t.Fatalf("error reply: %d %s", code, reply)
			}
		})

		t.Run(fmt.Sprintf("backend, tsdbVersion %d", version), func(t *testing.T) {
			// CheckHealth: exactly 200, no max.
			if code, _ := grafanaGet(t, s, "/api/suggest?q=cpu&type=metrics"); code != 200 {
				t.Fatalf("health check: %d", code)
			}
			// Resource calls pass the raw query string through.
			_, b := grafanaGet(t, s, "/api/suggest?type=tagv&q=db&max=1000")
			if got := suggestTexts(t, b); fmt.Sprint(got) != "[db01]" {
				t.Fatalf("suggest resource: %v", got)
			}
			_, b = grafanaGet(t, s, "/api/search/lookup?limit=1000&m=cpu.usage")
			if got := lookupKeys(t, b); fmt.Sprint(got) != "[host region]" {
				t.Fatalf("tag keys: %v", got)
			}
			// Without lookupLimit in jsonData the backend sends limit=0.
			_, b = grafanaGet(t, s, "/api/search/lookup?limit=0&m="+url.QueryEscape("cpu.usage{region=*}"))
			if got := lookupValues(t, b, "region"); fmt.Sprint(got) != "[eu-west-1 us-east-1]" {
				t.Fatalf("tag values with limit=0: %v", got)
			}
			_, b = grafanaGet(t, s, "/api/aggregators")
			var aggs []string
			if err := json.Unmarshal(b, &aggs); err != nil || len(aggs) == 0 {
				t.Fatalf("aggregators: %s", b)
			}
			_, b = grafanaGet(t, s, "/api/config/filters")
			var filters map[string]json.RawMessage
			if err := json.Unmarshal(b, &filters); err != nil || len(filters) < 7 {
				t.Fatalf("filters: %s", b)
			}

			// One POST per refId. Sub-second intervals come as ms.
			path := "/api/query"
			if version == 4 {
				path += "?arrays=true"
			}
			run := func(tg grafanaTarget, interval string) []grafanaFrame {
				t.Helper()
				body := struct {
					Start   int64            `json:"start"`
					End     int64            `json:"end"`
					Queries []map[string]any `json:"queries"`
				}{from, to, []map[string]any{tg.backendQuery(interval)}}
				b, _ := json.Marshal(body)
				code, reply := grafanaPost(t, s, path, b)
				if code/100 != 2 {
					t.Fatalf("request failed, status: %d %s", code, reply)
				}
				return parseBackend(t, reply, version == 4)
			}
			got := grafanaByLabel(t, run(grafanaTarget{metric: "cpu.usage", aggregator: "sum", downsampleAggregator: "avg",
				filters: []map[string]any{{"filter": "web*", "groupBy": true, "tagk": "host", "type": "wildcard"}}}, "1m"))
			if len(got) != 2 {
				t.Fatalf("frames: %v", got)
			}
			for label, exp := range webAvg {
				grafanaCheckFrame(t, label, got[label], exp)
				if fmt.Sprint(got[label].tagKeys) != "[host region]" {
					t.Fatalf("%s tagKeys %v", label, got[label].tagKeys)
				}
			}
			// Without group-by: one frame, host aggregated away; 15+1, 35+3.
			got = grafanaByLabel(t, run(grafanaTarget{metric: "cpu.usage", aggregator: "sum", downsampleAggregator: "avg",
				filters: []map[string]any{{"filter": "web*", "groupBy": false, "tagk": "host", "type": "wildcard"}}}, "1m"))
			f := got["cpu.usage{region=eu-west-1}"]
			grafanaCheckFrame(t, "no group-by", f, map[int64]float64{otsT0 * 1000: 16, (otsT0 + 60) * 1000: 38})
			if fmt.Sprint(f.tagKeys) != "[region host]" {
				t.Fatalf("tagKeys with aggregateTags: %v", f.tagKeys)
			}
			// The rate with dropResets (no counterMax, no resetValue).
			got = grafanaByLabel(t, run(grafanaTarget{metric: "net.bytes", aggregator: "sum", downsampleAggregator: "avg", rate: true, counter: true}, "1m"))
			for label, exp := range rate {
				grafanaCheckFrame(t, label, got[label], exp)
			}
			// counterMax and resetValue as float64: wrapping at 1300,
			// (1300-1200+100)/60 = 3.33 < 5, so kept.
			got = grafanaByLabel(t, run(grafanaTarget{metric: "net.bytes", aggregator: "sum", downsampleAggregator: "avg", rate: true, counter: true,
				counterMax: "1300", resetValue: "5"}, "1m"))
			grafanaCheckFrame(t, "counterMax", got["net.bytes{host=web01}"], map[int64]float64{(otsT0 + 60) * 1000: 10, (otsT0 + 120) * 1000: 10,
				(otsT0 + 180) * 1000: 200.0 / 60, (otsT0 + 240) * 1000: 10})
			// Sub-second interval, as 500ms; the fill policy appended.
			got = grafanaByLabel(t, run(grafanaTarget{metric: "memory.usage_bytes", aggregator: "max", downsampleAggregator: "max", fillPolicy: "none"}, "500ms"))
			grafanaCheckFrame(t, "500ms", got["memory.usage_bytes{host=web01, region=eu-west-1}"], map[int64]float64{otsT0 * 1000: 2048})
			// Legacy tags, explicitTags, a zero fill (null would decode as 0 too).
			got = grafanaByLabel(t, run(grafanaTarget{metric: "cpu.usage", aggregator: "sum", downsampleAggregator: "sum", downsampleInterval: "30m", fillPolicy: "zero",
				tags: map[string]string{"host": "db01", "region": "*"}, explicitTags: true}, "1m"))
			f = got["cpu.usage{host=db01, region=us-east-1}"]
			if len(f.points) == 0 || f.points[otsT0*1000] != 100 {
				t.Fatalf("tags with zero fill: %v", got)
			}
			for ts, v := range f.points {
				if ts != otsT0*1000 && v != 0 {
					t.Fatalf("zero fill at %d: %v", ts, v)
				}
			}
			// The annotation query: disableDownsampling, aggregator sum; the
			// backend never asks for global annotations.
			fs := run(grafanaTarget{metric: "cpu.usage", aggregator: "sum"}, "1m")
			if len(fs) != 1 || fmt.Sprint(fs[0].notes) != fmt.Sprintf("[deploy web01@%d]", (otsT0+45)*1000) || len(fs[0].globals) != 0 {
				t.Fatalf("backend annotations: %+v", fs)
			}
			// CreateRequest with an empty query: a non-2xx becomes an error.
			code, _ := grafanaPost(t, s, path, []byte(`{"start":0,"end":0,"queries":null}`))
			if code/100 == 2 {
				t.Fatalf("an empty query was answered %d", code)
			}
		})
	}

	// What the proxy's Content-Encoding handling sees: a gzipped suggest
	// reply (the backend gunzips it).
	req, _ := http.NewRequest("GET", s.url+"/api/suggest?type=metrics&q=net", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzipped suggest: %d %v", resp.StatusCode, resp.Header)
	}
}
