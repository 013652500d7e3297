package migrate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Slice is the half-open time range [Start, End) in Unix milliseconds.
type Slice struct {
	Start, End int64
}

// String formats the slice as two RFC 3339 times in UTC.
func (s Slice) String() string {
	return fmt.Sprintf("[%s, %s)", fmtMs(s.Start), fmtMs(s.End))
}

func fmtMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// Slices cuts [start, end) into consecutive slices of step milliseconds,
// the last one shorter when step does not divide the range. It returns
// nothing when end <= start or step <= 0.
func Slices(start, end, step int64) []Slice {
	if end <= start || step <= 0 {
		return nil
	}
	n := (end - start + step - 1) / step
	out := make([]Slice, 0, n)
	for s := start; s < end; s += step {
		e := s + step
		if e > end || e < s { // e < s: overflow
			e = end
		}
		out = append(out, Slice{Start: s, End: e})
	}
	return out
}

// ParseTime reads a time given on the command line, as Unix milliseconds:
// RFC 3339 ("2026-01-02T15:04:05Z"), a date ("2026-01-02", UTC), Unix
// seconds (up to 10 digits) or milliseconds (13 digits), "now", or a
// duration before now ("30d-ago", "-12h"; units ms, s, m, h, d, w, y).
func ParseTime(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return 0, fmt.Errorf("empty time")
	case s == "now":
		return now.UnixMilli(), nil
	case strings.HasSuffix(s, "-ago") || strings.HasPrefix(s, "-"):
		d, err := ParseDuration(strings.TrimPrefix(strings.TrimSuffix(s, "-ago"), "-"))
		if err != nil {
			return 0, fmt.Errorf("time %q: %w", s, err)
		}
		return now.Add(-d).UnixMilli(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		switch {
		case n < 0:
			return 0, fmt.Errorf("time %q is negative", s)
		case len(s) <= 10:
			return n * 1000, nil
		case len(s) == 13:
			return n, nil
		}
		return 0, fmt.Errorf("time %q: a number must be Unix seconds (up to 10 digits) or milliseconds (13 digits)", s)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("time %q is not RFC 3339, a date, Unix seconds or milliseconds, now or a duration ago (30d-ago)", s)
}

// ParseDuration reads a positive duration: Go's syntax ("90m", "1h30m") or a
// whole number of days, weeks or 365-day years ("1d", "2w", "1y").
func ParseDuration(s string) (time.Duration, error) {
	units := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}
	if len(s) > 1 {
		if u, ok := units[s[len(s)-1]]; ok {
			n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
			if err != nil || n <= 0 || n > int64(1<<62)/int64(u) {
				return 0, fmt.Errorf("duration %q: want a positive whole number before %q", s, s[len(s)-1:])
			}
			return time.Duration(n) * u, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want e.g. 1h, 30m, 1d, 2w", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q is not positive", s)
	}
	return d, nil
}
