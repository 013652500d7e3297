package opentsdb

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"hourglass/chunk"
)

// decoded is what ParsePut reported for one element.
type decoded struct {
	dp  DataPoint
	err *PointError
}

func decodeAll(t *testing.T, body string, l Limits) ([]decoded, error) {
	t.Helper()
	var out []decoded
	err := ParsePut([]byte(body), l, func(i int, dp *DataPoint, err error) error {
		if i != len(out) {
			t.Fatalf("index %d, want %d", i, len(out))
		}
		if err != nil {
			if dp != nil {
				t.Fatalf("point %d: both a point and an error", i)
			}
			var pe *PointError
			if !errors.As(err, &pe) {
				t.Fatalf("point %d: error %T, want *PointError", i, err)
			}
			out = append(out, decoded{err: pe})
			return nil
		}
		c := *dp
		c.Tags = slices.Clone(dp.Tags)
		out = append(out, decoded{dp: c})
		return nil
	})
	return out, err
}

func pt(metric string, ts int64, v chunk.Value, tags ...string) DataPoint {
	dp := DataPoint{Metric: metric, Timestamp: ts, Value: v}
	for i := 0; i < len(tags); i += 2 {
		dp.Tags = append(dp.Tags, Tag{tags[i], tags[i+1]})
	}
	return dp
}

func samePoint(a, b DataPoint) bool {
	return a.Metric == b.Metric && a.Timestamp == b.Timestamp && a.Value.Identical(b.Value) &&
		slices.Equal(a.Tags, b.Tags)
}

func TestParsePutPoints(t *testing.T) {
	tests := []struct {
		name string
		body string
		want DataPoint
	}{
		{"object", `{"metric":"sys.cpu.user","timestamp":1346846400,"value":18,"tags":{"host":"web01"}}`,
			pt("sys.cpu.user", 1346846400000, chunk.Int(18), "host", "web01")},
		{"spaces", " \n\t{ \"metric\" : \"m\" , \"timestamp\" : 1 , \"value\" : 1 , \"tags\" : { \"k\" : \"v\" } } \r\n",
			pt("m", 1000, chunk.Int(1), "k", "v")},
		{"milliseconds", `{"metric":"m","timestamp":1346846400123,"value":1,"tags":{"k":"v"}}`,
			pt("m", 1346846400123, chunk.Int(1), "k", "v")},
		{"largest seconds", `{"metric":"m","timestamp":4294967295,"value":1,"tags":{"k":"v"}}`,
			pt("m", 4294967295000, chunk.Int(1), "k", "v")},
		{"smallest milliseconds", `{"metric":"m","timestamp":4294967296,"value":1,"tags":{"k":"v"}}`,
			pt("m", 4294967296, chunk.Int(1), "k", "v")},
		{"largest milliseconds", `{"metric":"m","timestamp":9999999999999,"value":1,"tags":{"k":"v"}}`,
			pt("m", 9999999999999, chunk.Int(1), "k", "v")},
		{"float timestamp truncated", `{"metric":"m","timestamp":1346846400.9,"value":1,"tags":{"k":"v"}}`,
			pt("m", 1346846400000, chunk.Int(1), "k", "v")},
		{"exponent timestamp", `{"metric":"m","timestamp":1.3468464e9,"value":1,"tags":{"k":"v"}}`,
			pt("m", 1346846400000, chunk.Int(1), "k", "v")},
		{"string timestamp", `{"metric":"m","timestamp":" 1346846400 ","value":1,"tags":{"k":"v"}}`,
			pt("m", 1346846400000, chunk.Int(1), "k", "v")},
		{"float value", `{"metric":"m","timestamp":1,"value":42.5,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(42.5), "k", "v")},
		{"float with .0 stays float", `{"metric":"m","timestamp":1,"value":42.0,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(42), "k", "v")},
		{"exponent value", `{"metric":"m","timestamp":1,"value":1.3E3,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(1300), "k", "v")},
		{"negative zero", `{"metric":"m","timestamp":1,"value":-0.0,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(math.Copysign(0, -1)), "k", "v")},
		{"integer -0", `{"metric":"m","timestamp":1,"value":-0,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(0), "k", "v")},
		{"string integer value", `{"metric":"m","timestamp":1,"value":"42","tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(42), "k", "v")},
		{"string float value", `{"metric":"m","timestamp":1,"value":".5","tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(0.5), "k", "v")},
		{"max int64", `{"metric":"m","timestamp":1,"value":9223372036854775807,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(math.MaxInt64), "k", "v")},
		{"min int64", `{"metric":"m","timestamp":1,"value":"-9223372036854775808","tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(math.MinInt64), "k", "v")},
		{"beyond 2^53 exact", `{"metric":"m","timestamp":1,"value":9007199254740993,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(9007199254740993), "k", "v")},
		{"float exact", `{"metric":"m","timestamp":1,"value":0.1,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(0.1), "k", "v")},
		{"smallest denormal", `{"metric":"m","timestamp":1,"value":5e-324,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(5e-324), "k", "v")},
		{"underflow to zero", `{"metric":"m","timestamp":1,"value":1e-400,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Float(0), "k", "v")},
		{"unknown fields ignored", `{"x":[1,{"y":null}],"metric":"m","tsuid":"00","timestamp":1,"value":1,"tags":{"k":"v"},"z":true}`,
			pt("m", 1000, chunk.Int(1), "k", "v")},
		{"last repeated field wins", `{"metric":"a","metric":"m","timestamp":1,"value":1,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(1), "k", "v")},
		{"escapes", `{"metric":"sys\u002ecpu\/a","timestamp":1,"value":1,"tags":{"h\u00e9":"w\u00e9b"}}`,
			pt("sys.cpu/a", 1000, chunk.Int(1), "hé", "wéb")},
		{"escaped key", `{"metr\u0069c":"m","timestamp":1,"value":1,"tags":{"k":"v"}}`,
			pt("m", 1000, chunk.Int(1), "k", "v")},
		{"prometheus names", `{"metric":"job:http_requests:rate5m","timestamp":1,"value":1,"tags":{"__x":"a:b"}}`,
			pt("job:http_requests:rate5m", 1000, chunk.Int(1), "__x", "a:b")},
		{"unicode letters", `{"metric":"température","timestamp":1,"value":1,"tags":{"ville":"Zürich"}}`,
			pt("température", 1000, chunk.Int(1), "ville", "Zürich")},
		{"numbers as names", `{"metric":123,"timestamp":1,"value":1,"tags":{"port":8080}}`,
			pt("123", 1000, chunk.Int(1), "port", "8080")},
		{"same pair twice collapses", `{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v","j":"w","k":"v"}}`,
			pt("m", 1000, chunk.Int(1), "k", "v", "j", "w")},
		{"tags in order", `{"metric":"m","timestamp":1,"value":1,"tags":{"z":"1","a":"2"}}`,
			pt("m", 1000, chunk.Int(1), "z", "1", "a", "2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeAll(t, tt.body, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].err != nil {
				t.Fatalf("got %+v", got)
			}
			if !samePoint(got[0].dp, tt.want) {
				t.Errorf("got %+v (%v)\nwant %+v (%v)", got[0].dp, got[0].dp.Value, tt.want, tt.want.Value)
			}
		})
	}
}

func TestParsePutPointErrors(t *testing.T) {
	long := strings.Repeat("a", 257)
	tests := []struct {
		name string
		body string
		want string
	}{
		{"no metric", `{"timestamp":1,"value":1,"tags":{"k":"v"}}`, "Metric name was empty"},
		{"empty metric", `{"metric":"","timestamp":1,"value":1,"tags":{"k":"v"}}`, "Metric name was empty"},
		{"null metric", `{"metric":null,"timestamp":1,"value":1,"tags":{"k":"v"}}`, "Metric name was empty"},
		{"object metric", `{"metric":{},"timestamp":1,"value":1,"tags":{"k":"v"}}`, "Invalid metric name: not a string"},
		{"no timestamp", `{"metric":"m","value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"zero timestamp", `{"metric":"m","timestamp":0,"value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"negative timestamp", `{"metric":"m","timestamp":-1,"value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"null timestamp", `{"metric":"m","timestamp":null,"value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"text timestamp", `{"metric":"m","timestamp":"now","value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"overflowing timestamp", `{"metric":"m","timestamp":99999999999999999999,"value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"huge float timestamp", `{"metric":"m","timestamp":1e300,"value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"array timestamp", `{"metric":"m","timestamp":[1],"value":1,"tags":{"k":"v"}}`, "Invalid timestamp"},
		{"no value", `{"metric":"m","timestamp":1,"tags":{"k":"v"}}`, "Empty value"},
		{"null value", `{"metric":"m","timestamp":1,"value":null,"tags":{"k":"v"}}`, "Empty value"},
		{"empty value", `{"metric":"m","timestamp":1,"value":"","tags":{"k":"v"}}`, "Empty value"},
		{"no tags", `{"metric":"m","timestamp":1,"value":1}`, "Missing tags"},
		{"empty tags", `{"metric":"m","timestamp":1,"value":1,"tags":{}}`, "Missing tags"},
		{"null tags", `{"metric":"m","timestamp":1,"value":1,"tags":null}`, "Missing tags"},
		{"array tags", `{"metric":"m","timestamp":1,"value":1,"tags":["k","v"]}`, "Invalid tags: not an object"},
		{"string tags", `{"metric":"m","timestamp":1,"value":1,"tags":"k=v"}`, "Invalid tags: not an object"},
		{"null tag value", `{"metric":"m","timestamp":1,"value":1,"tags":{"k":null}}`, "Invalid tag value with key [k]: null"},
		{"object tag value", `{"metric":"m","timestamp":1,"value":1,"tags":{"k":{}}}`, "Invalid tag value with key [k]: not a string"},
		{"text value", `{"metric":"m","timestamp":1,"value":"abc","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"NaN string", `{"metric":"m","timestamp":1,"value":"NaN","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"Infinity string", `{"metric":"m","timestamp":1,"value":"Infinity","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"hex value", `{"metric":"m","timestamp":1,"value":"0x10","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"boolean value", `{"metric":"m","timestamp":1,"value":true,"tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"object value", `{"metric":"m","timestamp":1,"value":{"a":1},"tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"int64 overflow", `{"metric":"m","timestamp":1,"value":9223372036854775808,"tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"20 digits", `{"metric":"m","timestamp":1,"value":"10000000000000000000","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"float with junk", `{"metric":"m","timestamp":1,"value":"1.5f","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"float overflow is infinite", `{"metric":"m","timestamp":1,"value":1e999,"tags":{"k":"v"}}`,
			"value is NaN or Infinite: Infinity for metric=m timestamp=1000"},
		{"negative float overflow", `{"metric":"m","timestamp":1,"value":"-1e999","tags":{"k":"v"}}`,
			"value is NaN or Infinite: -Infinity for metric=m timestamp=1000"},
		{"bad milliseconds", `{"metric":"m","timestamp":10000000000000,"value":1,"tags":{"k":"v"}}`,
			"bad timestamp=10000000000000 when trying to add value=1 to metric=m, tags={k=v}"},
		{"too many tags", `{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3"}}`,
			"Too many tags: 3 maximum allowed: 2, tags: {a=1, b=2, c=3}"},
		{"duplicate tag", `{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","a":"2"}}`,
			"duplicate tag: a=2, tags={a=1}"},
		{"bad metric", `{"metric":"a!b","timestamp":1,"value":1,"tags":{"k":"v"}}`,
			`Invalid metric name ("a!b"): illegal character: !`},
		{"space in metric", `{"metric":"a b","timestamp":1,"value":1,"tags":{"k":"v"}}`,
			`Invalid metric name ("a b"): illegal character:  `},
		{"non-letter unicode", `{"metric":"a€","timestamp":1,"value":1,"tags":{"k":"v"}}`,
			`Invalid metric name ("a€"): illegal character: €`},
		{"invalid utf-8", "{\"metric\":\"a\xff\",\"timestamp\":1,\"value\":1,\"tags\":{\"k\":\"v\"}}",
			"Invalid metric name (\"a\xff\"): illegal character: \ufffd"},
		{"bad tag key", `{"metric":"m","timestamp":1,"value":1,"tags":{"k=":"v"}}`,
			`Invalid tag name with value [v] ("k="): illegal character: =`},
		{"bad tag value", `{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v*"}}`,
			`Invalid tag value with key [k] ("v*"): illegal character: *`},
		{"empty tag key", `{"metric":"m","timestamp":1,"value":1,"tags":{"":"v"}}`,
			`Invalid tag name with value [v]: empty string`},
		{"empty tag value", `{"metric":"m","timestamp":1,"value":1,"tags":{"k":""}}`,
			`Invalid tag value with key [k]: empty string`},
		{"long metric", `{"metric":"` + long + `","timestamp":1,"value":1,"tags":{"k":"v"}}`,
			`Invalid metric name ("` + long[:200] + `… (257 bytes)"): too long: 257 bytes, maximum allowed: 256`},
		{"long tag value", `{"metric":"m","timestamp":1,"value":1,"tags":{"k":"` + long + `"}}`,
			`Invalid tag value with key [k] ("` + long[:200] + `… (257 bytes)"): too long: 257 bytes, maximum allowed: 256`},

		// The order of checks: each body has two problems, the first wins.
		{"metric before timestamp", `{"timestamp":0,"value":1,"tags":{"k":"v"}}`, "Metric name was empty"},
		{"timestamp before value", `{"metric":"m","value":"x","tags":{"k":"v"}}`, "Invalid timestamp"},
		{"empty value before tags", `{"metric":"m","timestamp":1,"value":""}`, "Empty value"},
		{"tags before value parsing", `{"metric":"m","timestamp":1,"value":"x"}`, "Missing tags"},
		{"value parsing before names", `{"metric":"a!","timestamp":1,"value":"x","tags":{"k":"v"}}`, "Unable to parse value to a number"},
		{"NaN before bad timestamp", `{"metric":"m","timestamp":10000000000000,"value":1e999,"tags":{"k":"v"}}`,
			"value is NaN or Infinite: Infinity for metric=m timestamp=10000000000000"},
		{"bad timestamp before tag count", `{"metric":"m","timestamp":10000000000000,"value":1,"tags":{"a":"1","b":"2","c":"3"}}`,
			"bad timestamp=10000000000000 when trying to add value=1 to metric=m, tags={a=1, b=2, c=3}"},
		{"tag count before names", `{"metric":"a!","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"!"}}`,
			"Too many tags: 3 maximum allowed: 2, tags: {a=1, b=2, c=!}"},
		{"metric before tags", `{"metric":"a!","timestamp":1,"value":1,"tags":{"k":"!"}}`,
			`Invalid metric name ("a!"): illegal character: !`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeAll(t, "["+tt.body+"]", Limits{MaxTags: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].err == nil {
				t.Fatalf("got %+v, want error %q", got, tt.want)
			}
			if got[0].err.Message != tt.want {
				t.Errorf("got  %q\nwant %q", got[0].err.Message, tt.want)
			}
			if string(got[0].err.Raw) != tt.body {
				t.Errorf("Raw %q, want %q", got[0].err.Raw, tt.body)
			}
		})
	}
}

func TestParsePutBodyErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"empty", "", ErrMissingContent},
		{"spaces", " \r\n\t ", ErrMissingContent},
		{"string", `"metric"`, ErrNotObjectOrArray},
		{"number", `42`, ErrNotObjectOrArray},
		{"null", `null`, ErrNotObjectOrArray},
		{"empty array", `[]`, ErrNoDataPoints},
		{"empty array spaces", ` [ ] `, ErrNoDataPoints},
		{"unclosed object", `{"metric":"m"`, ErrUnparseableJSON},
		{"unclosed array", `[{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v"}}`, ErrUnparseableJSON},
		{"trailing comma", `[{"metric":"m"},]`, ErrUnparseableJSON},
		{"trailing garbage", `{"metric":"m"} x`, ErrUnparseableJSON},
		{"trailing garbage array", `[{"metric":"m"}] [`, ErrUnparseableJSON},
		{"two objects", `{"metric":"m"}{"metric":"m"}`, ErrUnparseableJSON},
		{"missing colon", `{"metric" "m"}`, ErrUnparseableJSON},
		{"single quotes", `{'metric':'m'}`, ErrUnparseableJSON},
		{"bad escape", `{"metric":"\x"}`, ErrUnparseableJSON},
		{"bad unicode escape", `{"metric":"\u12g4"}`, ErrUnparseableJSON},
		{"control character", "{\"metric\":\"a\nb\"}", ErrUnparseableJSON},
		{"bare word", `{"metric":m}`, ErrUnparseableJSON},
		{"leading zero", `{"metric":"m","timestamp":01}`, ErrUnparseableJSON},
		{"plus sign", `{"metric":"m","value":+1}`, ErrUnparseableJSON},
		{"NaN literal", `{"metric":"m","value":NaN}`, ErrUnparseableJSON},
		{"bad number", `{"value":1.}`, ErrUnparseableJSON},
		{"bad exponent", `{"value":1e}`, ErrUnparseableJSON},
		{"bad literal", `{"value":tru}`, ErrUnparseableJSON},
		{"bad skipped value", `{"x":[1,}`, ErrUnparseableJSON},
		{"unclosed tags", `{"tags":{"k":"v"`, ErrUnparseableJSON},
		{"bad element", `[{"metric":"m"}, x]`, ErrUnparseableJSON},
		{"deep nesting", `{"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, ErrUnparseableJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeAll(t, tt.body, Limits{})
			if err != tt.want {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParsePutNeighbours(t *testing.T) {
	body := `[
	  {"metric":"a","timestamp":1,"value":1,"tags":{"k":"v"}},
	  {"metric":"b","timestamp":0,"value":2,"tags":{"k":"v"}},
	  null,
	  7,
	  {"metric":"c","timestamp":2,"value":3.5,"tags":{"k":"v"}}
	]`
	got, err := decodeAll(t, body, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("got %d elements", len(got))
	}
	if !samePoint(got[0].dp, pt("a", 1000, chunk.Int(1), "k", "v")) {
		t.Errorf("0: %+v", got[0])
	}
	if got[1].err == nil || got[1].err.Message != "Invalid timestamp" || got[1].err.Index != 1 {
		t.Errorf("1: %+v", got[1].err)
	}
	if got[2].err == nil || got[2].err.Message != "Unexpected null datapoint encountered in set." {
		t.Errorf("2: %+v", got[2].err)
	}
	if got[3].err == nil || got[3].err.Message != "Invalid data point: not an object" || string(got[3].err.Raw) != "7" {
		t.Errorf("3: %+v", got[3].err)
	}
	if !samePoint(got[4].dp, pt("c", 2000, chunk.Float(3.5), "k", "v")) {
		t.Errorf("4: %+v", got[4])
	}
}

func TestPutDecoderRaw(t *testing.T) {
	var d PutDecoder
	var raws []string
	body := `[{"metric":"a","timestamp":1,"value":1,"tags":{"k":"v"}} , {"metric":"b"}]`
	err := d.Decode([]byte(body), func(i int, dp *DataPoint, err error) error {
		raws = append(raws, string(d.Raw()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"metric":"a","timestamp":1,"value":1,"tags":{"k":"v"}}`, `{"metric":"b"}`}
	if !slices.Equal(raws, want) || d.Raw() != nil {
		t.Errorf("got %q, want %q", raws, want)
	}
}

func TestParsePutStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := ParsePut([]byte(`[{"metric":"a","timestamp":1,"value":1,"tags":{"k":"v"}},{"metric":"b"}]`), Limits{},
		func(i int, dp *DataPoint, err error) error {
			n++
			return stop
		})
	if err != stop || n != 1 {
		t.Errorf("got %v after %d calls", err, n)
	}
}

func TestPutDecoderReuse(t *testing.T) {
	var d PutDecoder
	bodies := []string{
		`[{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3"}}]`,
		`{"metric":"m","timestamp":2,"value":2,"tags":{"a":"1"}}`,
		`{"metric":"a!","timestamp":2,"value":2,"tags":{"a":"1"}}`,
	}
	var got []DataPoint
	var msgs []string
	for _, b := range bodies {
		err := d.Decode([]byte(b), func(i int, dp *DataPoint, err error) error {
			if err != nil {
				msgs = append(msgs, err.Error())
				return nil
			}
			c := *dp
			c.Tags = slices.Clone(dp.Tags)
			got = append(got, c)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || len(got[1].Tags) != 1 || got[1].Timestamp != 2000 {
		t.Errorf("got %+v", got)
	}
	// The cached validity of "a!" must not hide the error the second time.
	if err := d.Decode([]byte(bodies[2]), func(int, *DataPoint, error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0] != `Invalid metric name ("a!"): illegal character: !` {
		t.Errorf("messages %q", msgs)
	}
	// A change of limits must not reuse validity computed for other limits.
	d.Limits.MaxNameLen = 1
	var msg string
	d.Decode([]byte(`{"metric":"mm","timestamp":2,"value":2,"tags":{"a":"1"}}`), func(i int, dp *DataPoint, err error) error {
		if err != nil {
			msg = err.Error()
		}
		return nil
	})
	if msg != `Invalid metric name ("mm"): too long: 2 bytes, maximum allowed: 1` {
		t.Errorf("got %q", msg)
	}
}

func TestPointErrorDatapoint(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"full", `{"metric":"m","timestamp":1346846400,"value":18,"tags":{"host":"web01"},"x":[1]}`,
			`{"metric":"m","timestamp":1346846400,"value":"18","tags":{"host":"web01"}}`},
		{"string value", `{"value":"1.5","metric":"a!"}`, `{"metric":"a!","timestamp":0,"value":"1.5"}`},
		{"escapes", `{"metric":"a\"b","tags":{"k\n":"\u00e9"}}`, `{"metric":"a\"b","timestamp":0,"tags":{"k\n":"é"}}`},
		{"bad timestamp", `{"timestamp":"x"}`, `{"timestamp":0}`},
		{"not object", `7`, `null`},
		{"null", `null`, `null`},
		{"tags not object", `{"tags":[1]}`, `{"timestamp":0}`},
		{"empty tags", `{"tags":{}}`, `{"timestamp":0,"tags":{}}`},
		{"null fields", `{"metric":null,"value":null,"tags":{"a":null}}`, `{"timestamp":0,"tags":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &PointError{Raw: []byte(tt.raw)}
			got := string(e.AppendDatapoint(nil))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("invalid JSON %s", got)
			}
		})
	}
}

func TestAppendPutSummary(t *testing.T) {
	errs := []*PointError{{Message: "Invalid timestamp", Raw: []byte(`{"metric":"m","timestamp":0,"value":1,"tags":{"k":"v"}}`)}}
	tests := []struct {
		name     string
		timeouts int
		details  []*PointError
		want     string
	}{
		{"summary", -1, nil, `{"success":3,"failed":1}`},
		{"timeouts", 0, nil, `{"success":3,"failed":1,"timeouts":0}`},
		{"details", -1, errs, `{"success":3,"failed":1,"errors":[{"datapoint":{"metric":"m","timestamp":0,"value":"1","tags":{"k":"v"}},"error":"Invalid timestamp"}]}`},
		{"details none", -1, []*PointError{}, `{"success":3,"failed":1,"errors":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendPutSummary(nil, 3, 1, tt.timeouts, tt.details))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := pt("m", 1000, chunk.Int(1), "k", "v")
	tests := []struct {
		name string
		dp   DataPoint
		l    Limits
		want string
	}{
		{"ok", ok, Limits{}, ""},
		{"empty metric", pt("", 1000, chunk.Int(1), "k", "v"), Limits{}, "Metric name was empty"},
		{"zero timestamp", pt("m", 0, chunk.Int(1), "k", "v"), Limits{}, "Invalid timestamp"},
		{"no tags", pt("m", 1000, chunk.Int(1)), Limits{}, "Missing tags"},
		{"NaN", pt("m", 1000, chunk.Float(math.NaN()), "k", "v"), Limits{}, "value is NaN or Infinite: NaN for metric=m timestamp=1000"},
		{"32 tags ok", pt("m", 1000, chunk.Int(1), manyTags(32)...), Limits{}, ""},
		{"33 tags", pt("m", 1000, chunk.Int(1), manyTags(33)...), Limits{}, "Too many tags: 33 maximum allowed: 32, tags: " + formatTags(pt("", 0, chunk.Int(0), manyTags(33)...).Tags)},
		{"duplicate", pt("m", 1000, chunk.Int(1), "k", "v", "j", "w", "k", "v"), Limits{}, "duplicate tag: k=v, tags={k=v, j=w}"},
		{"256 bytes ok", pt(strings.Repeat("x", 256), 1000, chunk.Int(1), "k", "v"), Limits{}, ""},
		{"limit", pt("abc", 1000, chunk.Int(1), "k", "v"), Limits{MaxNameLen: 2}, `Invalid metric name ("abc"): too long: 3 bytes, maximum allowed: 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.dp.Validate(tt.l)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func manyTags(n int) []string {
	var kv []string
	for i := range n {
		kv = append(kv, "k"+strings.Repeat("x", i), "v")
	}
	return kv
}

func TestValidateName(t *testing.T) {
	tests := []struct{ what, name, want string }{
		{"metric", "sys.cpu-0_a/b:c", ""},
		{"metric", "a!", `Invalid metric ("a!"): illegal character: !`},
		{"tagk", "", "Invalid tagk: empty string"},
		{"tagv", "日本", ""},
		{"tagv", "a\x00", "Invalid tagv (\"a\x00\"): illegal character: \x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.what, tt.name, 0)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPutDecoderRef(t *testing.T) {
	var d PutDecoder
	var refs []any
	decode := func(body string, set any) {
		t.Helper()
		refs = refs[:0]
		err := d.Decode([]byte(body), func(i int, dp *DataPoint, err error) error {
			refs = append(refs, d.Ref())
			if err == nil && d.Ref() == nil && set != nil {
				d.SetRef(set)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	decode(`[{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1"}},{"metric":"m","timestamp":2,"value":1,"tags":{"a":"1"}}]`, "m{a=1}")
	if !slices.Equal(refs, []any{nil, "m{a=1}"}) {
		t.Fatalf("refs %v", refs)
	}
	decode(`[{"metric":"n","timestamp":1,"value":1,"tags":{"a":"1"}},`+ // another metric, the same tags
		`{"tags":{"a":"1"},"metric":"m","timestamp":1,"value":1},`+ // the fields in another order
		`{"metric":"m","timestamp":1,"value":"x","tags":{"a":"1"}},`+ // a point in error
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1"},"tags":{"a":"2"}},`+ // the last tags count
		`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1"},"tags":"x"}]`, nil)
	if !slices.Equal(refs, []any{nil, "m{a=1}", nil, nil, nil}) {
		t.Fatalf("refs %v", refs)
	}
	if d.Ref() != nil {
		t.Fatalf("Ref outside Decode: %v", d.Ref())
	}
}
