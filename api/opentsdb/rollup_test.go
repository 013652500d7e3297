package opentsdb

import (
	"errors"
	"strings"
	"testing"

	"hourglass/chunk"
)

func parseRollups(t *testing.T, body string) ([]RollupPoint, []error, error) {
	t.Helper()
	var pts []RollupPoint
	var errs []error
	err := ParseRollup([]byte(body), Limits{}, func(i int, rp *RollupPoint, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		c := *rp
		c.Tags = append([]Tag(nil), rp.Tags...)
		pts = append(pts, c)
		return nil
	})
	return pts, errs, err
}

func TestParseRollup(t *testing.T) {
	pts, errs, err := parseRollups(t, `[
		{"metric":"sys.cpu","timestamp":1700000000,"value":42,"tags":{"host":"a"},"interval":"1h","aggregator":"SUM"},
		{"metric":"sys.cpu","timestamp":1700000000,"value":"1.5","tags":{"host":"a"},"interval":"1h","aggregator":"max","groupByAggregator":"sum"},
		{"metric":"sys.cpu","timestamp":1700000000,"value":3,"tags":{"dc":"x"},"groupByAggregator":"SUM","extra":1}
	]`)
	if err != nil || len(errs) != 0 || len(pts) != 3 {
		t.Fatalf("%d points, errors %v, %v", len(pts), errs, err)
	}
	if p := pts[0]; p.Interval != "1h" || p.Aggregator != "SUM" || p.GroupBy != "" || p.Timestamp != 1_700_000_000_000 || !p.Value.Identical(chunk.Int(42)) || len(p.Tags) != 1 {
		t.Errorf("point 0: %+v", p)
	}
	if p := pts[1]; p.GroupBy != "sum" || !p.Value.Identical(chunk.Float(1.5)) {
		t.Errorf("point 1: %+v", p)
	}
	if p := pts[2]; p.Interval != "" || p.GroupBy != "SUM" {
		t.Errorf("point 2: %+v", p)
	}
	for body, want := range map[string]string{
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"}}`:                                                              "Missing interval or groupByAggregator",
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"interval":"1h"}`:                                              "Missing aggregator",
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"aggregator":"sum"}`:                                           "Missing interval",
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"interval":3600,"aggregator":"sum"}`:                           "Invalid interval: not a string",
		`{"metric":"","timestamp":1,"value":1,"tags":{"a":"b"},"interval":"1h","aggregator":"sum"}`:                            "Metric name was empty",
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"interval":"1h","aggregator":"sum","groupByAggregator":["x"]}`: "Invalid groupByAggregator",
	} {
		_, errs, err := parseRollups(t, body)
		if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("%s: errors %v, %v; want %q", body, errs, err, want)
		}
		var pe *PointError
		if len(errs) == 1 && !errors.As(errs[0], &pe) {
			t.Errorf("%s: %T is not a *PointError", body, errs[0])
		}
	}
	if _, _, err := parseRollups(t, `[{"metric":`); !errors.Is(err, ErrUnparseableJSON) {
		t.Errorf("malformed body: %v", err)
	}
}

func TestParseRollupLine(t *testing.T) {
	var rp RollupPoint
	for line, want := range map[string]RollupPoint{
		"rollup 1h-SUM sys.cpu 1700000000 42 host=a\n":     {Interval: "1h", Aggregator: "SUM"},
		"rollup 10m-max:sum sys.cpu 1700000000 1.5 host=a": {Interval: "10m", Aggregator: "max", GroupBy: "sum"},
		"rollup SUM sys.cpu 1700000000 3 dc=x":             {GroupBy: "SUM"},
	} {
		if err := ParseRollupLine([]byte(line), Limits{}, &rp); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if rp.Interval != want.Interval || rp.Aggregator != want.Aggregator || rp.GroupBy != want.GroupBy || rp.Metric != "sys.cpu" || rp.Timestamp != 1_700_000_000_000 || len(rp.Tags) != 1 {
			t.Errorf("%q: %+v", line, rp)
		}
	}
	for line, want := range map[string]string{
		"rollup 1h-sum sys.cpu 1700000000 42":      "rollup: illegal argument: not enough arguments (need least 6, got 5)",
		"rollup 1h- sys.cpu 1700000000 42 host=a":  "rollup: illegal argument: Missing aggregator",
		"rollup sum: sys.cpu 1700000000 42 host=a": "rollup: illegal argument: empty groupByAggregator",
		"rollup a:b sys.cpu 1700000000 42 host=a":  "rollup: illegal argument: invalid rollup spec",
		"rollup 1h-sum sys.cpu notatime 42 host=a": "rollup: invalid value: Invalid character",
		"rollup 1h-sum sys.cpu 1700000000 42 foo":  "rollup: illegal argument: invalid tag: foo",
		"put sys.cpu 1700000000 42 host=a":         "unknown command: put",
	} {
		err := ParseRollupLine([]byte(line), Limits{}, &rp)
		var le *LineError
		if !errors.As(err, &le) || !strings.HasPrefix(le.Reply, want) {
			t.Errorf("%q: %v, want a reply starting %q", line, err, want)
		}
	}
}

// FuzzRollup: arbitrary bodies and lines decode to points or to the
// package's errors, never panic; a decoded point has a valid combination.
func FuzzRollup(f *testing.F) {
	f.Add([]byte(`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"interval":"1h","aggregator":"sum"}`), []byte("rollup 1h-sum m 1 1 a=b"))
	f.Add([]byte(`[{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"groupByAggregator":"max"},null,3]`), []byte("rollup max m 1 1.5 a=b c=d"))
	f.Add([]byte(`{"interval":{"x":1}}`), []byte("rollup 1h-sum:max m 1 1 a=b"))
	f.Fuzz(func(t *testing.T, body, line []byte) {
		err := ParseRollup(body, Limits{MaxTags: 4, MaxNameLen: 64}, func(i int, rp *RollupPoint, err error) error {
			if err != nil {
				var pe *PointError
				if !errors.As(err, &pe) {
					t.Fatalf("point error %T %v", err, err)
				}
				return nil
			}
			if rp.check(Limits{}) != "" || rp.Metric == "" || len(rp.Tags) == 0 {
				t.Fatalf("invalid point accepted: %+v", rp)
			}
			return nil
		})
		var re *RequestError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("body error %T %v", err, err)
		}
		var rp RollupPoint
		if err := ParseRollupLine(line, Limits{MaxTags: 4, MaxNameLen: 64}, &rp); err != nil {
			var le *LineError
			if !errors.As(err, &le) || len(le.Reply) > 2048 {
				t.Fatalf("line error %T %v", err, err)
			}
		} else if rp.check(Limits{}) != "" || rp.Metric == "" || len(rp.Tags) == 0 {
			t.Fatalf("invalid line accepted: %+v", rp)
		}
	})
}
