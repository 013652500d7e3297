package opentsdb

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func ro(counter bool, max, reset int64, drop bool) *RateOptions {
	return &RateOptions{Counter: counter, CounterMax: max, ResetValue: reset, DropResets: drop}
}

func sub(agg, metric string, mods func(*SubQuery)) SubQuery {
	sq := newSubQuery()
	sq.Aggregator, sq.Metric = agg, metric
	if mods != nil {
		mods(&sq)
	}
	return sq
}

// The request bodies of Grafana's OpenTSDB datasource (clients.md §1.2), one
// per datasource version and code path.
func TestParseQueryJSONGrafana(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *QueryRequest
	}{
		{"<=2.1 legacy frontend, tags, NaN counter options",
			`{"start":1767225600000,"queries":[{"metric":"cpu.usage","aggregator":"avg","rate":true,
			  "rateOptions":{"counter":true,"counterMax":null,"resetValue":null},"downsample":"1m-avg",
			  "tags":{"host":"web*","dc":"lga|sjc","env":"*"}}],
			  "msResolution":false,"globalAnnotations":true}`,
			&QueryRequest{Start: "1767225600000", GlobalAnnotations: true, Queries: []SubQuery{
				sub("avg", "cpu.usage", func(q *SubQuery) {
					q.Rate, q.RateOptions, q.Downsample = true, ro(true, math.MaxInt64, 0, false), "1m-avg"
					q.Filters = []Filter{
						{FilterLiteralOr, "dc", "lga|sjc", true},
						{FilterWildcard, "env", "*", true},
						{FilterIWildcard, "host", "web*", true},
					}
				})}}},
		{"2.2 legacy frontend, filters, dropResets, ms",
			`{"start":1767225600000,"queries":[{"metric":"cpu.usage","aggregator":"sum","rate":true,
			  "rateOptions":{"counter":true,"counterMax":1000,"resetValue":10,"dropResets":false},
			  "downsample":"500ms-avg-null","filters":[{"type":"iliteral_or","tagk":"host","filter":"web01|web02","groupBy":false}]}],
			  "msResolution":true,"globalAnnotations":true,"end":1767229200000}`,
			&QueryRequest{Start: "1767225600000", End: "1767229200000", MsResolution: true, GlobalAnnotations: true,
				Queries: []SubQuery{sub("sum", "cpu.usage", func(q *SubQuery) {
					q.Rate, q.RateOptions, q.Downsample = true, ro(true, 1000, 10, false), "500ms-avg-null"
					q.Filters = []Filter{{FilterILiteralOr, "host", "web01|web02", false}}
				})}}},
		{"2.3 legacy frontend (clients.md example)",
			`{"start":1767225600000,
			 "queries":[{"metric":"cpu.usage","aggregator":"sum","rate":true,
			             "rateOptions":{"counter":true,"dropResets":true},
			             "downsample":"1m-avg",
			             "filters":[{"type":"wildcard","tagk":"host","filter":"web*","groupBy":true}],
			             "explicitTags":true}],
			 "msResolution":false,"globalAnnotations":true,"showQuery":true}`,
			&QueryRequest{Start: "1767225600000", GlobalAnnotations: true, ShowQuery: true,
				Queries: []SubQuery{sub("sum", "cpu.usage", func(q *SubQuery) {
					q.Rate, q.RateOptions, q.Downsample = true, ro(true, math.MaxInt64, 0, true), "1m-avg"
					q.Filters = []Filter{{FilterWildcard, "host", "web*", true}}
					q.ExplicitTags = true
				})}}},
		{"2.4 backend (clients.md example)",
			`{"start":1767225600,"end":1767229200,"queries":[{"aggregator":"sum","downsample":"30s-avg","filters":[{"filter":"web*","groupBy":true,"tagk":"host","type":"wildcard"}],"metric":"cpu.usage"}]}`,
			&QueryRequest{Start: "1767225600", End: "1767229200",
				Queries: []SubQuery{sub("sum", "cpu.usage", func(q *SubQuery) {
					q.Downsample = "30s-avg"
					q.Filters = []Filter{{FilterWildcard, "host", "web*", true}}
				})}}},
		{"backend, float counter options, tags and filters",
			`{"start":1767225600,"end":1767229200,"queries":[{"aggregator":"sum","explicitTags":true,"filters":[{"filter":"a|b","groupBy":false,"tagk":"dc","type":"literal_or"}],"metric":"net.bytes","rate":true,"rateOptions":{"counter":true,"counterMax":4294967295,"resetValue":1.5e3},"tags":{"host":"web01"}}]}`,
			&QueryRequest{Start: "1767225600", End: "1767229200",
				Queries: []SubQuery{sub("sum", "net.bytes", func(q *SubQuery) {
					q.Rate, q.RateOptions, q.ExplicitTags = true, ro(true, 4294967295, 1500, false), true
					q.Filters = []Filter{{FilterLiteralOr, "dc", "a|b", false}, {FilterLiteralOr, "host", "web01", true}}
				})}}},
		{"backend, unset uint64 counter max as a float64 (issue 11)",
			`{"start":1767225600,"queries":[{"aggregator":"sum","metric":"m","rate":true,"rateOptions":{"counter":true,"counterMax":1.8446744073709552e+19,"resetValue":0}}]}`,
			&QueryRequest{Start: "1767225600",
				Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
					q.Rate, q.RateOptions = true, ro(true, math.MaxInt64, 0, false)
				})}}},
		{"backend, empty query",
			`{"start":0,"end":0,"queries":null}`,
			&QueryRequest{Start: "0", End: "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQueryJSON([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseQueryJSONFields(t *testing.T) {
	body := `{"start":"1h-ago","end":"now","timezone":"UTC","noAnnotations":true,"globalAnnotations":"true",
	  "ms":true,"showTSUIDs":1,"showSummary":true,"showStats":true,"showQuery":true,"delete":false,
	  "useCalendar":true,"padding":true,"overrideByteLimit":true,"overrideDataPointLimit":true,"unknown":{"x":[1]},
	  "options":{"a":["b"]},
	  "queries":[
	    {"aggregator":"sum","tsuids":["000001000001000001","000001000001000002"],"percentiles":[99.9,"50",95],
	     "rollupUsage":"rollup_raw","preAggregate":true,"showHistogramBuckets":true,"useMultiGets":false,
	     "useFuzzyFilter":false,"index":7,"rateOptions":{"isCounter":true},
	     "filters":[{"type":"not_key","tagk":"host","filter":"","group_by":true},null]},
	    {"aggregator":"sum","tsuids":["000001000001000001","000001000001000002"],"percentiles":[99.9,"50",95],
	     "rollupUsage":"rollup_raw","preAggregate":true,"showHistogramBuckets":true,"useMultiGets":false,
	     "useFuzzyFilter":false,"rateOptions":{"isCounter":true},
	     "filters":[{"type":"not_key","tagk":"host","filter":"","group_by":true}]},
	    {"aggregator":"max","metric":"m","rollupUsage":"whatever"}
	  ]}`
	got, err := ParseQueryJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &QueryRequest{Start: "1h-ago", End: "now", Timezone: "UTC", NoAnnotations: true, GlobalAnnotations: true,
		MsResolution: true, ShowTSUIDs: true, ShowSummary: true, ShowStats: true, ShowQuery: true, UseCalendar: true,
		Padding: true, OverrideByteLimit: true, OverrideDataPointLimit: true,
		Queries: []SubQuery{
			{Aggregator: "sum", TSUIDs: []string{"000001000001000001", "000001000001000002"},
				Percentiles: []float64{50, 95, 99.9}, RollupUsage: "ROLLUP_RAW", PreAggregate: true,
				ShowHistogramBuckets: true, RateOptions: ro(true, math.MaxInt64, 0, false),
				Filters: []Filter{{FilterNotKey, "host", "", true}}},
			{Aggregator: "max", Metric: "m", RollupUsage: "ROLLUP_NOFALLBACK", UseMultiGets: true, UseFuzzyFilter: true, Index: 1},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseQueryJSONErrors(t *testing.T) {
	tests := []struct {
		name, body, msg, details string
	}{
		{"empty", "", "Missing message content", "Supply valid JSON formatted data in the body of your request"},
		{"spaces", "  \n", "Missing message content", "Supply valid JSON formatted data in the body of your request"},
		{"not JSON", "{", "Unable to parse the given JSON", "unexpected end of JSON input"},
		{"array", "[]", "Unable to parse the given JSON", "json: cannot unmarshal array into Go value of type opentsdb.queryWire"},
		{"object start", `{"start":{}}`, "Unable to parse the given JSON", "expected a string, got an object"},
		{"bad bool", `{"showQuery":"yes"}`, "Unable to parse the given JSON", `expected a boolean, got "yes"`},
		{"bad counterMax", `{"queries":[{"rateOptions":{"counterMax":"x"}}]}`, "Unable to parse the given JSON", `expected an integer, got "x"`},
		{"counterMax past 2^64", `{"queries":[{"rateOptions":{"counterMax":1.8446744073709552e20}}]}`, "Unable to parse the given JSON", `expected an integer from -2^63 to 2^64, got 1.8446744073709552e20`},
		{"unknown filter", `{"queries":[{"filters":[{"type":"foo","tagk":"k","filter":"x"}]}]}`,
			"Unable to parse the given JSON", "Could not find a tag value filter of the type: foo"},
		{"filter without type", `{"queries":[{"filters":[{"tagk":"k","filter":"x"}]}]}`,
			"Unable to parse the given JSON", "The filter type cannot be null or empty"},
		{"filter without tagk", `{"queries":[{"filters":[{"type":"wildcard","filter":"*"}]}]}`,
			"Unable to parse the given JSON", "The tagk cannot be null or empty"},
		{"bad wildcard", `{"queries":[{"filters":[{"type":"wildcard","tagk":"k","filter":"x"}]}]}`,
			"Unable to parse the given JSON", "Filter must contain an asterisk"},
		{"bad tags", `{"queries":[{"tags":{"k":"regexp(x"}}]}`,
			"Unable to parse the given JSON", "Filter must end with a ')': regexp(x"},
		{"empty tag value", `{"queries":[{"tags":{"k":""}}]}`,
			"Unable to parse the given JSON", "Filter cannot be null or empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQueryJSON([]byte(tt.body))
			re, ok := err.(*RequestError)
			if !ok {
				t.Fatalf("got %v (%T)", err, err)
			}
			if re.Status != 400 || re.Message != tt.msg || re.Details != tt.details {
				t.Errorf("got %d %q %q\nwant 400 %q %q", re.Status, re.Message, re.Details, tt.msg, tt.details)
			}
		})
	}
}

func TestQueryValidate(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	nowMs := now.UnixMilli()
	okSub := `"queries":[{"aggregator":"sum","metric":"m"}]`
	tests := []struct {
		name       string
		body       string
		start, end int64
		err        string
	}{
		{"grafana seconds", `{"start":1767225600,"end":1767229200,` + okSub + `}`, 1767225600000, 1767229200000, ""},
		{"grafana ms, no end", `{"start":1767225600000,` + okSub + `}`, 1767225600000, nowMs, ""},
		{"relative", `{"start":"1h-ago","end":"5m-ago",` + okSub + `}`, nowMs - 3600000, nowMs - 300000, ""},
		{"absolute in zone", `{"start":"2025/12/31-19:00","timezone":"America/New_York",` + okSub + `}`, 1767225600000, nowMs, ""},
		{"no start", `{` + okSub + `}`, 0, 0, "Missing start time"},
		{"bad start", `{"start":"x",` + okSub + `}`, 0, 0, "Invalid time: x. Invalid character 'x' in x"},
		{"bad end", `{"start":1,"end":"2020/13/01",` + okSub + `}`, 0, 0, `Invalid date: 2020/13/01. Unparseable date: "2020/13/01"`},
		{"end before start", `{"start":1767229200,"end":1767225600,` + okSub + `}`, 0, 0,
			"End time [1767225600000] must be greater than the start time [1767229200000]"},
		{"end equals start", `{"start":0,"end":0,"queries":null}`, 0, 0, "End time [0] must be greater than the start time [0]"},
		{"no queries", `{"start":1}`, 0, 0, "Missing queries"},
		{"no aggregator", `{"start":1,"queries":[{"metric":"m"}]}`, 0, 0, "Missing the aggregation function"},
		{"no metric", `{"start":1,"queries":[{"aggregator":"sum","metric":""}]}`, 0, 0, "Missing the metric or tsuids, provide at least one"},
		{"bad percentile", `{"start":1,"queries":[{"aggregator":"sum","metric":"m","percentiles":[101]}]}`, 0, 0, "Invalid percentile parameters: 101"},
		{"bad zone", `{"start":1,"timezone":"Mars/Olympus",` + okSub + `}`, 0, 0, "Invalid timezone name: Mars/Olympus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := ParseQueryJSON([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "absolute in zone" {
				if _, err := time.LoadLocation("America/New_York"); err != nil {
					t.Skip("no time zone database")
				}
			}
			start, end, err := q.Validate(now, nil)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if start != tt.start || end != tt.end {
				t.Errorf("got [%d, %d], want [%d, %d]", start, end, tt.start, tt.end)
			}
		})
	}
}

func TestSubQueryEcho(t *testing.T) {
	sq := sub("sum", "tsd.hbase.puts", func(q *SubQuery) {
		q.Rate = true
		q.Filters = []Filter{{FilterWildcard, "host", "*", true}, {FilterLiteralOr, "dc", "lga", false}}
	})
	want := `{"aggregator":"sum","metric":"tsd.hbase.puts","tsuids":null,"downsample":null,"rate":true,` +
		`"filters":[{"tagk":"host","filter":"*","group_by":true,"type":"wildcard"},{"tagk":"dc","filter":"lga","group_by":false,"type":"literal_or"}],` +
		`"explicitTags":false,"percentiles":null,"rateOptions":null,"tags":{"host":"wildcard(*)"},"index":0,` +
		`"preAggregate":false,"rollupUsage":null,"showHistogramBuckets":false,"useMultiGets":true,"useFuzzyFilter":true}`
	got, err := json.Marshal(&sq)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	sq = sub("avg", "", func(q *SubQuery) {
		q.TSUIDs = []string{"0001"}
		q.Downsample = "1m-avg"
		q.RateOptions = ro(true, 100, 5, true)
		q.Percentiles = []float64{50, 99.9}
		q.Index = 3
		q.Filters = []Filter{{FilterLiteralOr, "host", "a", true}, {FilterLiteralOr, "host", "b", true}}
	})
	want = `{"aggregator":"avg","metric":null,"tsuids":["0001"],"downsample":"1m-avg","rate":false,` +
		`"filters":[{"tagk":"host","filter":"a","group_by":true,"type":"literal_or"},{"tagk":"host","filter":"b","group_by":true,"type":"literal_or"}],` +
		`"explicitTags":false,"percentiles":[50.0,99.9],"rateOptions":{"counter":true,"counterMax":100,"resetValue":5,"dropResets":true},` +
		`"tags":{"host":"literal_or(b)"},"index":3,"preAggregate":false,"rollupUsage":null,"showHistogramBuckets":false,"useMultiGets":true,"useFuzzyFilter":true}`
	if got := string(sq.AppendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseQueryURI(t *testing.T) {
	tests := []struct {
		name string
		qs   string
		want *QueryRequest
	}{
		{"reference example",
			"start=1h-ago&m=sum:rate{counter,,1000}:if.octets.in{host=*}{dc=literal_or(lga|sjc)}",
			&QueryRequest{Start: "1h-ago", Queries: []SubQuery{sub("sum", "if.octets.in", func(q *SubQuery) {
				q.Rate, q.RateOptions = true, ro(true, math.MaxInt64, 1000, false)
				q.Filters = []Filter{{FilterLiteralOr, "dc", "lga|sjc", false}, {FilterWildcard, "host", "*", true}}
			})}}},
		{"downsample, rate, legacy tags",
			"start=1356998400&end=1356998460&m=avg:1h-avg:rate:sys.cpu.user{host=web01|web02,dc=lg*}",
			&QueryRequest{Start: "1356998400", End: "1356998460", Queries: []SubQuery{sub("avg", "sys.cpu.user", func(q *SubQuery) {
				q.Rate, q.Downsample = true, "1h-avg"
				q.Filters = []Filter{{FilterLiteralOr, "host", "web01|web02", true}, {FilterIWildcard, "dc", "lg*", true}}
			})}}},
		{"modifiers in any order",
			"start=1&m=sum:rate{dropcounter,100,5}:0all-sum:explicit_tags:m",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.Rate, q.RateOptions, q.Downsample, q.ExplicitTags = true, ro(true, 100, 5, true), "0all-sum", true
			})}}},
		{"rate{}", "start=1&m=sum:rate{}:m",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.Rate, q.RateOptions = true, ro(false, math.MaxInt64, 0, false)
			})}}},
		{"histogram modifiers", "start=1&m=sum:percentiles[99.9,%2095]:show-histogram-buckets:pre-agg:m",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.Percentiles, q.ShowHistogramBuckets, q.PreAggregate = []float64{95, 99.9}, true, true
			})}}},
		{"rollup", "start=1&m=sum:Rollup_Fallback_Raw:1dc-sum:m{}",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.RollupUsage, q.Downsample = "ROLLUP_FALLBACK_RAW", "1dc-sum"
			})}}},
		{"unknown rollup usage", "start=1&m=sum:rollup_sometimes:1h-avg:m",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.RollupUsage, q.Downsample = "ROLLUP_NOFALLBACK", "1h-avg"
			})}}},
		{"only non-group-by filters", "start=1&m=sum:m{}{host=web*}",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.Filters = []Filter{{FilterIWildcard, "host", "web*", false}}
			})}}},
		{"metric with colons", "start=1&m=sum:rate:job:http_requests:rate5m{instance=a:9090}",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "job:http_requests:rate5m", func(q *SubQuery) {
				q.Rate = true
				q.Filters = []Filter{{FilterLiteralOr, "instance", "a:9090", true}}
			})}}},
		{"filter with =", "start=1&m=sum:m{host=regexp(a=b)}",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", func(q *SubQuery) {
				q.Filters = []Filter{{FilterRegexp, "host", "a=b", true}}
			})}}},
		{"tsuids and ms, flags present with any value",
			"start=1&tsuid=sum:1m-avg:rate:explicit_tags:000001000001000001,000001000001000002,&m=max:x&ms&arrays=false&show_tsuids&show_summary&show_stats&show_query=0&no_annotations&global_annotations&padding&timezone=Europe/Paris",
			&QueryRequest{Start: "1", Timezone: "Europe/Paris", MsResolution: true, Arrays: true, ShowTSUIDs: true,
				ShowSummary: true, ShowStats: true, ShowQuery: true, NoAnnotations: true, GlobalAnnotations: true, Padding: true,
				Queries: []SubQuery{
					sub("sum", "", func(q *SubQuery) {
						q.TSUIDs, q.Downsample, q.Rate = []string{"000001000001000001", "000001000001000002"}, "1m-avg", true
					}),
					sub("max", "x", func(q *SubQuery) { q.Index = 1 }),
				}}},
		{"duplicates dropped", "start=1&m=sum:m&m=sum:m&m=avg:m",
			&QueryRequest{Start: "1", Queries: []SubQuery{sub("sum", "m", nil), sub("avg", "m", func(q *SubQuery) { q.Index = 1 })}}},
		{"last start wins", "start=1&start=2&m=sum:m",
			&QueryRequest{Start: "2", Queries: []SubQuery{sub("sum", "m", nil)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := url.ParseQuery(tt.qs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseQueryURI(v)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseQueryURIErrors(t *testing.T) {
	tests := []struct {
		name string
		q    url.Values
		want string
	}{
		{"no start", url.Values{"m": {"sum:m"}}, "Missing parameter <code>start</code>"},
		{"empty start", url.Values{"start": {""}, "m": {"sum:m"}}, "Missing parameter <code>start</code>"},
		{"no sub-queries", url.Values{"start": {"1h-ago"}}, "Missing sub queries"},
		{"empty m", url.Values{"start": {"1"}, "m": {""}}, "The query string was empty"},
		{"empty tsuid", url.Values{"start": {"1"}, "tsuid": {""}}, "The tsuid query string was empty"},
		{"not enough parts", url.Values{"start": {"1"}, "m": {"sum"}}, "Invalid parameter m=sum (not enough :-separated parts)"},
		{"too many parts", url.Values{"start": {"1"}, "m": {"sum:rate:1m-avg:explicit_tags:pre-agg:m"}},
			"Invalid parameter m=sum:rate:1m-avg:explicit_tags:pre-agg:m (too many :-separated parts)"},
		{"tsuid too many parts", url.Values{"start": {"1"}, "tsuid": {"sum:a:b:c:d:e"}}, "Invalid parameter m=sum:a:b:c:d:e (too many :-separated parts)"},
		{"tsuid not enough parts", url.Values{"start": {"1"}, "tsuid": {"sum"}}, "Invalid parameter m=sum (not enough :-separated parts)"},
		{"empty part", url.Values{"start": {"1"}, "m": {"sum::m"}}, "Invalid parameter m=sum::m (empty :-separated part)"},
		{"empty metric", url.Values{"start": {"1"}, "m": {"sum:rate:"}}, "Metric cannot be null or empty"},
		{"bad rate", url.Values{"start": {"1"}, "m": {"sum:rate{:m"}}, "Invalid rate options specification: rate{"},
		{"unclosed rate", url.Values{"start": {"1"}, "m": {"sum:rate{counter:m"}}, "Invalid rate options specification: rate{counter"},
		{"rate parts", url.Values{"start": {"1"}, "m": {"sum:rate{counter,1,2,3}:m"}},
			"Incorrect number of values in rate options specification, must be counter[,counter max value,reset value], recieved: 4 parts"},
		{"rate max", url.Values{"start": {"1"}, "m": {"sum:rate{counter,x}:m"}}, "Max value of counter was not a number, received 'x'"},
		{"rate reset", url.Values{"start": {"1"}, "m": {"sum:rate{counter,,y}:m"}}, "Reset value of counter was not a number, received 'y'"},
		{"percentiles", url.Values{"start": {"1"}, "m": {"sum:percentiles[x]:m"}}, "Malformated percentile query paramater: percentiles[x]"},
		{"percentiles brackets", url.Values{"start": {"1"}, "m": {"sum:percentiles:m"}}, "Malformated percentile query paramater: percentiles"},
		{"unclosed braces", url.Values{"start": {"1"}, "m": {"sum:m{host=a"}}, "Missing '}' at the end of: m{host=a"},
		{"bad tag", url.Values{"start": {"1"}, "m": {"sum:m{host}"}}, "When parsing tag 'host': invalid tag: host"},
		{"bad tag filter", url.Values{"start": {"1"}, "m": {"sum:m{host=foo(x)}"}}, "When parsing tag 'host=foo(x)': Could not find a tag value filter of the type: foo"},
		{"bad filter", url.Values{"start": {"1"}, "m": {"sum:m{}{host=wildcard(x)}"}}, "When parsing filter 'host=wildcard(x)': Filter must contain an asterisk"},
		{"brace before braces", url.Values{"start": {"1"}, "m": {"sum:m}{0=0}"}}, "Invalid metric and filters: m}{0=0}"},
		{"bad filter pair", url.Values{"start": {"1"}, "m": {"sum:m{}{=x}"}}, "When parsing filter '=x': invalid tag: =x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQueryURI(tt.q)
			re, ok := err.(*RequestError)
			if !ok {
				t.Fatalf("got %v (%T)", err, err)
			}
			if re.Message != tt.want || re.Status != 400 {
				t.Errorf("got  %d %q\nwant 400 %q", re.Status, re.Message, tt.want)
			}
		})
	}
}

func TestParseCounterLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"-5", -5, false},
		{"4294967295", 4294967295, false},
		{"9223372036854775807", math.MaxInt64, false},
		{"18446744073709551615", math.MaxInt64, false},   // uint64 max, as an integer
		{"1.8446744073709552e+19", math.MaxInt64, false}, // as Go's float64 prints it
		{"9.223372036854776e+18", math.MaxInt64, false},  // 2^63
		{"1.5e3", 1500, false},
		{"1000.9", 1000, false},
		{"-1000.9", -1000, false},
		{"-9.223372036854776e+18", math.MinInt64, false},
		{"3.7e19", 0, true}, // past 2^64
		{"-1e19", 0, true},
		{"1e400", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"x", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCounterLimit(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseCounterLimit(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// Grafana's backend sends counterMax and resetValue as float64: the JSON
// body and the m= form both take them, and refuse what does not fit with a
// 400 that quotes a bounded part of the input.
func TestRateOptionsFloats(t *testing.T) {
	q, err := ParseQueryURI(url.Values{"start": {"1h-ago"}, "m": {"sum:rate{counter,1.8446744073709552e+19,1.5e3}:m"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Queries[0].RateOptions; !reflect.DeepEqual(got, ro(true, math.MaxInt64, 1500, false)) {
		t.Errorf("m= rate options %+v", got)
	}
	q, err = ParseQueryJSON([]byte(`{"start":1,"queries":[{"aggregator":"sum","metric":"m","rate":true,"rateOptions":{"counter":true,"counterMax":"65535.0","resetValue":"1e2"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Queries[0].RateOptions; !reflect.DeepEqual(got, ro(true, 65535, 100, false)) {
		t.Errorf("JSON rate options %+v", got)
	}
	long := strings.Repeat("9", 5000)
	for _, body := range []string{
		`{"start":1,"queries":[{"aggregator":"sum","metric":"m","rateOptions":{"counterMax":1e30}}]}`,
		`{"start":1,"queries":[{"aggregator":"sum","metric":"m","rateOptions":{"resetValue":"` + long + `x"}}]}`,
	} {
		_, err := ParseQueryJSON([]byte(body))
		var re *RequestError
		if !errors.As(err, &re) || re.Status != 400 || len(re.Message)+len(re.Details) > 600 {
			t.Errorf("%.80s: error %v, want a short 400", body, err)
		}
	}
	_, err = ParseQueryURI(url.Values{"start": {"1h-ago"}, "m": {"sum:rate{counter," + long + "x}:m"}})
	var re *RequestError
	if !errors.As(err, &re) || re.Status != 400 || len(re.Message) > 300 {
		t.Errorf("m= with a long counter max: error %v, want a short 400", err)
	}
}

func FuzzParseCounterLimit(f *testing.F) {
	for _, s := range []string{"0", "-1", "1.8446744073709552e+19", "18446744073709551615", "9223372036854775808",
		"1e400", "NaN", "-0", "1.5e3", "0x10", "+Inf", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseCounterLimit(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("error %v with value %d", err, v)
			}
			return
		}
		// An accepted value is what the text says, truncated, or the
		// "no max" of the uint64 range.
		if iv, err := strconv.ParseInt(s, 10, 64); err == nil && iv != v {
			t.Fatalf("%q = %d, want %d", s, v, iv)
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && v < 0 {
			t.Fatalf("%q = %d: sign flipped", s, v)
		}
	})
}
