package opentsdb

import (
	"math"
	"strings"
	"time"
)

// ParseTime parses a query time as OpenTSDB's DateTime.parseDateTimeString
// does and returns Unix milliseconds:
//
//   - "now" (any case): now.
//   - "<n><unit>-ago": now minus ParseDuration("<n><unit>").
//   - "<digits>ms": that many milliseconds since the epoch.
//   - an integer: seconds when it has at most 10 characters, else
//     milliseconds; negative values are rejected.
//   - "<10 digits>.<1 to 3 digits>": the dot is removed, so
//     "1364410924.250" is 1364410924250 ms (and "1364410924.25" is
//     136441092425 ms: OpenTSDB's rule, always send three digits).
//   - "yyyy/MM/dd", "yyyy/MM/dd-HH:mm", "yyyy/MM/dd HH:mm",
//     "yyyy/MM/dd-HH:mm:ss", "yyyy/MM/dd HH:mm:ss" in loc (UTC if nil).
//     Unlike Java's lenient SimpleDateFormat, out-of-range fields
//     (2013/02/30) are rejected.
//
// Errors are *RequestError (400) with OpenTSDB's messages, e.g. "Invalid time: x. Invalid character
// 'x' in x", "Invalid absolute date: 2013/01", "Invalid date: 2013/13/01.
// Unparseable date: \"2013/13/01\"", "Zero or negative duration: 0h".
func ParseTime(s string, now time.Time, loc *time.Location) (int64, error) {
	if s == "" {
		return 0, badRequest("Invalid time: empty string")
	}
	if loc == nil {
		loc = time.UTC
	}
	if n := len(s); n > 2 && s[n-2:] == "ms" && allDigits(s[:n-2]) {
		v, msg := parseLong([]byte(s[:n-2]))
		if msg != "" {
			return 0, badRequest("Invalid time: " + s + ". " + msg)
		}
		return v, nil
	}
	if strings.EqualFold(s, "now") {
		return now.UnixMilli(), nil
	}
	if n := len(s); n >= 4 && strings.EqualFold(s[n-4:], "-ago") {
		d, err := ParseDuration(s[:n-4])
		if err != nil {
			return 0, err
		}
		return now.UnixMilli() - d, nil
	}
	if strings.ContainsAny(s, "/:") {
		var layout string
		switch len(s) {
		case 10:
			layout = "2006/01/02"
		case 16:
			layout = "2006/01/02 15:04"
			if strings.Contains(s, "-") {
				layout = "2006/01/02-15:04"
			}
		case 19:
			layout = "2006/01/02 15:04:05"
			if strings.Contains(s, "-") {
				layout = "2006/01/02-15:04:05"
			}
		default:
			return 0, badRequest("Invalid absolute date: " + s)
		}
		t, err := time.ParseInLocation(layout, s, loc)
		if err != nil {
			return 0, badRequest("Invalid date: " + s + ". Unparseable date: \"" + s + "\"")
		}
		return t.UnixMilli(), nil
	}
	text := s
	if strings.Contains(s, ".") {
		if !isDottedMillis(s) {
			return 0, badRequest("Invalid time: " + s + ". Millisecond timestamps must be in the format " +
				"<seconds>.<ms> where the milliseconds are limited to 3 digits")
		}
		text = strings.Replace(s, ".", "", 1)
	}
	v, msg := parseLong([]byte(text))
	if msg != "" {
		return 0, badRequest("Invalid time: " + s + ". " + msg)
	}
	if v < 0 {
		return 0, badRequest("Invalid time: " + s + ". Negative timestamps are not supported.")
	}
	if len(s) <= 10 {
		v *= 1000
	}
	return v, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isDottedMillis matches ^[0-9]{10}\.[0-9]{1,3}$.
func isDottedMillis(s string) bool {
	return len(s) >= 12 && len(s) <= 14 && s[10] == '.' && allDigits(s[:10]) && allDigits(s[11:])
}

// ParseDuration parses "<n><unit>", n a positive integer and unit one of ms,
// s, m, h, d (24h), w (7d), n (30d), y (365d), in any case, and returns
// milliseconds (OpenTSDB's DateTime.parseDuration, with a strict unit).
// Errors carry OpenTSDB's messages: "Zero or negative duration: 0s",
// "Invalid duration (suffix): 1x", "Invalid duration (number): h",
// "Invalid duration, must have an integer and unit: 10", "Cannot parse null
// or empty duration", "Duration must be < Long.MAX_VALUE ms: ...".
func ParseDuration(s string) (int64, error) {
	if s == "" {
		return 0, badRequest("Cannot parse null or empty duration")
	}
	unit := 0
	for unit < len(s) && s[unit] >= '0' && s[unit] <= '9' {
		unit++
	}
	if unit == len(s) {
		return 0, badRequest("Invalid duration, must have an integer and unit: " + s)
	}
	if unit == 0 || unit > 19 {
		return 0, badRequest("Invalid duration (number): " + s)
	}
	n, msg := parseLong([]byte(s[:unit]))
	if msg != "" {
		return 0, badRequest("Invalid duration (number): " + s)
	}
	if n <= 0 {
		return 0, badRequest("Zero or negative duration: " + s)
	}
	var mult int64
	switch strings.ToLower(s[unit:]) {
	case "ms":
		mult = 1
	case "s":
		mult = 1000
	case "m":
		mult = 60 * 1000
	case "h":
		mult = 3600 * 1000
	case "d":
		mult = 24 * 3600 * 1000
	case "w":
		mult = 7 * 24 * 3600 * 1000
	case "n":
		mult = 30 * 24 * 3600 * 1000
	case "y":
		mult = 365 * 24 * 3600 * 1000
	default:
		return 0, badRequest("Invalid duration (suffix): " + s)
	}
	if n > math.MaxInt64/mult {
		return 0, badRequest("Duration must be < Long.MAX_VALUE ms: " + s)
	}
	return n * mult, nil
}
