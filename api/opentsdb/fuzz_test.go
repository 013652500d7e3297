package opentsdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"hourglass/chunk"
	"hourglass/model"
)

// Fuzz targets. Run one with e.g.
//
//	go test ./api/opentsdb/ -run '^$' -fuzz '^FuzzParsePut$' -fuzztime 60s
//
// and keep what it finds under testdata/fuzz/ as seeds.

var putSeeds = []string{
	`{"metric":"sys.cpu.user","timestamp":1346846400,"value":18,"tags":{"host":"web01"}}`,
	`[{"metric":"a","timestamp":1346846400123,"value":"1.5e3","tags":{"k":"v","j":"w"}},null,7,{"metric":"b"}]`,
	`[{"metric":"m\u00e9","timestamp":"12","value":-0.0,"tags":{"k\ud83d\ude00":1,"x":true}}]`,
	`{"x":[{"y":[[[]]]}],"metric":1,"timestamp":1e3,"value":1e999,"tags":{"a":null}}`,
	`[]`, ``, `"x"`, `[{"metric":"m"},]`,
	// Past MaxTags (4 in the fuzz targets): the rest is skipped, not decoded.
	`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":{"x":[1]},"h":null}}`,
	`{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g"}}`,
}

func FuzzParsePut(f *testing.F) {
	for _, s := range putSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		l := Limits{MaxTags: 4, MaxNameLen: 16}
		n := 0
		err := ParsePut(body, l, func(i int, dp *DataPoint, err error) error {
			if i != n {
				t.Fatalf("index %d, want %d", i, n)
			}
			n++
			if err != nil {
				pe := err.(*PointError)
				if pe.Index != i || pe.Message == "" || !json.Valid(pe.Raw) {
					t.Fatalf("bad point error %+v", pe)
				}
				if d := pe.AppendDatapoint(nil); !json.Valid(d) {
					t.Fatalf("datapoint echo %s is not JSON", d)
				}
				return nil
			}
			if err := dp.Validate(l); err != nil {
				t.Fatalf("point %+v accepted but Validate says %v", dp, err)
			}
			return nil
		})
		if err == nil && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON")
		}
		if err == ErrUnparseableJSON && json.Valid(body) && bytes.Count(body, []byte("[")) < maxDepth-2 && bytes.Count(body, []byte("{")) < maxDepth-2 {
			t.Fatalf("rejected valid JSON")
		}
	})
}

// sanitize turns s into a valid name of at most max bytes.
func sanitize(s string, fallback string, max int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && model.OpenTSDBNameByte(byte(r)):
			b.WriteRune(r)
		case r >= utf8.RuneSelf && r != utf8.RuneError && (r >= 'À' && r <= 'ÿ' && r != '×' && r != '÷'):
			b.WriteRune(r)
		default:
			b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789-_./:"[int(r)%41])
		}
		if b.Len() > max-4 {
			break
		}
	}
	if b.Len() == 0 {
		return fallback
	}
	return b.String()
}

// FuzzPutRoundTrip encodes a random valid point as an /api/put body and as a
// telnet line, parses both and checks the point comes back identical,
// integer extremes and float bits included.
func FuzzPutRoundTrip(f *testing.F) {
	f.Add("sys.cpu.user", int64(1346846400), int64(42), uint64(0), false, uint8(1), "host", false)
	f.Add("m", int64(1346846400123), int64(math.MaxInt64), uint64(0), false, uint8(3), "k", true)
	f.Add("m", int64(1), int64(math.MinInt64), uint64(0), false, uint8(32), "k", false)
	f.Add("température", int64(4294967295), int64(0), math.Float64bits(0.1), true, uint8(2), "ville", true)
	f.Add("m", int64(4294967296), int64(0), math.Float64bits(math.Copysign(0, -1)), true, uint8(1), "k", false)
	f.Add("m", int64(9999999999999), int64(0), uint64(1), true, uint8(1), "k", false) // smallest denormal
	f.Add("m", int64(7), int64(0), math.Float64bits(math.MaxFloat64), true, uint8(1), "k", true)
	f.Add("job:rps", int64(7), int64(0), math.Float64bits(1e21), true, uint8(5), "a:b", false)
	f.Fuzz(func(t *testing.T, metric string, ts, ival int64, fbits uint64, isFloat bool, ntags uint8, tagSeed string, asString bool) {
		want := DataPoint{Metric: sanitize(metric, "m", 256)}
		raw := ts
		if raw < 0 {
			raw = -(raw + 1)
		}
		raw = 1 + raw%maxMillisTimestamp
		want.Timestamp = TimestampMillis(raw)
		if isFloat {
			fv := math.Float64frombits(fbits)
			if math.IsNaN(fv) || math.IsInf(fv, 0) {
				return
			}
			want.Value = chunk.Float(fv)
		} else {
			want.Value = chunk.Int(ival)
		}
		n := 1 + int(ntags)%DefaultMaxTags
		for i := range n {
			want.Tags = append(want.Tags, Tag{
				Key:   strconv.Itoa(i) + sanitize(tagSeed, "", 200),
				Value: sanitize(tagSeed+strconv.Itoa(i*7), "v", 256),
			})
		}
		if err := want.Validate(Limits{}); err != nil {
			t.Fatalf("generated an invalid point: %v", err)
		}
		value := string(AppendValue(nil, want.Value, false))

		// JSON.
		var body []byte
		body = append(body, `[{"metric":`...)
		body = appendString(body, want.Metric)
		body = append(body, `,"timestamp":`...)
		body = strconv.AppendInt(body, raw, 10)
		body = append(body, `,"value":`...)
		if asString {
			body = appendString(body, value)
		} else {
			body = append(body, value...)
		}
		body = append(body, `,"tags":{`...)
		for i, tg := range want.Tags {
			if i > 0 {
				body = append(body, ',')
			}
			body = appendString(body, tg.Key)
			body = append(body, ':')
			body = appendString(body, tg.Value)
		}
		body = append(body, "}}]"...)
		got := 0
		err := ParsePut(body, Limits{}, func(i int, dp *DataPoint, err error) error {
			got++
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if !samePoint(*dp, want) {
				t.Fatalf("%s:\ngot  %+v %v\nwant %+v %v", body, *dp, dp.Value, want, want.Value)
			}
			return nil
		})
		if err != nil || got != 1 {
			t.Fatalf("%s: %v, %d points", body, err, got)
		}

		// Telnet.
		line := "put " + want.Metric + " " + strconv.FormatInt(raw, 10) + " " + value
		for _, tg := range want.Tags {
			line += " " + tg.Key + "=" + tg.Value
		}
		line += "\r\n"
		var dp DataPoint
		if err := ParsePutLine([]byte(line), Limits{}, &dp); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if !samePoint(dp, want) {
			t.Fatalf("%q:\ngot  %+v\nwant %+v", line, dp, want)
		}
	})
}

func FuzzParsePutLine(f *testing.F) {
	for _, s := range []string{
		"put sys.if.bytes.out 1479496100 1.3E3 host=web01 interface=eth0",
		"put m 1479496100.123 -7 k=v\r\n",
		"put  m  1 1  a=1 a=1 b==c",
		"put m 1 1e999 k=v", "put foo", "version", "put m x y k",
		"put m 1 1 a=1 b=2 c=3 d=4 e=5 f=6 g", "put m 1 1 a=1 a=2 b=2 c=3 d=4 e=5",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l := Limits{MaxTags: 4, MaxNameLen: 16}
		var dp DataPoint
		err := ParsePutLine(line, l, &dp)
		SplitCommand(line)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "put: ") && !strings.HasPrefix(err.Error(), "unknown command: ") {
				t.Fatalf("reply %q", err)
			}
			return
		}
		if err := dp.Validate(l); err != nil {
			t.Fatalf("accepted %+v but Validate says %v", dp, err)
		}
		// Written back out, the point reads the same.
		again := "put " + dp.Metric + " " + strconv.FormatInt(dp.Timestamp, 10) + " " + string(AppendValue(nil, dp.Value, false))
		for _, tg := range dp.Tags {
			again += " " + tg.Key + "=" + tg.Value
		}
		var dp2 DataPoint
		if err := ParsePutLine([]byte(again), l, &dp2); err != nil {
			t.Fatalf("%q: %v", again, err)
		}
		// The timestamp was written as ms; it reads back as ms unless small.
		if dp.Timestamp > maxSecondsTimestamp && !samePoint(dp, dp2) {
			t.Fatalf("%q:\ngot  %+v\nwant %+v", again, dp2, dp)
		}
	})
}

// parseValue reads what the long way reads (its shortcut for short
// numbers included): the same value, bit for bit, or the same message.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"42.5", "-0.0", "+.5", "3.", ".", "-", "0.1", "123456789012345.", "1234567890123456.",
		"99999999999999.9", "0.000000000000001", "1.5e3", "12", "-9223372036854775808", "1..2", "1.2.", "١.٢", "NaN", "",
		"999999999999999999", "-999999999999999999", "1000000000000000000", "+0", "-0", "007", "+", "-.", "1-2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		got, gmsg := parseValue(s)
		want, wmsg := parseValueLong(s)
		if got != want || gmsg != wmsg {
			t.Fatalf("%q: %v %q, the long way %v %q", s, got, gmsg, want, wmsg)
		}
	})
}

// parseLineTimestamp reads what its long way reads: the same timestamp or
// the same error.
func FuzzLineTimestamp(f *testing.F) {
	for _, s := range []string{"1767225600", "1767225600123", "1767225600.123", "0", "000", "-1", "+5", "",
		"999999999999999999", "9999999999999999999", "12a", "1.2.3", "."} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		got, gerr := parseLineTimestamp(s)
		want, werr := parseLineTimestampLong(s)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: %d %v, the long way %d %v", s, got, gerr, want, werr)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "1h-ago", "1364410924", "1364410924.250", "1364410924250ms",
		"2013/01/23-12:50:42", "2013/01/23 12:50", "2013/01/23", "-5", "0h-ago", "9223372036854775807ms-ago"} {
		f.Add(s)
	}
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseTime(s, now, time.UTC); err != nil {
			if _, ok := err.(*RequestError); !ok {
				t.Fatalf("error %T", err)
			}
		}
		if d, err := ParseDuration(s); err == nil && d <= 0 {
			t.Fatalf("duration %q = %d", s, d)
		}
	})
}

func FuzzParseQueryURI(f *testing.F) {
	for _, s := range []string{
		"sum:rate{counter,,1000}:if.octets.in{host=*}{dc=literal_or(lga|sjc)}",
		"avg:1h-avg:rate:sys.cpu.user{host=web01|web02,dc=lg*}",
		"sum:percentiles[99.9,95]:show-histogram-buckets:pre-agg:m",
		"sum:rate:job:http_requests:rate5m{instance=a:9090}",
		"sum:m{}{host=regexp(a{1,2})}", "sum::m", "sum", "sum:rate{", "sum:m{a=b",
	} {
		f.Add(s, "sum:1m-avg:000001000001000001")
	}
	f.Fuzz(func(t *testing.T, m, tsuid string) {
		q, err := ParseQueryURI(url.Values{"start": {"1h-ago"}, "m": {m}, "tsuid": {tsuid}})
		if err != nil {
			if _, ok := err.(*RequestError); !ok {
				t.Fatalf("error %T", err)
			}
			return
		}
		for i := range q.Queries {
			sq := &q.Queries[i]
			for _, flt := range sq.Filters {
				if _, err := flt.Compile(); err != nil {
					t.Fatalf("accepted filter %+v: %v", flt, err)
				}
			}
			if b := sq.AppendJSON(nil); !json.Valid(b) {
				t.Fatalf("echo %s is not JSON", b)
			}
		}
	})
}

func FuzzParseQueryJSON(f *testing.F) {
	for _, s := range []string{
		`{"start":1767225600,"end":1767229200,"queries":[{"aggregator":"sum","downsample":"30s-avg","filters":[{"filter":"web*","groupBy":true,"tagk":"host","type":"wildcard"}],"metric":"cpu.usage"}]}`,
		`{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","tags":{"host":"*","dc":"a|b"},"rate":true,"rateOptions":{"counter":true,"counterMax":null}}]}`,
		`{"start":0,"end":0,"queries":null}`, `[]`, ``, `{"queries":[{"filters":[null,{"type":"regexp","tagk":"k","filter":"("}]}]}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Unix(1767229200, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		q, err := ParseQueryJSON(body)
		for _, parse := range []func([]byte) error{
			func(b []byte) error { _, err := ParseSuggestJSON(b); return err },
			func(b []byte) error { _, err := ParseLookupJSON(b); return err },
			func(b []byte) error { _, err := ParseLastJSON(b); return err },
			func(b []byte) error { _, err := ParseUIDAssignJSON(b); return err },
		} {
			if err := parse(body); err != nil {
				if _, ok := err.(*RequestError); !ok {
					t.Fatalf("error %T", err)
				}
			}
		}
		if err != nil {
			if _, ok := err.(*RequestError); !ok {
				t.Fatalf("error %T", err)
			}
			return
		}
		q.Validate(now, nil)
		for i := range q.Queries {
			for _, flt := range q.Queries[i].Filters {
				if _, err := flt.Compile(); err != nil {
					t.Fatalf("accepted filter %+v: %v", flt, err)
				}
			}
			if b := q.Queries[i].AppendJSON(nil); !json.Valid(b) {
				t.Fatalf("echo %s is not JSON", b)
			}
		}
	})
}

func FuzzFilterCompile(f *testing.F) {
	for _, s := range [][3]string{
		{"literal_or", "web01|web02", "web01"}, {"iliteral_or", "A|b", "a"}, {"not_literal_or", "|", "x"},
		{"wildcard", "*a*b*", "xaxb"}, {"iwildcard", "WEB*", "web1"}, {"regexp", "^web[0-9]+$", "web1"},
		{"not_key", "", ""}, {"wildcard", "a*a", "a"},
	} {
		f.Add(s[0], "host", s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, typ, tagk, expr, value string) {
		m, err := Filter{Type: typ, TagK: tagk, Expr: expr}.Compile()
		if err == nil {
			m.Matches(value, true)
			m.Matches(value, false)
			m.Literals()
			if m.MatchesAnyValue() && !m.Matches(value, true) {
				t.Fatal("MatchesAnyValue but rejects a value")
			}
			if lits, ok := m.Literals(); ok {
				for _, l := range lits {
					if !m.Matches(l, true) {
						t.Fatalf("literal %q does not match", l)
					}
				}
			}
			if typ == FilterWildcard && !strings.Contains(value, "*") {
				// A wildcard matches a value built from its own parts.
				if !m.Matches(strings.ReplaceAll(expr, "*", value), true) {
					t.Fatalf("%q does not match %q", expr, strings.ReplaceAll(expr, "*", value))
				}
			}
		}
		if flt, err := ParseTagFilter(tagk, expr, true); err == nil {
			if _, err := flt.Compile(); err != nil {
				t.Fatalf("ParseTagFilter accepted %+v: %v", flt, err)
			}
		}
	})
}

// FuzzLineParserCache checks that a LineParser, which remembers the series
// it has parsed, answers every line of a stream as a fresh parser does: the
// same point or the same reply, whether the line's series is new to it, was
// seen with another timestamp or value, or was seen in a line that failed.
func FuzzLineParserCache(f *testing.F) {
	for _, s := range []string{
		"put m 1 1 k=v j=w\nput m 2 NaN k=v j=w\nput m 3 x k=v j=w\nput m 99999999999999 1 k=v j=w\nput m 4 2 k=v j=w\n",
		"put m 1 1 k=v k=v\nput m 1 1 k=v k=w\nput m 1 1 k=v k=v\n",
		"put m 1 1 a=1 b=2 c=3 d=4 e=5\nput m 1 1 a=1 b=2 c=3 d=4 e=5\nput m! 1 1 a=1\nput m! 2 1 a=1\n",
		"put m 1 1 k=v \nput m 1 1 k=v\nput m 1 1 k =v\nput m x 1 k=v\nput m 1.5 1 k=v\n",
		"put aaaaaaaaaaaaaaaaa 1 1 k=v\nput aaaaaaaaaaaaaaaaa 1 1 k=v\nput m 0 1 k=v\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		l := Limits{MaxTags: 4, MaxNameLen: 16}
		lines := bytes.Split(stream, []byte("\n"))
		p := LineParser{Limits: l}
		var got, want DataPoint
		for round := range 3 {
			for _, line := range lines {
				var err error
				var known any
				if round == 2 {
					// ParseKnown: the same answer, without the tags of a
					// series that has a ref.
					known, err = p.ParseKnown(line, &got)
					if err == nil && known != p.Ref() {
						t.Fatalf("%q: ParseKnown's ref %v, Ref's %v", line, known, p.Ref())
					}
				} else {
					err = p.Parse(line, &got)
				}
				werr := ParsePutLine(line, l, &want)
				if known != nil {
					if len(got.Tags) != 0 {
						t.Fatalf("%q: ParseKnown gave tags %v beside the ref %v", line, got.Tags, known)
					}
					got.Tags = append(got.Tags[:0], want.Tags...)
				}
				if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
					t.Fatalf("round %d, %q: %v, want %v", round, line, err, werr)
				}
				if err == nil && !samePoint(got, want) {
					t.Fatalf("round %d, %q:\ngot  %+v\nwant %+v", round, line, got, want)
				}
				// A ref attached to a series comes back with its lines only.
				if err != nil {
					if p.Ref() != nil {
						t.Fatalf("%q was rejected but has the ref %v", line, p.Ref())
					}
					continue
				}
				name := fmt.Sprint(got.Metric, got.Tags)
				if ref := p.Ref(); ref == nil {
					p.SetRef(name)
				} else if ref != name {
					t.Fatalf("%q: the ref of %s, not %s", line, ref, name)
				}
			}
		}
	})
}

// FuzzPutDecoderCache checks that a reused PutDecoder, which remembers the
// tags objects it has decoded, reports every point of a stream of bodies as
// a fresh decoder reports that point alone.
func FuzzPutDecoderCache(f *testing.F) {
	f.Add([]byte(`[{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v","j":"w"}},{"metric":"m!","timestamp":2,"value":2,"tags":{"k":"v","j":"w"}}]`),
		[]byte(`[{"tags":{"k":"v","j":"w"},"metric":"n","timestamp":1,"value":"NaN"},{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v","k":"v"}}]`))
	f.Add([]byte(`[{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3","d":"4","e":"5"}},{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3","d":"4","e":"5"}}]`),
		[]byte(`{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v","k":"w"}}`))
	f.Add([]byte(`[{"metric":"m","timestamp":1,"value":1,"tags":{"k":null}},{"metric":"m","timestamp":1,"value":1,"tags":{"k":"aaaaaaaaaaaaaaaaaaaa"}}]`),
		[]byte(`[{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v\u0021"}},{"metric":"m","timestamp":1,"value":1,"tags":{"k":1}}]`))
	f.Fuzz(func(t *testing.T, body1, body2 []byte) {
		l := Limits{MaxTags: 4, MaxNameLen: 16}
		d := PutDecoder{Limits: l}
		for _, body := range [][]byte{body1, body2, body1} {
			_ = d.Decode(body, func(i int, dp *DataPoint, err error) error {
				raw := append([]byte(nil), d.Raw()...)
				if raw[0] != '{' {
					return nil // alone, it would be a body of its own kind
				}
				var want DataPoint
				var werr error
				n := 0
				if e := ParsePut(raw, l, func(_ int, dp *DataPoint, err error) error {
					n++
					if dp != nil {
						want = *dp
						want.Tags = append([]Tag(nil), dp.Tags...)
					}
					werr = err
					return nil
				}); e != nil || n != 1 {
					return nil // not a point alone (a scalar element, say)
				}
				if (err == nil) != (werr == nil) {
					t.Fatalf("%s: %v, alone %v", raw, err, werr)
				}
				if err != nil {
					if d.Ref() != nil {
						t.Fatalf("%s was rejected but has the ref %v", raw, d.Ref())
					}
					if err.(*PointError).Message != werr.(*PointError).Message {
						t.Fatalf("%s: %v, alone %v", raw, err, werr)
					}
					return nil
				}
				if !samePoint(*dp, want) {
					t.Fatalf("%s:\ngot   %+v\nalone %+v", raw, *dp, want)
				}
				// A ref attached to a series comes back with its points only.
				name := fmt.Sprint(dp.Metric, dp.Tags)
				if ref := d.Ref(); ref == nil {
					d.SetRef(name)
				} else if ref != name {
					t.Fatalf("%s: the ref of %s, not %s", raw, ref, name)
				}
				return nil
			})
		}
	})
}
