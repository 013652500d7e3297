package opentsdb_test

import (
	"fmt"
	"net/url"

	"hourglass/api/opentsdb"
	"hourglass/chunk"
)

func ExampleParsePut() {
	body := []byte(`[
	  {"metric":"sys.cpu.user","timestamp":1346846400,"value":18,"tags":{"host":"web01"}},
	  {"metric":"sys.cpu.user","timestamp":0,"value":19,"tags":{"host":"web01"}},
	  {"metric":"sys.cpu.user","timestamp":1346846400500,"value":"0.5","tags":{"host":"web02"}}
	]`)
	var errs []*opentsdb.PointError
	err := opentsdb.ParsePut(body, opentsdb.Limits{}, func(i int, dp *opentsdb.DataPoint, err error) error {
		if err != nil {
			errs = append(errs, err.(*opentsdb.PointError))
			return nil
		}
		fmt.Println(dp.Metric, dp.Timestamp, dp.Value, dp.Tags)
		return nil
	})
	if err != nil {
		fmt.Println(err) // the whole body is rejected
		return
	}
	fmt.Println(string(opentsdb.AppendPutSummary(nil, 2, len(errs), -1, errs)))
	// Output:
	// sys.cpu.user 1346846400000 18 [{host web01}]
	// sys.cpu.user 1346846400500 0.5 [{host web02}]
	// {"success":2,"failed":1,"errors":[{"datapoint":{"metric":"sys.cpu.user","timestamp":0,"value":"19","tags":{"host":"web01"}},"error":"Invalid timestamp"}]}
}

func ExampleLineParser() {
	var p opentsdb.LineParser // one per connection
	var dp opentsdb.DataPoint
	for _, line := range []string{
		"put sys.if.bytes.out 1479496100 1.3E3 host=web01 interface=eth0\n",
		"put sys.if.bytes.out notatime 1 host=web01\n",
	} {
		if err := p.Parse([]byte(line), &dp); err != nil {
			fmt.Println(err) // the reply line
			continue
		}
		fmt.Println(dp.Metric, dp.Timestamp, dp.Value, dp.Tags)
	}
	// Output:
	// sys.if.bytes.out 1479496100000 1300 [{host web01} {interface eth0}]
	// put: invalid value: Invalid character 'n' in notatime
}

func ExampleParseQueryURI() {
	q, err := opentsdb.ParseQueryURI(url.Values{
		"start": {"1h-ago"},
		"m":     {"sum:rate{counter,,1000}:if.octets.in{host=*}{dc=literal_or(lga|sjc)}"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sq := q.Queries[0]
	fmt.Println(sq.Aggregator, sq.Metric, sq.Rate, sq.Rates().Counter, sq.Rates().ResetValue)
	for _, f := range sq.Filters {
		fmt.Println(f.TagK, f, f.GroupBy)
	}
	// Output:
	// sum if.octets.in true true 1000
	// dc literal_or(lga|sjc) false
	// host wildcard(*) true
}

func ExampleFilter_Compile() {
	m, err := opentsdb.Filter{Type: opentsdb.FilterIWildcard, TagK: "host", Expr: "web*"}.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Matches("WEB01", true), m.Matches("db01", true), m.Matches("", false))
	// Output: true false false
}

func ExampleAppendResult() {
	r := &opentsdb.QueryResult{Metric: "sys.cpu.user", Tags: []opentsdb.Tag{{Key: "host", Value: "web01"}}, AggregateTags: []string{"cpu"}}
	pts := []chunk.Point{{T: 1346846400000, V: chunk.Int(18)}, {T: 1346846460000, V: chunk.Float(18.5)}}
	fmt.Println(string(opentsdb.AppendResult(nil, r, pts, opentsdb.ResultFormat{})))
	fmt.Println(string(opentsdb.AppendResult(nil, r, pts, opentsdb.ResultFormat{Arrays: true})))
	// Output:
	// {"metric":"sys.cpu.user","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":{"1346846400":18,"1346846460":18.5}}
	// {"metric":"sys.cpu.user","tags":{"host":"web01"},"aggregateTags":["cpu"],"dps":[[1346846400,18],[1346846460,18.5]]}
}
