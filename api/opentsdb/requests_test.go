package opentsdb

import (
	"net/url"
	"reflect"
	"testing"
)

func qs(t *testing.T, s string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantErr(t *testing.T, err error, msg, details string) {
	t.Helper()
	re, ok := err.(*RequestError)
	if !ok {
		t.Fatalf("got %v (%T), want *RequestError %q", err, err, msg)
	}
	if re.Status != 400 || re.Message != msg || re.Details != details {
		t.Errorf("got %d %q %q\nwant 400 %q %q", re.Status, re.Message, re.Details, msg, details)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		name  string
		parse func() (*SuggestRequest, error)
		want  *SuggestRequest
		err   string
	}{
		{"grafana health check", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "q=cpu&type=metrics")) },
			&SuggestRequest{Type: "metrics", Q: "cpu", Max: 25}, ""},
		{"grafana lookup limit", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "type=tagv&q=web&max=1000")) },
			&SuggestRequest{Type: "tagv", Q: "web", Max: 1000}, ""},
		{"no q", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "type=tagk")) },
			&SuggestRequest{Type: "tagk", Max: 25}, ""},
		{"max zero", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "type=tagk&max=0")) },
			&SuggestRequest{Type: "tagk", Max: 25}, ""},
		{"no type", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "q=cpu")) },
			nil, "Missing parameter <code>type</code>"},
		{"bad type", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "type=Metrics")) },
			nil, "Invalid 'type' parameter:Metrics"},
		{"bad max", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "type=metrics&max=x")) },
			nil, "Unable to parse 'max' as a number"},
		{"bad max before bad type", func() (*SuggestRequest, error) { return ParseSuggestURI(qs(t, "type=x&max=x")) },
			nil, "Unable to parse 'max' as a number"},
		{"json", func() (*SuggestRequest, error) {
			return ParseSuggestJSON([]byte(`{"type":"metrics","q":"sys","max":10}`))
		},
			&SuggestRequest{Type: "metrics", Q: "sys", Max: 10}, ""},
		{"json string max", func() (*SuggestRequest, error) { return ParseSuggestJSON([]byte(`{"type":"tagk","max":"5"}`)) },
			&SuggestRequest{Type: "tagk", Max: 5}, ""},
		{"json no type", func() (*SuggestRequest, error) { return ParseSuggestJSON([]byte(`{"q":"sys"}`)) },
			nil, "Missing 'type' parameter"},
		{"json bad type", func() (*SuggestRequest, error) { return ParseSuggestJSON([]byte(`{"type":"x"}`)) },
			nil, "Invalid 'type' parameter:x"},
		{"json empty", func() (*SuggestRequest, error) { return ParseSuggestJSON(nil) },
			nil, "Missing message content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse()
			if tt.err != "" {
				re, ok := err.(*RequestError)
				if !ok || re.Message != tt.err {
					t.Errorf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name  string
		parse func() (*LookupRequest, error)
		want  *LookupRequest
	}{
		{"grafana tag_names", func() (*LookupRequest, error) { return ParseLookupURI(qs(t, "m=cpu.usage&limit=1000")) },
			&LookupRequest{Metric: "cpu.usage", Limit: 1000, UseMeta: true}},
		{"grafana tag_values", func() (*LookupRequest, error) {
			return ParseLookupURI(url.Values{"m": {"cpu.usage{host=*,dc=lga}"}, "limit": {"0"}})
		}, &LookupRequest{Metric: "cpu.usage", Tags: []LookupTag{{"host", "*"}, {"dc", "lga"}}, Limit: 0, UseMeta: true}},
		{"default limit, any key, any value", func() (*LookupRequest, error) {
			return ParseLookupURI(url.Values{"m": {"{=web01,host=}"}})
		}, &LookupRequest{Tags: []LookupTag{{"*", "web01"}, {"host", "*"}}, Limit: 25, UseMeta: true}},
		{"metric with empty braces", func() (*LookupRequest, error) { return ParseLookupURI(url.Values{"m": {"m{}"}}) },
			&LookupRequest{Metric: "m", Limit: 25, UseMeta: true}},
		{"json", func() (*LookupRequest, error) {
			return ParseLookupJSON([]byte(`{"metric":"sys.cpu","tags":[{"key":"host","value":"*"},{"key":"","value":"web01"}],"limit":3,"useMeta":false}`))
		}, &LookupRequest{Metric: "sys.cpu", Tags: []LookupTag{{"host", "*"}, {"*", "web01"}}, Limit: 3}},
		{"json tags only", func() (*LookupRequest, error) {
			return ParseLookupJSON([]byte(`{"tags":[{"key":"host","value":"web01"}]}`))
		}, &LookupRequest{Metric: "*", Tags: []LookupTag{{"host", "web01"}}, Limit: 25, UseMeta: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse()
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}

	errs := []struct {
		name         string
		parse        func() (*LookupRequest, error)
		msg, details string
	}{
		{"no m", func() (*LookupRequest, error) { return ParseLookupURI(qs(t, "limit=5")) }, "Missing parameter <code>m</code>", ""},
		{"unclosed", func() (*LookupRequest, error) { return ParseLookupURI(url.Values{"m": {"m{host=a"}}) },
			"Unable to parse query", "Missing '}' at the end of: m{host=a"},
		{"empty braces only", func() (*LookupRequest, error) { return ParseLookupURI(url.Values{"m": {"{}"}}) },
			"Unable to parse query", "Missing metric and tags: {}"},
		{"short pair", func() (*LookupRequest, error) { return ParseLookupURI(url.Values{"m": {"m{=}"}}) },
			"Unable to parse query", "When parsing tag '=': Missing tag pair"},
		{"bad pair", func() (*LookupRequest, error) { return ParseLookupURI(url.Values{"m": {"m{host}"}}) },
			"Unable to parse query", "When parsing tag 'host': invalid tag: host"},
		{"bad limit", func() (*LookupRequest, error) { return ParseLookupURI(qs(t, "m=m&limit=x")) },
			"Unable to convert 'limit' to a valid number", ""},
		{"nothing", func() (*LookupRequest, error) { return ParseLookupURI(qs(t, "m=*")) },
			"Missing metric and tags. Please supply at least one value.", ""},
		{"json nothing", func() (*LookupRequest, error) { return ParseLookupJSON([]byte(`{}`)) },
			"Missing metric and tags. Please supply at least one value.", ""},
		{"json empty", func() (*LookupRequest, error) { return ParseLookupJSON([]byte(``)) },
			"Missing message content", "Supply valid JSON formatted data in the body of your request"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.parse()
			wantErr(t, err, tt.msg, tt.details)
		})
	}
}

func TestLast(t *testing.T) {
	got, err := ParseLastURI(url.Values{
		"timeseries": {"sys.cpu.user{host=web01,cpu=0}", "sys.mem"},
		"tsuids":     {"000001000001000001,000001000001000002"},
		"back_scan":  {"24"},
		"resolve":    {""},
	})
	want := &LastRequest{ResolveNames: true, BackScan: 24, Queries: []LastSubQuery{
		{Metric: "sys.cpu.user", Tags: []Tag{{"host", "web01"}, {"cpu", "0"}}},
		{Metric: "sys.mem"},
		{TSUIDs: []string{"000001000001000001", "000001000001000002"}},
	}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}

	got, err = ParseLastJSON([]byte(`{"queries":[{"metric":"sys.cpu.user","tags":{"host":"web01","cpu":"0"}},{"tsuids":["0001"]}],"resolveNames":true,"backScan":24}`))
	want = &LastRequest{ResolveNames: true, BackScan: 24, Queries: []LastSubQuery{
		{Metric: "sys.cpu.user", Tags: []Tag{{"cpu", "0"}, {"host", "web01"}}},
		{TSUIDs: []string{"0001"}},
	}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}

	errs := []struct {
		name  string
		parse func() (*LastRequest, error)
		msg   string
	}{
		{"nothing", func() (*LastRequest, error) { return ParseLastURI(url.Values{"resolve": {""}}) }, "Missing sub queries"},
		{"bad back_scan", func() (*LastRequest, error) { return ParseLastURI(qs(t, "timeseries=m&back_scan=x")) }, "Unable to parse back_scan parameter"},
		{"unclosed", func() (*LastRequest, error) { return ParseLastURI(url.Values{"timeseries": {"m{a=b"}}) }, "Missing '}' at the end of: m{a=b"},
		{"bad tag", func() (*LastRequest, error) { return ParseLastURI(url.Values{"timeseries": {"m{a}"}}) }, "When parsing tag 'a': invalid tag: a"},
		{"duplicate tag", func() (*LastRequest, error) { return ParseLastURI(url.Values{"timeseries": {"m{a=1,a=2}"}}) },
			"When parsing tag 'a=2': duplicate tag: a=2, tags={a=1}"},
		{"json nothing", func() (*LastRequest, error) { return ParseLastJSON([]byte(`{"queries":[]}`)) }, "Missing sub queries"},
		{"json bad", func() (*LastRequest, error) { return ParseLastJSON([]byte(`{"queries":7}`)) }, "Unable to parse the given JSON"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.parse()
			re, ok := err.(*RequestError)
			if !ok || re.Message != tt.msg {
				t.Errorf("got %v, want %q", err, tt.msg)
			}
		})
	}
}

func TestUIDAssign(t *testing.T) {
	got, err := ParseUIDAssignURI(qs(t, "metric=sys.cpu.0,sys.cpu.1,&tagv=web01"))
	want := &UIDAssignRequest{Metric: []string{"sys.cpu.0", "sys.cpu.1"}, TagV: []string{"web01"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v", got, err)
	}
	got, err = ParseUIDAssignJSON([]byte(`{"metric":["a","b!"],"tagk":["host"],"other":["x"]}`))
	want = &UIDAssignRequest{Metric: []string{"a", "b!"}, TagK: []string{"host"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v", got, err)
	}
	_, err = ParseUIDAssignURI(qs(t, "metric="))
	wantErr(t, err, "Missing values to assign UIDs", "")
	_, err = ParseUIDAssignJSON([]byte(`{"metric":[]}`))
	wantErr(t, err, "Missing values to assign UIDs", "")
	_, err = ParseUIDAssignJSON([]byte(`{"metric":"a"}`))
	if re, ok := err.(*RequestError); !ok || re.Message != "Unable to parse the given JSON" {
		t.Errorf("got %v", err)
	}
	if err := ValidateName("metric", "b!", 0); err == nil || err.Error() != `Invalid metric ("b!"): illegal character: !` {
		t.Errorf("got %v", err)
	}
}
