package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
)

// The OpenTSDB endpoints other than /api/query and /api/put, against the
// running binary: what each answers, and its errors for bad input.
func TestOpenTSDBEndpoints(t *testing.T) {
	s := start(t, t.TempDir(), "-cors-domains", "http://grafana.example")
	otsPutOK(t, s, otsArr(
		otsDP("sys.cpu.user", otsT0, "1", "host", "web01", "dc", "lga"),
		otsDP("sys.cpu.user", otsT0+10, "2", "host", "web01", "dc", "lga"),
		otsDP("sys.cpu.user", otsT0+20, "3.5", "host", "web02", "dc", "lga"),
		otsDP("sys.cpu.user", otsT0+5, "7", "host", "db01", "dc", "sjc"),
		otsDP("sys.cpu.sys", otsT0, "9", "host", "web01", "dc", "lga"),
		otsDP("sys.mem", otsT0, "100", "host", "web01")))
	// The TSUIDs of the series, by host, from a lookup.
	tsuid := map[string]string{}
	{
		var lk struct {
			Results []struct {
				TSUID string
				Tags  map[string]string
			}
		}
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/search/lookup?m=sys.cpu.user", nil), &lk)
		for _, r := range lk.Results {
			tsuid[r.Tags["host"]] = r.TSUID
		}
		if len(tsuid) != 3 {
			t.Fatalf("lookup: %+v", lk)
		}
	}

	t.Run("suggest", func(t *testing.T) {
		cases := []struct{ qs, otsWant string }{
			{"type=metrics&q=sys", `["sys.cpu.sys","sys.cpu.user","sys.mem"]`},
			{"type=metrics&q=sys.cpu", `["sys.cpu.sys","sys.cpu.user"]`},
			{"type=metrics&q=sys&max=1", `["sys.cpu.sys"]`},
			{"type=metrics&q=SYS", `[]`}, // case-sensitive
			{"type=metrics", `["sys.cpu.sys","sys.cpu.user","sys.mem"]`},
			{"type=tagk&q=", `["dc","host"]`},
			{"type=tagv&q=web", `["web01","web02"]`},
		}
		for _, c := range cases {
			for _, p := range []string{"/api/suggest?", "/api/v1/suggest?"} {
				if got := string(otsWant(t, s, 200, "GET", p+c.qs, nil)); got != c.otsWant {
					t.Fatalf("%s%s: %s, want %s", p, c.qs, got, c.otsWant)
				}
			}
		}
		if got := string(otsWant(t, s, 200, "POST", "/api/suggest", `{"type":"tagv","q":"db","max":"10"}`)); got != `["db01"]` {
			t.Fatalf("POST suggest: %s", got)
		}
		otsWantError(t, s, 400, "GET", "/api/suggest?q=sys", nil, "Missing parameter <code>type</code>")
		otsWantError(t, s, 400, "GET", "/api/suggest?type=metric", nil, "Invalid 'type' parameter:metric")
		otsWantError(t, s, 400, "GET", "/api/suggest?type=metrics&max=ten", nil, "Unable to parse 'max' as a number")
		otsWantError(t, s, 400, "POST", "/api/suggest", `{"q":"x"}`, "Missing 'type' parameter")
		otsWantError(t, s, 400, "POST", "/api/suggest", `[`, "Unable to parse the given JSON")
		otsWantError(t, s, 405, "PUT", "/api/suggest", nil, "Method not allowed")
	})

	t.Run("search/lookup", func(t *testing.T) {
		type lookup struct {
			Type         string
			Metric       string
			Limit        int
			TotalResults int
			Results      []struct {
				TSUID  string
				Metric string
				Tags   map[string]string
			}
		}
		get := func(qs string) lookup {
			var lk lookup
			otsDecode(t, otsWant(t, s, 200, "GET", "/api/search/lookup?"+qs, nil), &lk)
			return lk
		}
		hosts := func(lk lookup) string {
			var hs []string
			for _, r := range lk.Results {
				hs = append(hs, r.Metric+"/"+r.Tags["host"])
			}
			sort.Strings(hs)
			return strings.Join(hs, " ")
		}
		cases := []struct{ m, otsWant string }{
			{"sys.cpu.user", "sys.cpu.user/db01 sys.cpu.user/web01 sys.cpu.user/web02"},
			{"sys.cpu.user{host=web01}", "sys.cpu.user/web01"},
			{"sys.cpu.user{dc=lga}", "sys.cpu.user/web01 sys.cpu.user/web02"},
			{"sys.cpu.user{host=*}", "sys.cpu.user/db01 sys.cpu.user/web01 sys.cpu.user/web02"},
			{"sys.cpu.user{host=web01,host=db01}", "sys.cpu.user/db01 sys.cpu.user/web01"}, // one key: ORed
			{"sys.cpu.user{host=web01,dc=sjc}", ""},                                        // two keys: ANDed
			{"sys.cpu.user{host=web01,host=*}", "sys.cpu.user/db01 sys.cpu.user/web01 sys.cpu.user/web02"},
			{"{dc=*}", "sys.cpu.sys/web01 sys.cpu.user/db01 sys.cpu.user/web01 sys.cpu.user/web02"},
			{"{host=web01}", "sys.cpu.sys/web01 sys.cpu.user/web01 sys.mem/web01"},
			{"sys.cpu.user{=sjc}", "sys.cpu.user/db01"}, // any key with value sjc
			{"*{=lga,=sjc}", "sys.cpu.sys/web01 sys.cpu.user/db01 sys.cpu.user/web01 sys.cpu.user/web02"},
		}
		for _, c := range cases {
			if got := hosts(get("m=" + url.QueryEscape(c.m))); got != c.otsWant {
				t.Fatalf("lookup %s: %q, want %q", c.m, got, c.otsWant)
			}
		}
		lk := get("m=sys.cpu.user&limit=2")
		if len(lk.Results) != 2 || lk.TotalResults != 3 || lk.Limit != 2 || lk.Type != "LOOKUP" || lk.Metric != "sys.cpu.user" {
			t.Fatalf("limit 2: %+v", lk)
		}
		if lk := get("m=sys.cpu.user&limit=0"); len(lk.Results) != 3 {
			t.Fatalf("limit 0 (all, as Grafana's backend sends without a lookupLimit): %+v", lk)
		}
		if r := get("m=sys.mem").Results; len(r) != 1 || r[0].TSUID == "" || r[0].Tags["host"] != "web01" {
			t.Fatalf("result shape: %+v", r)
		}
		var lk2 lookup
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/search/lookup", `{"metric":"sys.cpu.user","tags":[{"key":"host","value":"db01"}]}`), &lk2)
		if hosts(lk2) != "sys.cpu.user/db01" {
			t.Fatalf("POST lookup: %+v", lk2)
		}
		otsWantError(t, s, 400, "GET", "/api/search/lookup", nil, "Missing parameter <code>m</code>")
		otsWantError(t, s, 400, "GET", "/api/search/lookup?m="+url.QueryEscape("x{host=a"), nil, "Unable to parse query")
		otsWantError(t, s, 400, "GET", "/api/search/lookup?m=sys.mem&limit=x", nil, "Unable to convert 'limit' to a valid number")
		otsWantError(t, s, 404, "GET", "/api/search/lookup?m=no.such.metric", nil, "Unable to resolve one or more UIDs")
		otsWantError(t, s, 404, "GET", "/api/search/lookup?m="+url.QueryEscape("sys.mem{nokey=*}"), nil, "Unable to resolve one or more UIDs")
		otsWantError(t, s, 400, "GET", "/api/search/tsmeta?query=x", nil, "Searching is not enabled")
		otsWantError(t, s, 400, "GET", "/api/search/nosuch", nil, "Invalid search query type supplied")
	})

	t.Run("query/last", func(t *testing.T) {
		type last struct {
			Metric    string
			Timestamp int64
			Value     string
			Tags      map[string]string
			TSUID     string
		}
		get := func(method, path, body string) []last {
			var out []last
			var b any
			if body != "" {
				b = body
			}
			otsDecode(t, otsWant(t, s, 200, method, path, b), &out)
			return out
		}
		// Every series of the metric with host=web01: its newest point, ms,
		// the value a string; no names without resolve.
		got := get("GET", "/api/query/last?timeseries="+url.QueryEscape("sys.cpu.user{host=web01}"), "")
		if len(got) != 1 || got[0].Timestamp != (otsT0+10)*1000 || got[0].Value != "2" || got[0].TSUID != tsuid["web01"] || got[0].Metric != "" {
			t.Fatalf("last web01: %+v", got)
		}
		got = get("GET", "/api/query/last?resolve&timeseries=sys.cpu.user", "")
		if len(got) != 3 {
			t.Fatalf("last of the metric: %+v", got)
		}
		byHost := map[string]last{}
		for _, l := range got {
			byHost[l.Tags["host"]] = l
			if l.Metric != "sys.cpu.user" {
				t.Fatalf("resolve: %+v", l)
			}
		}
		if byHost["web02"].Value != "3.5" || byHost["db01"].Timestamp != (otsT0+5)*1000 || byHost["web01"].Value != "2" {
			t.Fatalf("last by host: %+v", byHost)
		}
		got = get("GET", "/api/query/last?tsuids="+tsuid["db01"]+","+tsuid["web02"], "")
		if len(got) != 2 || got[0].Value != "7" || got[1].Value != "3.5" {
			t.Fatalf("last by tsuids: %+v", got)
		}
		got = get("POST", "/api/query/last", fmt.Sprintf(`{"queries":[{"metric":"sys.mem","tags":{"host":"web01"}},{"tsuids":[%q]}],"resolveNames":true}`, tsuid["db01"]))
		if len(got) != 2 || got[0].Value != "100" || got[0].Metric != "sys.mem" || got[1].Tags["host"] != "db01" {
			t.Fatalf("POST last: %+v", got)
		}
		// back_scan counts hours back from now: this data is from 2023.
		if got := get("GET", "/api/query/last?back_scan=24&timeseries=sys.cpu.user", ""); len(got) != 0 {
			t.Fatalf("back_scan=24: %+v", got)
		}
		// The newest point of a series whose latest write is old, and a
		// point written later at an earlier time does not change it.
		otsPutOK(t, s, otsArr(otsDP("sys.mem", otsT0-86400*30, "5", "host", "web01")))
		if got := get("GET", "/api/query/last?timeseries=sys.mem", ""); len(got) != 1 || got[0].Value != "100" {
			t.Fatalf("last after an old write: %+v", got)
		}
		otsWantError(t, s, 400, "GET", "/api/query/last", nil, "Missing sub queries")
		otsWantError(t, s, 400, "GET", "/api/query/last?timeseries=nosuch.metric", nil, "No such name for 'metrics'")
		otsWantError(t, s, 400, "GET", "/api/query/last?back_scan=x&timeseries=sys.mem", nil, "Unable to parse back_scan parameter")
		otsWantError(t, s, 400, "GET", "/api/query/last?tsuids=XYZ", nil, "Invalid TSUID")
		otsWantError(t, s, 400, "POST", "/api/query/last", `{"queries":[]}`, "Missing sub queries")
	})

	t.Run("uid/assign", func(t *testing.T) {
		var r map[string]map[string]string
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/assign?metric=new.metric.a,new.metric.b&tagk=newk", nil), &r)
		if len(r["metric"]) != 2 || len(r["tagk"]) != 1 || len(r["metric"]["new.metric.a"]) != 6 {
			t.Fatalf("assign: %+v", r)
		}
		// Assigned names are suggested.
		if got := string(otsWant(t, s, 200, "GET", "/api/suggest?type=metrics&q=new.", nil)); got != `["new.metric.a","new.metric.b"]` {
			t.Fatalf("suggest after assign: %s", got)
		}
		r = nil
		otsDecode(t, otsWant(t, s, 400, "POST", "/api/uid/assign", `{"metric":["sys.mem","new.metric.c","bad name"],"tagv":["v1"]}`), &r)
		if len(r["metric"]) != 1 || r["metric_errors"]["sys.mem"] == "" || !strings.Contains(r["metric_errors"]["sys.mem"], "Name already exists with UID: ") ||
			!strings.Contains(r["metric_errors"]["bad name"], "illegal character") || len(r["tagv"]) != 1 {
			t.Fatalf("assign with errors: %+v", r)
		}
		otsWantError(t, s, 400, "GET", "/api/uid/assign", nil, "Missing values to assign UIDs")
		otsWantError(t, s, 400, "POST", "/api/uid/assign", `{}`, "Missing values to assign UIDs")
	})

	t.Run("uid/uidmeta", func(t *testing.T) {
		var m map[string]any
		// The metric sys.mem: its UID from a TSUID (the first 3 bytes).
		id := tsuid["web01"][:6]
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/uidmeta?type=metric&uid="+id, nil), &m)
		if m["name"] != "sys.cpu.user" || m["type"] != "METRIC" || m["uid"] != id || m["created"] != json.Number("0") {
			t.Fatalf("default uidmeta: %v", m)
		}
		body := fmt.Sprintf(`{"uid":%q,"type":"metric","description":"user CPU","custom":{"owner":"ops"}}`, id)
		m = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/uidmeta", body), &m)
		if m["description"] != "user CPU" || m["custom"].(map[string]any)["owner"] != "ops" {
			t.Fatalf("POST uidmeta: %v", m)
		}
		// POST merges: notes added, description and custom kept.
		m = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/uidmeta", fmt.Sprintf(`{"uid":%q,"type":"METRIC","notes":"n"}`, id)), &m)
		if m["description"] != "user CPU" || m["notes"] != "n" || m["custom"] == nil {
			t.Fatalf("POST merge: %v", m)
		}
		// Nothing to change: 304.
		otsWant(t, s, 304, "POST", "/api/uid/uidmeta", fmt.Sprintf(`{"uid":%q,"type":"metric"}`, id))
		// PUT replaces: only displayName left.
		m = nil
		otsDecode(t, otsWant(t, s, 200, "PUT", "/api/uid/uidmeta", fmt.Sprintf(`{"uid":%q,"type":"metric","displayName":"CPU"}`, id)), &m)
		if m["description"] != "" || m["notes"] != "" || m["custom"] != nil || m["displayName"] != "CPU" {
			t.Fatalf("PUT uidmeta: %v", m)
		}
		// The query-string form, with method_override.
		m = nil
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/uidmeta?method_override=post&type=metric&description=qs&uid="+id, nil), &m)
		if m["description"] != "qs" || m["displayName"] != "CPU" {
			t.Fatalf("QS uidmeta: %v", m)
		}
		otsWant(t, s, 204, "DELETE", "/api/uid/uidmeta?type=metric&uid="+id, nil)
		m = nil
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/uidmeta?type=metric&uid="+id, nil), &m)
		if m["description"] != "" || m["displayName"] != "" || m["name"] != "sys.cpu.user" {
			t.Fatalf("after DELETE: %v", m)
		}
		otsWantError(t, s, 404, "GET", "/api/uid/uidmeta?type=metric&uid=FFFFFF", nil, "Could not find the requested UID")
		otsWantError(t, s, 400, "GET", "/api/uid/uidmeta?type=metric", nil, "Missing parameter <code>uid</code>")
		otsWantError(t, s, 400, "GET", "/api/uid/uidmeta?uid="+id, nil, "Missing parameter <code>type</code>")
		otsWantError(t, s, 400, "GET", "/api/uid/uidmeta?type=foo&uid="+id, nil, "Invalid type requested: foo")
		otsWantError(t, s, 400, "GET", "/api/uid/uidmeta?type=metric&uid=XYZ", nil, "Invalid UID")
		otsWantError(t, s, 400, "POST", "/api/uid/uidmeta", `{"type":"metric"}`, "Missing UID")
	})

	t.Run("uid/tsmeta", func(t *testing.T) {
		id := tsuid["web01"]
		var m map[string]any
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/tsmeta?tsuid="+id, nil), &m)
		tags := m["tags"].([]any)
		if m["tsuid"] != id || m["metric"].(map[string]any)["name"] != "sys.cpu.user" || len(tags) != 4 ||
			m["max"] != "NaN" || m["lastReceived"] != json.Number(fmt.Sprint(otsT0+10)) {
			t.Fatalf("default tsmeta: %v", m)
		}
		m = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/tsmeta", fmt.Sprintf(`{"tsuid":%q,"units":"%%","custom":{"team":"a","tier":"1"},"max":100}`, id)), &m)
		if m["units"] != "%" || m["max"] != json.Number("100.0") || m["custom"].(map[string]any)["tier"] != "1" {
			t.Fatalf("POST tsmeta: %v", m)
		}
		// A POST of other fields keeps the custom fields.
		m = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/tsmeta", fmt.Sprintf(`{"tsuid":%q,"description":"d"}`, id)), &m)
		if m["description"] != "d" || m["units"] != "%" || m["custom"].(map[string]any)["team"] != "a" {
			t.Fatalf("custom fields kept: %v", m)
		}
		// GET by metric and tags: every series of the metric with them.
		var list []map[string]any
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/tsmeta?m="+url.QueryEscape("sys.cpu.user{dc=lga}"), nil), &list)
		if len(list) != 2 {
			t.Fatalf("tsmeta m=: %v", list)
		}
		found := false
		for _, x := range list {
			if x["tsuid"] == id {
				found = x["description"] == "d"
			}
		}
		if !found {
			t.Fatalf("tsmeta m= lacks the stored fields: %v", list)
		}
		// POST by ?m= names the series exactly.
		m = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/tsmeta?m="+url.QueryEscape("sys.mem{host=web01}"), `{"notes":"by name"}`), &m)
		if m["notes"] != "by name" || m["metric"].(map[string]any)["name"] != "sys.mem" {
			t.Fatalf("POST by m=: %v", m)
		}
		// A series that does not exist needs create=true.
		otsWantError(t, s, 400, "POST", "/api/uid/tsmeta?m="+url.QueryEscape("sys.mem{host=web02}"), `{"notes":"x"}`, `specify "create=true"`)
		m = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/tsmeta?create=true&m="+url.QueryEscape("sys.mem{host=web02}"), `{"notes":"x"}`), &m)
		if m["notes"] != "x" {
			t.Fatalf("create: %v", m)
		}
		otsWant(t, s, 304, "POST", "/api/uid/tsmeta", fmt.Sprintf(`{"tsuid":%q}`, id))
		// PUT replaces every user field.
		m = nil
		otsDecode(t, otsWant(t, s, 200, "PUT", "/api/uid/tsmeta", fmt.Sprintf(`{"tsuid":%q,"dataType":"gauge"}`, id)), &m)
		if m["dataType"] != "gauge" || m["description"] != "" || m["custom"] != nil || m["max"] != "NaN" {
			t.Fatalf("PUT tsmeta: %v", m)
		}
		otsWant(t, s, 204, "DELETE", "/api/uid/tsmeta?tsuid="+id, nil)
		m = nil
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/tsmeta?tsuid="+id, nil), &m)
		if m["dataType"] != "" {
			t.Fatalf("after DELETE: %v", m)
		}
		otsWantError(t, s, 404, "GET", "/api/uid/tsmeta?tsuid="+strings.Repeat("0", len(id)-2)+"FF", nil, "Could not find Timeseries meta data")
		otsWantError(t, s, 400, "GET", "/api/uid/tsmeta?tsuid=123", nil, "Invalid TSUID")
		otsWantError(t, s, 400, "GET", "/api/uid/tsmeta", nil, "Missing parameter <code>m</code>")
		otsWantError(t, s, 404, "GET", "/api/uid/tsmeta?m=nosuch", nil, "Unable to find one or more UIDs")
		otsWantError(t, s, 400, "POST", "/api/uid/tsmeta", fmt.Sprintf(`{"tsuid":%q,"max":"lots"}`, id), "Unable to parse the given JSON")
	})

	t.Run("uid/rename", func(t *testing.T) {
		var r map[string]string
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/uid/rename?metric=new.metric.a&name=renamed.metric", nil), &r)
		if r["result"] != "true" {
			t.Fatalf("rename: %v", r)
		}
		if got := string(otsWant(t, s, 200, "GET", "/api/suggest?type=metrics&q=renamed", nil)); got != `["renamed.metric"]` {
			t.Fatalf("suggest after rename: %s", got)
		}
		if got := string(otsWant(t, s, 200, "GET", "/api/suggest?type=metrics&q=new.metric.a", nil)); got != `[]` {
			t.Fatalf("the old name is still suggested: %s", got)
		}
		r = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/uid/rename", `{"tagk":"newk","name":"newk2"}`), &r)
		if r["result"] != "true" {
			t.Fatalf("POST rename: %v", r)
		}
		for _, c := range []struct{ qs, msg string }{
			{"metric=nosuch&name=x", "No such name for 'metrics': 'nosuch'"},
			{"metric=renamed.metric&name=new.metric.b", "Name already exists with UID"},
			{"metric=renamed.metric&name=bad!", "illegal character"},
			{"tagv=web01&name=web09", "carried by stored series"},
		} {
			r = nil
			otsDecode(t, otsWant(t, s, 400, "GET", "/api/uid/rename?"+c.qs, nil), &r)
			if r["result"] != "false" || !strings.Contains(r["error"], c.msg) {
				t.Fatalf("rename %s: %v, want an error with %q", c.qs, r, c.msg)
			}
		}
		otsWantError(t, s, 400, "GET", "/api/uid/rename?metric=x", nil, "Missing necessary values to rename UID")
	})

	t.Run("annotations", func(t *testing.T) {
		id := tsuid["web02"]
		var a map[string]any
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/annotation", fmt.Sprintf(`{"tsuid":%q,"startTime":%d,"description":"deploy","custom":{"v":"1.2"}}`, id, otsT0+15)), &a)
		if a["description"] != "deploy" || a["tsuid"] != id || a["startTime"] != json.Number(fmt.Sprint(otsT0+15)) {
			t.Fatalf("POST annotation: %v", a)
		}
		// POST merges.
		a = nil
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/annotation", fmt.Sprintf(`{"tsuid":%q,"startTime":%d,"notes":"rolled back"}`, id, otsT0+15)), &a)
		if a["description"] != "deploy" || a["notes"] != "rolled back" {
			t.Fatalf("POST merge: %v", a)
		}
		a = nil
		otsDecode(t, otsWant(t, s, 200, "GET", fmt.Sprintf("/api/annotation?tsuid=%s&start_time=%d", id, otsT0+15), nil), &a)
		if a["notes"] != "rolled back" || a["custom"].(map[string]any)["v"] != "1.2" {
			t.Fatalf("GET annotation: %v", a)
		}
		// Global annotations, one of them in ms.
		otsWant(t, s, 200, "POST", "/api/annotation", fmt.Sprintf(`{"startTime":%d,"description":"maintenance"}`, otsT0+30))
		otsWant(t, s, 200, "PUT", "/api/annotation", fmt.Sprintf(`{"startTime":%d,"endTime":%d,"description":"outage"}`, (otsT0+40)*1000, (otsT0+50)*1000))
		otsWant(t, s, 200, "POST", "/api/annotation", fmt.Sprintf(`{"startTime":%d,"description":"later"}`, otsT0+7200))
		var list []map[string]any
		otsDecode(t, otsWant(t, s, 200, "GET", fmt.Sprintf("/api/annotations?start_time=%d&end_time=%d", otsT0, otsT0+3600), nil), &list)
		if len(list) != 2 || list[0]["description"] != "maintenance" || list[1]["description"] != "outage" {
			t.Fatalf("global annotations: %v", list)
		}
		// In query results: the series' own, and the global ones when asked.
		body := fmt.Sprintf(`{"start":%d,"end":%d,"globalAnnotations":true,"queries":[{"metric":"sys.cpu.user","aggregator":"sum","tags":{"host":"*"}}]}`, otsT0, otsT0+3599)
		rs := otsQuery(t, s, "/api/query", body)
		for _, r := range rs {
			if len(r.GlobalAnnotations) != 2 {
				t.Fatalf("globalAnnotations of %v: %v", r.Tags, r.GlobalAnnotations)
			}
			if r.Tags["host"] == "web02" {
				if len(r.Annotations) != 1 || r.Annotations[0]["description"] != "deploy" {
					t.Fatalf("annotations of web02: %v", r.Annotations)
				}
			} else if len(r.Annotations) != 0 {
				t.Fatalf("annotations of %v: %v", r.Tags, r.Annotations)
			}
		}
		body = fmt.Sprintf(`{"start":%d,"end":%d,"noAnnotations":true,"globalAnnotations":true,"queries":[{"metric":"sys.cpu.user","aggregator":"sum"}]}`, otsT0, otsT0+3599)
		if r := otsSingle(t, "noAnnotations", otsQuery(t, s, "/api/query", body)); r.Annotations != nil || r.GlobalAnnotations != nil {
			t.Fatalf("noAnnotations: %+v", r)
		}
		// Outside the query range, not attached.
		body = fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"metric":"sys.cpu.user","aggregator":"sum"}]}`, otsT0+16, otsT0+3599)
		if r := otsSingle(t, "range", otsQuery(t, s, "/api/query", body)); len(r.Annotations) != 0 {
			t.Fatalf("annotation outside the range: %v", r.Annotations)
		}
		// Bulk: store two, then delete by range.
		var bulk []map[string]any
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/annotation/bulk", fmt.Sprintf(`[{"tsuid":%q,"startTime":%d,"description":"b1"},{"tsuid":%q,"startTime":%d,"description":"b2"}]`,
			id, otsT0+100, tsuid["db01"], otsT0+100)), &bulk)
		if len(bulk) != 2 || bulk[1]["description"] != "b2" {
			t.Fatalf("bulk POST: %v", bulk)
		}
		var del map[string]any
		otsDecode(t, otsWant(t, s, 200, "DELETE", "/api/annotation/bulk", fmt.Sprintf(`{"tsuids":[%q],"startTime":%d,"endTime":%d}`, id, otsT0, otsT0+3600)), &del)
		if del["totalDeleted"] != json.Number("2") {
			t.Fatalf("bulk DELETE: %v", del)
		}
		del = nil
		otsDecode(t, otsWant(t, s, 200, "DELETE", fmt.Sprintf("/api/annotation/bulk?global&start_time=%d&end_time=%d", otsT0, otsT0+3600), nil), &del)
		if del["totalDeleted"] != json.Number("2") || del["global"] != true {
			t.Fatalf("bulk DELETE global: %v", del)
		}
		otsWant(t, s, 204, "DELETE", fmt.Sprintf("/api/annotation?start_time=%d", otsT0+7200), nil)
		otsWantError(t, s, 404, "GET", fmt.Sprintf("/api/annotation?start_time=%d", otsT0+7200), nil, "Unable to locate annotation in storage")
		// db01's b2 is still there.
		a = nil
		otsDecode(t, otsWant(t, s, 200, "GET", fmt.Sprintf("/api/annotation?tsuid=%s&start_time=%d", tsuid["db01"], otsT0+100), nil), &a)
		if a["description"] != "b2" {
			t.Fatalf("b2: %v", a)
		}
		otsWant(t, s, 304, "POST", "/api/annotation", fmt.Sprintf(`{"startTime":%d}`, otsT0))
		otsWantError(t, s, 400, "POST", "/api/annotation", `{"description":"no start"}`, "The start timestamp has not been set")
		otsWantError(t, s, 400, "GET", "/api/annotation", nil, "Missing start time")
		otsWantError(t, s, 400, "POST", "/api/annotation", `{"tsuid":"ZZ","startTime":5,"description":"x"}`, "Invalid TSUID")
		otsWantError(t, s, 400, "DELETE", "/api/annotation/bulk", `{"startTime":5}`, "Missing the TSUIDs or global annotations flag")
		otsWantError(t, s, 400, "DELETE", "/api/annotation/bulk", `{"global":true}`, "Missing the start time value")
		otsWantError(t, s, 400, "POST", "/api/annotation/bulk", `[{"description":"x"}]`, "The start timestamp has not been set")
		otsWantError(t, s, 405, "GET", "/api/annotation/bulk", nil, "Method not allowed")
	})

	t.Run("aggregators, config, filters, version", func(t *testing.T) {
		var aggs []string
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/aggregators", nil), &aggs)
		if len(aggs) != 35 || !strings.Contains(strings.Join(aggs, ","), "squareSum") {
			t.Fatalf("aggregators: %v", aggs)
		}
		var filters map[string]struct{ Examples, Description string }
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/config/filters", nil), &filters)
		if got := strings.Join(otsSortedKeys(filters), ","); got != "iliteral_or,iwildcard,literal_or,not_iliteral_or,not_key,not_literal_or,regexp,wildcard" {
			t.Fatalf("filters: %s", got)
		}
		for k, f := range filters {
			if f.Examples == "" || f.Description == "" {
				t.Fatalf("filter %s: %+v", k, f)
			}
		}
		var cfg map[string]string
		otsDecode(t, otsWant(t, s, 200, "POST", "/api/config", nil), &cfg)
		if cfg["tsd.storage.max_tags"] != "32" || cfg["tsd.http.request.cors_domains"] != "http://grafana.example" || cfg["tsd.network.port"] == "" {
			t.Fatalf("config: %v", cfg)
		}
		var v map[string]any
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/version", nil), &v)
		for _, k := range []string{"version", "short_revision", "full_revision", "timestamp", "repo_status", "user", "host", "repo", "branch"} {
			if _, ok := v[k].(string); !ok {
				t.Fatalf("version field %s: %v", k, v)
			}
		}
	})

	t.Run("stats and dropcaches", func(t *testing.T) {
		var st []struct {
			Metric    string
			Timestamp int64
			Value     string
			Tags      map[string]string
		}
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/stats", nil), &st)
		found := false
		for _, x := range st {
			if x.Metric == "hourglass.index.series" {
				found = x.Value != "0" && x.Tags["host"] != ""
			}
			if x.Timestamp == 0 || x.Value == "" {
				t.Fatalf("stat %+v", x)
			}
		}
		if !found {
			t.Fatalf("no hourglass.index.series in %d stats", len(st))
		}
		var sq struct {
			Running   []map[string]any
			Completed []map[string]any
		}
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/stats/query", nil), &sq)
		if len(sq.Completed) == 0 || sq.Completed[0]["httpResponse"] == nil || sq.Completed[0]["query"] == nil {
			t.Fatalf("stats/query: %+v", sq)
		}
		var jvm map[string]any
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/stats/jvm", nil), &jvm)
		if jvm["memory"] == nil || jvm["runtime"] == nil {
			t.Fatalf("stats/jvm: %v", jvm)
		}
		var threads []map[string]any
		otsDecode(t, otsWant(t, s, 200, "GET", "/api/stats/threads", nil), &threads)
		if len(threads) == 0 || threads[0]["stack"] == nil {
			t.Fatalf("stats/threads: %v", threads)
		}
		if got := string(otsWant(t, s, 200, "GET", "/api/stats/region_clients", nil)); got != "[]" {
			t.Fatalf("region_clients: %s", got)
		}
		for _, m := range []string{"GET", "DELETE"} {
			if got := string(otsWant(t, s, 200, m, "/api/dropcaches", nil)); got != `{"message":"Caches dropped","status":"200"}` {
				t.Fatalf("%s dropcaches: %s", m, got)
			}
		}
		otsWantError(t, s, 405, "POST", "/api/dropcaches", nil, "Method not allowed")
		// The names still resolve after the caches went.
		if got := string(otsWant(t, s, 200, "GET", "/api/suggest?type=metrics&q=sys.mem", nil)); got != `["sys.mem"]` {
			t.Fatalf("after dropcaches: %s", got)
		}
	})

	t.Run("concurrent queries, puts and stats", func(t *testing.T) {
		done := make(chan error, 12)
		for g := 0; g < 12; g++ {
			go func(g int) {
				var err error
				for i := 0; i < 20 && err == nil; i++ {
					var req *http.Request
					switch g % 3 {
					case 0:
						req, _ = http.NewRequest("POST", s.url+"/api/query?show_summary", strings.NewReader(fmt.Sprintf(
							`{"start":%d,"end":%d,"showSummary":true,"queries":[{"metric":"sys.cpu.user","aggregator":"sum","downsample":"10s-avg"}]}`, otsT0, otsT0+3600)))
					case 1:
						req, _ = http.NewRequest("GET", s.url+"/api/stats/query", nil)
					default:
						req, _ = http.NewRequest("POST", s.url+"/api/put", strings.NewReader(otsArr(otsDP("conc.m", otsT0+int64(i), fmt.Sprint(g), "g", fmt.Sprint(g)))))
					}
					resp, e := client.Do(req)
					if e != nil {
						err = e
						break
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode >= 300 {
						err = fmt.Errorf("%s %s: %d", req.Method, req.URL, resp.StatusCode)
					}
				}
				done <- err
			}(g)
		}
		for g := 0; g < 12; g++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(s.logs.String(), "DATA RACE") {
			t.Fatalf("the server reported a data race:\n%s", s.logs.String())
		}
	})

	t.Run("bad input is never a 5xx", func(t *testing.T) {
		paths := []string{"/api/put", "/api/query", "/api/query/last", "/api/suggest", "/api/search/lookup",
			"/api/uid/assign", "/api/uid/uidmeta", "/api/uid/tsmeta", "/api/uid/rename", "/api/annotation",
			"/api/annotations", "/api/annotation/bulk", "/api/aggregators", "/api/config", "/api/config/filters",
			"/api/stats", "/api/version", "/api/search/tsmeta"}
		queries := []string{"", "?start=x", "?m=" + url.QueryEscape("sum:{}{}"), "?tsuid=sum:0", "?type=tagv&max=-1",
			"?m=" + url.QueryEscape("{=}") + "&limit=-5", "?uid=%00&type=tagk", "?tsuid=00&m=x", "?start_time=-1",
			"?start_time=1&tsuid=" + strings.Repeat("00", 300), "?timeseries=" + url.QueryEscape("a{b=c,b=d}") + "&back_scan=99999999",
			"?metric=" + strings.Repeat("x", 300), "?start=0&m=sum:0all-sum:rate:x", "?start=1&end=2&m=" + url.QueryEscape("p999:1nc-ep99r7-nan:x{a=regexp(()}"),
			"?tagk=a&name=b", "?global&start_time=1h-ago&tsuids=,,"}
		bodies := []string{"", "{", "[]", "null", "0", `"x"`, `{"start":1,"queries":[{"aggregator":"sum","tsuids":["zz"]}]}`,
			`{"start":-1,"queries":[{"aggregator":"sum","metric":"x","downsample":"0all-none"}]}`,
			`[{"startTime":1e30,"tsuid":""}]`, `{"uid":"","type":"tagv"}`, `{"tsuid":"00","max":[1]}`,
			`{"queries":[{"metric":"sys.mem","tags":{"":""}}],"backScan":-3}`, `{"metric":["a",1,null],"tagv":{}}`,
			`{"type":"metrics","q":null,"max":1e99}`, `{"tsuids":["` + strings.Repeat("A", 1000) + `"],"startTime":"1"}`}
		for _, p := range paths {
			for _, q := range queries {
				for _, m := range []string{"GET", "DELETE"} {
					if code, _, b := otsCall(t, s, m, p+q, nil); code >= 500 {
						t.Fatalf("%s %s%s: %d %s", m, p, q, code, b)
					}
				}
			}
			for _, b := range bodies {
				for _, m := range []string{"POST", "PUT", "DELETE"} {
					if code, _, resp := otsCall(t, s, m, p, []byte(b)); code >= 500 {
						t.Fatalf("%s %s %s: %d %s", m, p, b, code, resp)
					}
				}
			}
		}
	})

	t.Run("routing, versions, method override, jsonp, gzip, CORS", func(t *testing.T) {
		otsWantError(t, s, 404, "GET", "/api/nosuch", nil, "Endpoint not found")
		otsWantError(t, s, 404, "GET", "/api/v1/nosuch", nil, "Endpoint not found")
		otsWantError(t, s, 501, "GET", "/api/v2/aggregators", nil, "Requested API version is greater than the max implemented")
		otsWantError(t, s, 400, "GET", "/api/v1x/aggregators", nil, "Invalid API version format supplied")
		otsWantError(t, s, 501, "GET", "/api/query/exp", nil, "Not implemented")
		otsWantError(t, s, 404, "GET", "/api/serializers", nil, "Endpoint not found")
		for _, p := range []string{"/api/v1/aggregators", "/api/v0/aggregators", "/api/aggregators/", "/API/Aggregators", "/api/v1/config/filters", "/api/v1/query/last?timeseries=sys.mem"} {
			otsWant(t, s, 200, "GET", p, nil)
		}
		// Verbs each endpoint does not take.
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/put"}, {"PUT", "/api/query"}, {"DELETE", "/api/query/last"}, {"PUT", "/api/suggest"},
			{"DELETE", "/api/search/lookup"}, {"PUT", "/api/uid/assign"}, {"PATCH", "/api/uid/uidmeta"},
			{"PATCH", "/api/uid/tsmeta"}, {"PUT", "/api/uid/rename"}, {"PATCH", "/api/annotation"},
			{"GET", "/api/annotation/bulk"}, {"DELETE", "/api/aggregators"}, {"PUT", "/api/config"},
			{"DELETE", "/api/config/filters"}, {"POST", "/api/dropcaches"}, {"PUT", "/api/version"},
			{"DELETE", "/api/stats"}, {"PUT", "/api/stats/query"}, {"PUT", "/api/v1/version"},
		} {
			otsWantError(t, s, 405, c.method, c.path, nil, "Method not allowed")
		}
		// method_override on a GET.
		otsWant(t, s, 405, "GET", "/api/dropcaches?method_override=post", nil)
		otsWantError(t, s, 405, "GET", "/api/aggregators?method_override=patch", nil, "Unknown or unsupported method override value")
		otsWantError(t, s, 405, "GET", "/api/aggregators?method_override=", nil, "Missing method override value")
		// jsonp.
		code, h, b := otsCall(t, s, "GET", "/api/suggest?type=metrics&q=sys.mem&jsonp=cb", nil)
		if code != 200 || string(b) != `cb(["sys.mem"])` || !strings.Contains(h.Get("Content-Type"), "javascript") {
			t.Fatalf("jsonp: %d %s %v", code, b, h)
		}
		otsWantError(t, s, 400, "GET", "/api/aggregators?jsonp="+url.QueryEscape("a<b"), nil, "Invalid jsonp callback name")
		// A gzipped reply when asked for.
		code, h, b = otsCall(t, s, "GET", "/api/suggest?type=metrics&q=sys.mem", nil, "Accept-Encoding: gzip")
		if code != 200 || h.Get("Content-Encoding") != "gzip" {
			t.Fatalf("gzip: %d %v", code, h)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if plain, _ := io.ReadAll(zr); string(plain) != `["sys.mem"]` {
			t.Fatalf("gunzipped: %s", plain)
		}
		// CORS: the allowed origin gets the headers, OPTIONS a 200; another
		// origin is refused in OpenTSDB's way (200 and an error body).
		code, h, _ = otsCall(t, s, "OPTIONS", "/api/query", nil, "Origin: http://grafana.example")
		if code != 200 || h.Get("Access-Control-Allow-Origin") != "http://grafana.example" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
			t.Fatalf("CORS preflight: %d %v", code, h)
		}
		code, h, b = otsCall(t, s, "GET", "/api/aggregators", nil, "Origin: http://evil.example")
		if code != 200 || h.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(string(b), "CORS domain not allowed") {
			t.Fatalf("CORS refusal: %d %v %s", code, h, b)
		}
		// Without an Origin, no CORS: OPTIONS is not a method of the endpoint.
		otsWant(t, s, 405, "OPTIONS", "/api/query", nil)
	})
}
