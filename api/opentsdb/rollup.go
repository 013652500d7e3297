package opentsdb

import (
	"encoding/json"
	"strconv"
	"strings"

	"hourglass/internal/quote"
)

// OpenTSDB 2.4 rollup points (docs:api_http/rollup.rst, RollupDataPointRpc):
// an /api/put point plus "interval" and "aggregator" (a rollup: the
// aggregate of the series over one interval bucket) and/or
// "groupByAggregator" (a pre-aggregate: the series is the aggregate of
// others, tagged _aggregate=<AGG>). The telnet form is
// "rollup <spec> <metric> <timestamp> <value> <tagk=tagv> [...]", spec
// "<interval>-<aggregator>", "<groupByAggregator>" or
// "<interval>-<aggregator>:<groupByAggregator>".

// CmdRollup is the telnet rollup command.
const CmdRollup = "rollup"

// RollupPoint is one rollup point as a client sent it.
type RollupPoint struct {
	DataPoint
	Interval   string // "1h"; "" for a pre-aggregate of raw points
	Aggregator string // the rollup's aggregator, as sent ("SUM", "max")
	GroupBy    string // groupByAggregator, as sent; "" when not a pre-aggregate
}

// rollupFields are the fields /api/rollup adds to a put point.
type rollupFields struct {
	Interval   json.RawMessage `json:"interval"`
	Aggregator json.RawMessage `json:"aggregator"`
	GroupBy    json.RawMessage `json:"groupByAggregator"`
}

// ParseRollup decodes an /api/rollup body as ParsePut decodes /api/put
// (the same body errors, per-point messages and limits), and the point's
// interval, aggregator and groupByAggregator, which must be strings and
// make one of OpenTSDB's combinations: interval and aggregator (a rollup),
// groupByAggregator alone (a pre-aggregate), or all three. fn gets each
// point or its *PointError, as in PutDecoder.Decode; rp is reused.
func ParseRollup(body []byte, l Limits, fn func(i int, rp *RollupPoint, err error) error) error {
	d := PutDecoder{Limits: l, intern: interner{off: true}}
	var rp RollupPoint
	return d.Decode(body, func(i int, dp *DataPoint, err error) error {
		if err != nil {
			return fn(i, nil, err)
		}
		raw := d.Raw()
		var f rollupFields
		if jerr := json.Unmarshal(raw, &f); jerr != nil {
			return fn(i, nil, &PointError{Index: i, Message: "Unable to parse the rollup fields", Raw: raw})
		}
		rp = RollupPoint{DataPoint: *dp}
		for _, x := range []struct {
			name string
			raw  json.RawMessage
			dst  *string
		}{{"interval", f.Interval, &rp.Interval}, {"aggregator", f.Aggregator, &rp.Aggregator}, {"groupByAggregator", f.GroupBy, &rp.GroupBy}} {
			if len(x.raw) == 0 || string(x.raw) == "null" {
				continue
			}
			if json.Unmarshal(x.raw, x.dst) != nil {
				return fn(i, nil, &PointError{Index: i, Message: "Invalid " + x.name + ": not a string", Raw: raw})
			}
		}
		if msg := rp.check(l); msg != "" {
			return fn(i, nil, &PointError{Index: i, Message: msg, Raw: raw})
		}
		return fn(i, &rp, nil)
	})
}

// check returns OpenTSDB's message for a point whose rollup fields make no
// valid combination, "" for a valid one.
func (rp *RollupPoint) check(l Limits) string {
	max := l.maxNameLen()
	switch {
	case rp.Interval == "" && rp.GroupBy == "":
		return "Missing interval or groupByAggregator"
	case rp.Interval != "" && rp.Aggregator == "":
		return "Missing aggregator for the interval " + quote.String(rp.Interval)
	case rp.Interval == "" && rp.Aggregator != "":
		return "Missing interval for the aggregator " + quote.String(rp.Aggregator)
	case len(rp.Interval) > 32 || len(rp.Aggregator) > max || len(rp.GroupBy) > max:
		return "Invalid rollup: interval or aggregator too long"
	}
	return ""
}

// ParseRollupLine parses one telnet rollup line into rp (whose Tags slice
// is reused). The metric, timestamp, value and tags are read as
// ParsePutLine reads them; errors are *LineError with OpenTSDB's reply
// text, prefixed "rollup:".
func ParseRollupLine(line []byte, l Limits, rp *RollupPoint) error {
	line = trimEOL(line)
	cmd, i := nextWord(line, 0)
	if string(cmd) != CmdRollup {
		return &LineError{Reply: UnknownCommand(string(cmd))}
	}
	spec, j := nextWord(line, i)
	words := 1
	for k := i; ; words++ {
		var w []byte
		if w, k = nextWord(line, k); len(w) == 0 {
			break
		}
	}
	if words < 6 {
		return &LineError{Reply: "rollup: illegal argument: not enough arguments (need least 6, got " + strconv.Itoa(words) + ")"}
	}
	rp.Interval, rp.Aggregator, rp.GroupBy = "", "", ""
	s := string(spec)
	if k := strings.IndexByte(s, ':'); k >= 0 {
		s, rp.GroupBy = s[:k], s[k+1:]
		if rp.GroupBy == "" {
			return &LineError{Reply: "rollup: illegal argument: empty groupByAggregator in " + quote.String(string(spec))}
		}
	}
	if k := strings.IndexByte(s, '-'); k >= 0 {
		rp.Interval, rp.Aggregator = s[:k], s[k+1:]
	} else if rp.GroupBy == "" {
		rp.GroupBy = s
	} else {
		return &LineError{Reply: "rollup: illegal argument: invalid rollup spec " + quote.String(string(spec)) + ": want <interval>-<aggregator>[:<groupByAggregator>] or <groupByAggregator>"}
	}
	if msg := rp.check(l); msg != "" {
		return &LineError{Reply: "rollup: illegal argument: " + quote.Message(msg)}
	}
	// The rest is a put line's: "put" and what follows the spec.
	put := make([]byte, 0, 4+len(line)-j)
	put = append(append(put, CmdPut...), line[j:]...)
	if err := ParsePutLine(put, l, &rp.DataPoint); err != nil {
		if le, ok := err.(*LineError); ok {
			return &LineError{Reply: "rollup:" + strings.TrimPrefix(le.Reply, "put:")}
		}
		return err
	}
	return nil
}
