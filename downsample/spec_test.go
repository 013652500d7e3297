package downsample

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	const (
		sec  = int64(1000)
		min  = 60 * sec
		hour = 60 * min
		day  = 24 * hour
	)
	tests := []struct {
		in   string
		want Spec // Agg is compared by name through agg
		agg  string
	}{
		{"1m-avg", Spec{Interval: min, Unit: "m", N: 1}, "avg"},
		{"10s-sum-zero", Spec{Interval: 10 * sec, Unit: "s", N: 10, Fill: FillZero}, "sum"},
		{"500ms-avg", Spec{Interval: 500, Unit: "ms", N: 500}, "avg"},
		{"1h-sum-nan", Spec{Interval: hour, Unit: "h", N: 1, Fill: FillNaN}, "sum"},
		{"1h-max-null", Spec{Interval: hour, Unit: "h", N: 1, Fill: FillNull}, "max"},
		{"1h-max-none", Spec{Interval: hour, Unit: "h", N: 1}, "max"},
		{"1d-count", Spec{Interval: day, Unit: "d", N: 1}, "count"},
		{"2w-p95", Spec{Interval: 14 * day, Unit: "w", N: 2}, "p95"},
		{"1n-avg", Spec{Interval: 30 * day, Unit: "n", N: 1}, "avg"},
		{"1y-sum", Spec{Interval: 365 * day, Unit: "y", N: 1}, "sum"},
		{"1dc-sum", Spec{Interval: day, Unit: "d", N: 1, Calendar: true}, "sum"},
		{"1nc-squareSum", Spec{Interval: 30 * day, Unit: "n", N: 1, Calendar: true}, "squareSum"},
		{"250msc-min", Spec{Interval: 250, Unit: "ms", N: 250, Calendar: true}, "min"},
		{"0all-max", Spec{All: true}, "max"},
		{"1all-sum", Spec{All: true}, "sum"},
		{"0allc-sum-zero", Spec{All: true, Fill: FillZero}, "sum"}, // "all" wins over "c"
		{"1H-avg", Spec{Interval: hour, Unit: "h", N: 1}, "avg"},   // units are case-insensitive
		{"1MS-avg", Spec{Interval: 1, Unit: "ms", N: 1}, "avg"},
		{"01m-avg", Spec{Interval: min, Unit: "m", N: 1}, "avg"},
		{"1m-avg-NaN", Spec{Interval: min, Unit: "m", N: 1, Fill: FillNaN}, "avg"}, // so are fills
		{"1m-avg-", Spec{Interval: min, Unit: "m", N: 1}, "avg"},                   // Java's split drops trailing empties
		{"1m-ep999r7", Spec{Interval: min, Unit: "m", N: 1}, "ep999r7"},
		{"153722867280912m-avg", Spec{Interval: 153722867280912 * min, Unit: "m", N: 153722867280912}, "avg"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSpec(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Agg = mustLookup(t, tt.agg)
			if got != tt.want {
				t.Fatalf("ParseSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := ParseSpec(got.String())
			if err != nil || again != got {
				t.Fatalf("ParseSpec(%q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
}

func TestSpecString(t *testing.T) {
	for in, want := range map[string]string{
		"1m-avg":         "1m-avg",
		"1dc-sum-nan":    "1dc-sum-nan",
		"0all-max":       "0all-max",
		"all-max-null":   "0all-max-null",
		"1H-avg-none":    "1h-avg",
		"15m-p99-ZERO":   "15m-p99-zero",
		"007s-squareSum": "7s-squareSum",
	} {
		s, err := ParseSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != want {
			t.Errorf("ParseSpec(%q).String() = %q, want %q", in, s.String(), want)
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		in, want string // want: a substring of the message
	}{
		{"", "must provide at least interval and function"},
		{"1m", "must provide at least interval and function"},
		{"1m-", "must provide at least interval and function"},
		{"1m-avg-zero-x", "must consist of interval, function, and optional fill policy"},
		{"-avg", "missing interval"},
		{"-1m-avg", "missing interval"},
		{"m-avg", `interval "m" must start with a number`},
		{" 1m-avg", `interval " 1m" must start with a number`},
		{"1-avg", `interval "1" has no unit`},
		{"1c-avg", `interval "1c" has no unit`},
		{"1x-avg", `interval "1x" has unknown unit "x"`},
		{"1xh-avg", `has unknown unit "xh"`},
		{"1.5h-avg", `has unknown unit ".5h"`},
		{"0m-avg", `interval "0m" must be greater than zero`},
		{"0ms-avg", "must be greater than zero"},
		{"99999999999999999999m-avg", "is too long"},
		{"153722867280913m-avg", "is too long"},
		{"3000000000dc-sum", "calendar interval \"3000000000dc\" is too long"},
		{"1m-foo", "no such downsampling function: foo"},
		{"1m--avg", "no such downsampling function: "},
		{"1m-SUM", "no such downsampling function: SUM"},
		{"1m-none", "cannot use the NONE aggregator for downsampling"},
		{"1m-avg-scalar", `fill policy "scalar" is only supported by /api/query/exp`},
		{"1m-avg-bogus", `no such fill policy "bogus": must be one of none, nan, null, zero`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := ParseSpec(tt.in)
			if err == nil {
				t.Fatalf("ParseSpec(%q) = %+v, want an error", tt.in, s)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("error %v does not wrap ErrInvalidSpec", err)
			}
			var se *SpecError
			if !errors.As(err, &se) || se.Spec != tt.in {
				t.Errorf("error %v is not a *SpecError for %q", err, tt.in)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "invalid downsample spec ") {
				t.Errorf("error %q does not say what it is about", err)
			}
		})
	}
	_, err := ParseSpec("1m-foo")
	if !errors.Is(err, ErrUnknownAggregator) {
		t.Errorf("unknown downsampling function: %v does not wrap ErrUnknownAggregator", err)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"1m-avg", "10s-sum-zero", "1dc-sum-nan", "0all-max", "1h-p95-null",
		"500msc-count", "1nc-first", "2wc-squareSum", "1y-ep999r3-none",
		"", "-", "--", "1m-", "1m-avg-", "1m--avg", "c-avg", "0c-avg",
		"1xc-avg", "9223372036854775807ms-sum", "9223372036854775808ms-sum",
		"allall-sum", "1m-none", "1m-avg-scalar", "1\u0660m-avg", "1m-avg-NULL",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("ParseSpec(%q) error %v does not wrap ErrInvalidSpec", in, err)
			}
			return
		}
		if s.Agg == nil || s.Agg.IsNone() {
			t.Fatalf("ParseSpec(%q) gave aggregator %v", in, s.Agg)
		}
		if s.All {
			if s.Interval != 0 || s.N != 0 || s.Unit != "" || s.Calendar {
				t.Fatalf("ParseSpec(%q) = %+v: an all spec with an interval", in, s)
			}
		} else if ms, ok := unitMillis[s.Unit]; !ok || s.N <= 0 || s.Interval != s.N*ms || s.Interval/ms != s.N {
			t.Fatalf("ParseSpec(%q) = %+v: inconsistent interval", in, s)
		}
		again, err := ParseSpec(s.String())
		if err != nil {
			t.Fatalf("ParseSpec(%q) = %+v, but its String %q does not parse: %v", in, s, s.String(), err)
		}
		if again != s {
			t.Fatalf("round trip of %q through %q: %+v != %+v", in, s.String(), again, s)
		}
	})
}
