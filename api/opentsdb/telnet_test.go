package opentsdb

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"hourglass/chunk"
)

func TestParsePutLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want DataPoint
	}{
		{"docs example", "put sys.if.bytes.out 1479496100 1.3E3 host=web01 interface=eth0",
			pt("sys.if.bytes.out", 1479496100000, chunk.Float(1300), "host", "web01", "interface", "eth0")},
		{"newline", "put m 1 42 k=v\n", pt("m", 1000, chunk.Int(42), "k", "v")},
		{"crlf", "put m 1 42 k=v\r\n", pt("m", 1000, chunk.Int(42), "k", "v")},
		{"consecutive spaces", "put  m   1  42   k=v    j=w  ", pt("m", 1000, chunk.Int(42), "k", "v", "j", "w")},
		{"milliseconds", "put m 1479496100123 -7 k=v", pt("m", 1479496100123, chunk.Int(-7), "k", "v")},
		{"dotted milliseconds", "put m 1479496100.123 1 k=v", pt("m", 1479496100123, chunk.Int(1), "k", "v")},
		{"dotted short, as OpenTSDB", "put m 1479496100.25 1 k=v", pt("m", 147949610025, chunk.Int(1), "k", "v")},
		{"float", "put m 1 0.1 k=v", pt("m", 1000, chunk.Float(0.1), "k", "v")},
		{"max int64", "put m 1 9223372036854775807 k=v", pt("m", 1000, chunk.Int(math.MaxInt64), "k", "v")},
		{"min int64", "put m 1 -9223372036854775808 k=v", pt("m", 1000, chunk.Int(math.MinInt64), "k", "v")},
		{"plus sign", "put m +1 +5 k=v", pt("m", 1000, chunk.Int(5), "k", "v")},
		{"same pair twice", "put m 1 1 k=v k=v", pt("m", 1000, chunk.Int(1), "k", "v")},
		{"unicode", "put température 1 1 ville=Zürich", pt("température", 1000, chunk.Int(1), "ville", "Zürich")},
		{"prometheus", "put job:rps 1 1 a=b:c", pt("job:rps", 1000, chunk.Int(1), "a", "b:c")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dp DataPoint
			if err := ParsePutLine([]byte(tt.line), Limits{}, &dp); err != nil {
				t.Fatal(err)
			}
			if !samePoint(dp, tt.want) {
				t.Errorf("got %+v, want %+v", dp, tt.want)
			}
		})
	}
}

func TestParsePutLineErrors(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"one argument", "put foo", "put: illegal argument: not enough arguments (need least 4, got 1)"},
		{"no argument", "put", "put: illegal argument: not enough arguments (need least 4, got 0)"},
		{"no tags", "put m 1 1", "put: illegal argument: not enough arguments (need least 4, got 3)"},
		{"no tags trailing space", "put m 1 1   \r\n", "put: illegal argument: not enough arguments (need least 4, got 3)"},
		{"bad timestamp", "put m notatime 1 k=v", "put: invalid value: Invalid character 'n' in notatime"},
		{"timestamp zero", "put m 0 1 k=v", "put: illegal argument: invalid timestamp: 0"},
		{"timestamp negative", "put m -5 1 k=v", "put: illegal argument: invalid timestamp: -5"},
		{"timestamp too long", "put m 12345678901234567890 1 k=v", "put: invalid value: Value too long: 12345678901234567890"},
		{"timestamp just a sign", "put m - 1 k=v", "put: invalid value: Just a sign, no value: -"},
		{"bad milliseconds", "put m 10000000000000 1 k=v",
			"put: illegal argument: bad timestamp=10000000000000 when trying to add value=1 to metric=m, tags={k=v}"},
		{"tag without =", "put m 1 1 foo", "put: illegal argument: invalid tag: foo"},
		{"tag empty key", "put m 1 1 =v", "put: illegal argument: invalid tag: =v"},
		{"tag empty value", "put m 1 1 k=", "put: illegal argument: invalid tag: k="},
		{"tag two =", "put m 1 1 k=v=w", "put: illegal argument: invalid tag: k=v=w"},
		{"duplicate tag", "put m 1 1 host=a dc=x host=b", "put: illegal argument: duplicate tag: host=b, tags={host=a, dc=x}"},
		{"bad value", "put m 1 12x k=v", "put: invalid value: Invalid character 'x' in 12x"},
		{"NaN", "put m 1 NaN k=v", "put: invalid value: Invalid character 'N' in NaN"},
		{"bad float", "put m 1 1.5x k=v", `put: invalid value: For input string: "1.5x"`},
		{"overflow", "put m 1 9223372036854775808 k=v", "put: invalid value: Overflow in 9223372036854775808"},
		{"infinite", "put m 1 1e999 k=v", "put: illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=1000"},
		{"too many tags", "put m 1 1 a=1 b=2 c=3", "put: illegal argument: Too many tags: 3 maximum allowed: 2, tags: {a=1, b=2, c=3}"},
		{"bad metric", "put a!b 1 1 k=v", `put: illegal argument: Invalid metric name ("a!b"): illegal character: !`},
		{"bad tag key", "put m 1 1 k*=v", `put: illegal argument: Invalid tag name with value [v] ("k*"): illegal character: *`},
		{"bad tag value", "put m 1 1 k=v\tw", "put: illegal argument: Invalid tag value with key [k] (\"v\tw\"): illegal character: \t"},
		{"not put", "PUT m 1 1 k=v", "unknown command: PUT.  Try `help'."},

		// Order: tags are read before the value, the value before the names.
		{"tag before value", "put m 1 x foo", "put: illegal argument: invalid tag: foo"},
		{"value before names", "put a! 1 x k=v", "put: invalid value: Invalid character 'x' in x"},
		{"timestamp before tags", "put m x 1 foo", "put: invalid value: Invalid character 'x' in x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dp DataPoint
			err := ParsePutLine([]byte(tt.line), Limits{MaxTags: 2}, &dp)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LineError", err)
			}
			if le.Reply != tt.want {
				t.Errorf("got  %q\nwant %q", le.Reply, tt.want)
			}
		})
	}
}

func TestLineParserReuse(t *testing.T) {
	var p LineParser
	var dp DataPoint
	if err := p.Parse([]byte("put m 1 1 a=1 b=2"), &dp); err != nil {
		t.Fatal(err)
	}
	if err := p.Parse([]byte("put m 2 2.5 a=1"), &dp); err != nil {
		t.Fatal(err)
	}
	if !samePoint(dp, pt("m", 2000, chunk.Float(2.5), "a", "1")) {
		t.Errorf("got %+v", dp)
	}
	if err := p.Parse([]byte("put m! 2 2 a=1"), &dp); err == nil {
		t.Error("no error for an invalid metric")
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		name, line, cmd string
		args            []string
	}{
		{"put", "put m 1 1 k=v\r\n", "put", []string{"m", "1", "1", "k=v"}},
		{"version", "version\n", "version", nil},
		{"stats", "stats", "stats", nil},
		{"help", "help", "help", nil},
		{"dropcaches", "dropcaches\r\n", "dropcaches", nil},
		{"exit", "exit", "exit", nil},
		{"spaces", "  put   a  b ", "put", []string{"a", "b"}},
		{"blank", "\r\n", "", nil},
		{"unknown", "foo bar", "foo", []string{"bar"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, args := SplitCommand([]byte(tt.line))
			if cmd != tt.cmd {
				t.Errorf("cmd %q, want %q", cmd, tt.cmd)
			}
			var got []string
			for _, a := range args {
				got = append(got, string(a))
			}
			if !slices.Equal(got, tt.args) {
				t.Errorf("args %q, want %q", got, tt.args)
			}
		})
	}
}

func TestTelnetReplies(t *testing.T) {
	if got, want := UnknownCommand("foo"), "unknown command: foo.  Try `help'."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := HelpReply("stats", "dropcaches", "version", "exit", "help", "put"),
		"available commands: stats dropcaches version exit help put "; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLineParserRef(t *testing.T) {
	var p LineParser
	var dp DataPoint
	parse := func(line string) error {
		t.Helper()
		return p.Parse([]byte(line), &dp)
	}
	if err := parse("put m 1 1 a=1 b=2"); err != nil || p.Ref() != nil {
		t.Fatalf("first line: %v, ref %v", err, p.Ref())
	}
	p.SetRef("m{a=1,b=2}")
	if err := parse("put m 2 5.5 a=1 b=2\r\n"); err != nil || p.Ref() != "m{a=1,b=2}" {
		t.Fatalf("same series: %v, ref %v", err, p.Ref())
	}
	if err := parse("put m 2 NaN a=1 b=2"); err == nil || p.Ref() != nil {
		t.Fatalf("rejected line: %v, ref %v", err, p.Ref())
	}
	if err := parse("put m 3 1 b=2 a=1"); err != nil || p.Ref() != nil {
		t.Fatalf("the tags in another order are other bytes: %v, ref %v", err, p.Ref())
	}
	if err := parse("version"); err == nil || p.Ref() != nil {
		t.Fatalf("not a put: %v, ref %v", err, p.Ref())
	}
	if err := parse("put m 4 1 a=1 b=2"); err != nil || p.Ref() != "m{a=1,b=2}" {
		t.Fatalf("the series again: %v, ref %v", err, p.Ref())
	}
	if err := ParsePutLine([]byte("put m 4 1 a=1 b=2"), Limits{}, &dp); err != nil {
		t.Fatal(err)
	}
}

func TestLineParserSeriesBounded(t *testing.T) {
	var p LineParser
	var dp DataPoint
	for i := range 3 * seriesCacheMaxEntries {
		if err := p.Parse([]byte("put m 1 1 id="+strconv.Itoa(i)), &dp); err != nil {
			t.Fatal(err)
		}
		p.SetRef(i)
		if len(p.series.m) > seriesCacheMaxEntries || p.series.bytes > seriesCacheMaxBytes {
			t.Fatalf("after %d series: %d entries, %d bytes", i+1, len(p.series.m), p.series.bytes)
		}
	}
}

// TestLineParserCacheStats: the cache counts a line of a series it
// remembers as a hit, the first line of a series as a miss, and the times
// it forgot every series because it was full as resets; 5,000 series of
// the load generator's shape fit on one connection.
func TestLineParserCacheStats(t *testing.T) {
	var p LineParser
	var dp DataPoint
	parse := func(line string) {
		t.Helper()
		if err := p.Parse([]byte(line), &dp); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	const series = 5000
	line := func(i, step int) string {
		return fmt.Sprintf("put node.cpu.user %d 1.5 dc=eu-west-1-a host=host-%06d rack=eu-west-1-a-r07 region=eu-west-1 service=checkout", 1700000000+10*step, i)
	}
	for step := range 3 {
		for i := range series {
			parse(line(i, step))
		}
	}
	if got, want := p.CacheStats(), (CacheStats{Hits: 2 * series, Misses: series}); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	// Past the bound it forgets and starts again, and says so.
	for i := range 4 * series {
		parse(line(series+i, 0))
	}
	if st := p.CacheStats(); st.Resets == 0 || st.Misses != 5*series {
		t.Fatalf("stats %+v after %d more series: want resets and %d misses", st, 4*series, 5*series)
	}
}
