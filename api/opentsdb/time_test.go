package opentsdb

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2024, 3, 10, 12, 0, 0, 500e6, time.UTC)
	nowMs := now.UnixMilli()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	tests := []struct {
		name string
		s    string
		loc  *time.Location
		want int64
	}{
		{"now", "now", nil, nowMs},
		{"NOW", "NOW", nil, nowMs},
		{"1h-ago", "1h-ago", nil, nowMs - 3600e3},
		{"500ms-ago", "500ms-ago", nil, nowMs - 500},
		{"30s-ago", "30s-ago", nil, nowMs - 30e3},
		{"5m-ago", "5m-ago", nil, nowMs - 300e3},
		{"1d-ago", "1d-ago", nil, nowMs - 86400e3},
		{"2w-ago", "2w-ago", nil, nowMs - 14*86400e3},
		{"1n-ago", "1n-ago", nil, nowMs - 30*86400e3},
		{"1y-ago", "1y-ago", nil, nowMs - 365*86400e3},
		{"upper case", "1H-AGO", nil, nowMs - 3600e3},
		{"seconds", "1364410924", nil, 1364410924000},
		{"short seconds", "0", nil, 0},
		{"milliseconds", "1364410924250", nil, 1364410924250},
		{"dotted", "1364410924.250", nil, 1364410924250},
		{"dotted one digit, as OpenTSDB", "1364410924.2", nil, 13644109242},
		{"ms suffix", "1364410924250ms", nil, 1364410924250},
		{"ms suffix small", "5ms", nil, 5},
		{"date", "2013/01/23", nil, time.Date(2013, 1, 23, 0, 0, 0, 0, time.UTC).UnixMilli()},
		{"date-time", "2013/01/23-12:50", nil, time.Date(2013, 1, 23, 12, 50, 0, 0, time.UTC).UnixMilli()},
		{"date time", "2013/01/23 12:50", nil, time.Date(2013, 1, 23, 12, 50, 0, 0, time.UTC).UnixMilli()},
		{"date-time-seconds", "2013/01/23-12:50:42", nil, time.Date(2013, 1, 23, 12, 50, 42, 0, time.UTC).UnixMilli()},
		{"date time seconds", "2013/01/23 12:50:42", nil, time.Date(2013, 1, 23, 12, 50, 42, 0, time.UTC).UnixMilli()},
		{"in a zone", "2013/01/23 12:50:42", ny, time.Date(2013, 1, 23, 12, 50, 42, 0, ny).UnixMilli()},
		{"across DST", "2024/03/10-03:30", ny, time.Date(2024, 3, 10, 3, 30, 0, 0, ny).UnixMilli()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTime(tt.s, now, tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseTimeErrors(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tests := []struct{ s, want string }{
		{"", "Invalid time: empty string"},
		{"abc", "Invalid time: abc. Invalid character 'a' in abc"},
		{"-5", "Invalid time: -5. Negative timestamps are not supported."},
		{"1364410924.2500", "Invalid time: 1364410924.2500. Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits"},
		{"136441092.250", "Invalid time: 136441092.250. Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits"},
		{"99999999999999999999", "Invalid time: 99999999999999999999. Value too long: 99999999999999999999"},
		{"99999999999999999999ms", "Invalid time: 99999999999999999999ms. Value too long: 99999999999999999999"},
		{"0h-ago", "Zero or negative duration: 0h"},
		{"1x-ago", "Invalid duration (suffix): 1x"},
		{"-ago", "Cannot parse null or empty duration"},
		{"h-ago", "Invalid duration (number): h"},
		{"2013/01", "Invalid absolute date: 2013/01"},
		{"12:00", "Invalid absolute date: 12:00"},
		{"2013/13/01", `Invalid date: 2013/13/01. Unparseable date: "2013/13/01"`},
		{"2013/02/30", `Invalid date: 2013/02/30. Unparseable date: "2013/02/30"`},
		{"2013/01/01T12:00", `Invalid date: 2013/01/01T12:00. Unparseable date: "2013/01/01T12:00"`},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			_, err := ParseTime(tt.s, now, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("got  %q\nwant %q", err, tt.want)
			}
			if _, ok := err.(*RequestError); !ok {
				t.Errorf("error is %T, want *RequestError", err)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		s    string
		want int64
		err  string
	}{
		{"1ms", 1, ""},
		{"500ms", 500, ""},
		{"1s", 1000, ""},
		{"1m", 60000, ""},
		{"1h", 3600000, ""},
		{"1d", 86400000, ""},
		{"1w", 604800000, ""},
		{"1n", 2592000000, ""},
		{"1y", 31536000000, ""},
		{"2H", 7200000, ""},
		{"1MS", 1, ""},
		{"", 0, "Cannot parse null or empty duration"},
		{"10", 0, "Invalid duration, must have an integer and unit: 10"},
		{"h", 0, "Invalid duration (number): h"},
		{"-1h", 0, "Invalid duration (number): -1h"},
		{"0s", 0, "Zero or negative duration: 0s"},
		{"1x", 0, "Invalid duration (suffix): 1x"},
		{"1hh", 0, "Invalid duration (suffix): 1hh"},
		{"1dc", 0, "Invalid duration (suffix): 1dc"},
		{"99999999999999999999s", 0, "Invalid duration (number): 99999999999999999999s"},
		{"9223372036854775807s", 0, "Duration must be < Long.MAX_VALUE ms: 9223372036854775807s"},
		{"9223372036854775807ms", 9223372036854775807, ""},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			got, err := ParseDuration(tt.s)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
