package opentsdb

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"hourglass/chunk"
	"hourglass/internal/quote"
	"hourglass/model"
)

// Tag is one tag pair of a series.
type Tag struct {
	Key, Value string
}

// DataPoint is one point as a client sent it, decoded.
type DataPoint struct {
	Metric string
	// Timestamp is Unix milliseconds. The wire's seconds-or-milliseconds
	// rule has already been applied (see ParsePut).
	Timestamp int64
	Value     chunk.Value
	// Tags in the order sent. Decoders collapse a pair repeated with the same
	// value; a key repeated with another value is left for Validate to reject.
	Tags []Tag
}

// Limits are the configurable limits of a data point.
type Limits struct {
	// MaxTags is the most tags a point may carry; 0 means DefaultMaxTags.
	// OpenTSDB's tsd.storage.max_tags defaults to 8, too few for Prometheus.
	MaxTags int
	// MaxNameLen is the longest metric name, tag key or tag value, in bytes;
	// 0 means DefaultMaxNameLen. OpenTSDB has no such limit.
	MaxNameLen int
}

// The defaults of Limits.
const (
	DefaultMaxTags    = 32
	DefaultMaxNameLen = 256
)

func (l Limits) maxTags() int {
	if l.MaxTags <= 0 {
		return DefaultMaxTags
	}
	return l.MaxTags
}

func (l Limits) maxNameLen() int {
	if l.MaxNameLen <= 0 {
		return DefaultMaxNameLen
	}
	return l.MaxNameLen
}

// Largest timestamps: a value above maxSecondsTimestamp is taken as
// milliseconds (OpenTSDB's Const.SECOND_MASK test), and milliseconds may have
// at most 13 digits.
const (
	maxSecondsTimestamp = 1<<32 - 1
	maxMillisTimestamp  = 9999999999999
)

// TimestampMillis applies OpenTSDB's write-side rule to a timestamp as sent:
// above 2^32-1 it is milliseconds, otherwise seconds. Values at or below 0 are
// returned unchanged (they are invalid, and Validate says so).
func TimestampMillis(ts int64) int64 {
	if ts > 0 && ts <= maxSecondsTimestamp {
		return ts * 1000
	}
	return ts
}

// Validate checks p in OpenTSDB's order (IncomingDataPoint.validate, then
// TSDB.addPoint) and returns a *PointError with OpenTSDB's message for the
// first problem:
//
//	Metric name was empty
//	Invalid timestamp                           (timestamp <= 0)
//	Missing tags
//	value is NaN or Infinite: NaN for metric=m timestamp=t
//	bad timestamp=t when trying to add value=v to metric=m, tags={...}
//	Too many tags: n maximum allowed: max, tags: {...}
//	duplicate tag: k=v2, tags={k=v1, ...}         (hourglass: JSON points too)
//	Invalid metric name ("m"): illegal character: !
//	Invalid tag name with value [v] ("k"): illegal character: !
//	Invalid tag value with key [k] ("v"): illegal character: !
//
// plus the length limit, which OpenTSDB does not have:
//
//	Invalid metric name ("m..."): too long: 300 bytes, maximum allowed: 256
func (p *DataPoint) Validate(l Limits) error {
	if p.Metric == "" {
		return &PointError{Message: "Metric name was empty"}
	}
	if p.Timestamp <= 0 {
		return &PointError{Message: "Invalid timestamp"}
	}
	if len(p.Tags) == 0 {
		return &PointError{Message: "Missing tags"}
	}
	return p.validateRest(l, false)
}

// validateRest is Validate after its first three checks, which each dialect
// words its own way. namesValid says the caller already knows every name is
// valid under l.
func (p *DataPoint) validateRest(l Limits, namesValid bool) error {
	if err := p.validateValue(); err != nil {
		return err
	}
	return p.validateSeries(l, namesValid)
}

// validateValue is the part of validateRest that depends on the value and
// the timestamp: what a point of a series known to be valid may still get wrong.
func (p *DataPoint) validateValue() error {
	if !p.Value.IsInt() {
		f := p.Value.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return &PointError{Message: "value is NaN or Infinite: " + javaDouble(f) +
				" for metric=" + shorten(p.Metric) + " timestamp=" + strconv.FormatInt(p.Timestamp, 10)}
		}
	}
	if p.Timestamp > maxMillisTimestamp {
		return &PointError{Message: "bad timestamp=" + strconv.FormatInt(p.Timestamp, 10) +
			" when trying to add value=" + p.Value.String() + " to metric=" + shorten(p.Metric) +
			", tags=" + formatTags(p.Tags)}
	}
	return nil
}

// validateSeries is the part of validateRest that depends on the metric and
// the tags alone.
func (p *DataPoint) validateSeries(l Limits, namesValid bool) error {
	if max := l.maxTags(); len(p.Tags) > max {
		return &PointError{Message: "Too many tags: " + strconv.Itoa(len(p.Tags)) +
			" maximum allowed: " + strconv.Itoa(max) + ", tags: " + formatTags(p.Tags)}
	}
	for i := 1; i < len(p.Tags); i++ {
		for j := 0; j < i; j++ {
			if p.Tags[i].Key == p.Tags[j].Key {
				return &PointError{Message: "duplicate tag: " + shorten(p.Tags[i].Key) + "=" + shorten(p.Tags[i].Value) +
					", tags=" + formatTags(p.Tags[:i])}
			}
		}
	}
	if namesValid {
		return nil
	}
	maxLen := l.maxNameLen()
	if msg := checkName(p.Metric, maxLen); msg != "" {
		return &PointError{Message: nameError("metric name", p.Metric, msg)}
	}
	for _, t := range p.Tags {
		if msg := checkName(t.Key, maxLen); msg != "" {
			return &PointError{Message: nameError("tag name with value ["+shorten(t.Value)+"]", t.Key, msg)}
		}
		if msg := checkName(t.Value, maxLen); msg != "" {
			return &PointError{Message: nameError("tag value with key ["+shorten(t.Key)+"]", t.Value, msg)}
		}
	}
	return nil
}

// ValidateName checks a metric name, tag key or tag value against the
// character set (letters, digits, -_./: and Unicode letters) and maxLen (0
// means DefaultMaxNameLen). what names the kind in the message, as OpenTSDB's
// Tags.validateString does: ValidateName("metric", "a!", 0) returns
// `Invalid metric ("a!"): illegal character: !`; an empty name gives
// "Invalid metric: empty string".
func ValidateName(what, name string, maxLen int) error {
	if maxLen <= 0 {
		maxLen = DefaultMaxNameLen
	}
	if msg := checkName(name, maxLen); msg != "" {
		return &PointError{Message: nameError(what, name, msg)}
	}
	return nil
}

// checkName returns "" if s is a valid name, else the tail of the message:
// "empty string", "illegal character: c" or "too long: ...".
func checkName(s string, maxLen int) string {
	if s == "" {
		return "empty string"
	}
	if msg := model.CheckOpenTSDBChars(s); msg != "" {
		return msg
	}
	if len(s) > maxLen {
		return "too long: " + strconv.Itoa(len(s)) + " bytes, maximum allowed: " + strconv.Itoa(maxLen)
	}
	return ""
}

// validName reports whether s is a valid name; it is checkName's fast path.
func validName(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !model.OpenTSDBNameByte(s[i]) {
			return checkName(s, maxLen) == ""
		}
	}
	return true
}

func nameError(what, name, msg string) string {
	if msg == "empty string" {
		return "Invalid " + what + ": empty string"
	}
	return "Invalid " + what + " (\"" + shorten(name) + "\"): " + msg
}

// shorten keeps error messages bounded when a client sends a huge name.
func shorten(s string) string { return quote.String(s) }

// formatTags formats tags as Java's HashMap.toString does: {k=v, k2=v2}; past
// quote.Max bytes the rest is summed up as "… (N tags)".
func formatTags(tags []Tag) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, t := range tags {
		if b.Len() > quote.Max {
			b.WriteString(", … (" + strconv.Itoa(len(tags)) + " tags)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(shorten(t.Key))
		b.WriteByte('=')
		b.WriteString(shorten(t.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// javaDouble formats the non-finite doubles as Java's Double.toString does.
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// looksLikeInteger is OpenTSDB's Tags.looksLikeInteger: no '.', 'e' or 'E'.
func looksLikeInteger(b []byte) bool {
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// parseLong is OpenTSDB's Tags.parseLong: an optional sign and at most 19
// digits, exact, no overflow. On failure it returns Java's
// NumberFormatException message.
func parseLong(s []byte) (int64, string) {
	n := len(s)
	if n == 0 {
		return 0, "Empty string"
	}
	i := 0
	neg := false
	if s[0] == '+' || s[0] == '-' {
		if n == 1 {
			return 0, "Just a sign, no value: " + string(s)
		}
		if n > 20 {
			return 0, "Value too long: " + string(s)
		}
		neg = s[0] == '-'
		i = 1
	} else if n > 19 {
		return 0, "Value too long: " + string(s)
	}
	var v uint64
	for ; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			r, _ := utf8.DecodeRune(s[i:])
			return 0, "Invalid character '" + string(r) + "' in " + string(s)
		}
		v = v*10 + uint64(c-'0') // at most 19 digits: cannot wrap
	}
	if neg {
		if v > 1<<63 {
			return 0, "Overflow in " + string(s)
		}
		return -int64(v), ""
	}
	if v > math.MaxInt64 {
		return 0, "Overflow in " + string(s)
	}
	return int64(v), ""
}

// isDecimalFloat reports whether s is a decimal floating-point literal:
// [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?. It is the part of
// Java's Double.parseDouble grammar that clients use; hex floats, "NaN",
// "Infinity" and type suffixes are not accepted.
func isDecimalFloat(s []byte) bool {
	i, n := 0, len(s)
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < n && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < n && s[i] == '.' {
		i++
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == n
}

// parseValue parses a point's value as OpenTSDB does: text without '.', 'e'
// or 'E' is an int64 (Tags.parseLong), anything else a float64, parsed
// exactly. A float beyond the float64 range becomes ±Inf (Java's behaviour),
// which Validate then rejects. On failure it returns Java's
// NumberFormatException message.
func parseValue(s []byte) (chunk.Value, string) {
	if v, ok := shortNumber(s); ok {
		return v, ""
	}
	return parseValueLong(s)
}

// parseValueLong is parseValue without its shortNumber shortcut: every
// form OpenTSDB accepts (FuzzParseValue holds the two to the same answers).
func parseValueLong(s []byte) (chunk.Value, string) {
	if looksLikeInteger(s) {
		i, msg := parseLong(s)
		if msg != "" {
			return chunk.Value{}, msg
		}
		return chunk.Int(i), ""
	}
	if !isDecimalFloat(s) {
		return chunk.Value{}, "For input string: \"" + string(s) + "\""
	}
	f, err := strconv.ParseFloat(unsafeString(s), 64)
	if err != nil && !isRangeErr(err) {
		return chunk.Value{}, "For input string: \"" + string(s) + "\""
	}
	return chunk.Float(f), ""
}

// exactPow10 holds the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// shortNumber reads s in the shapes most values are sent in, an optional
// sign and digits with at most one dot: an integer of up to 18 digits, as
// parseLong does, or a float of up to 15 digits ("42.5", "-0.07", "3."), as
// strconv.ParseFloat does: the digits are an integer a float64 holds
// exactly, and so is the power of ten it is divided by, so the one division
// is correctly rounded. ok is false for any other text, which parseValue
// reads the long way.
func shortNumber(s []byte) (v chunk.Value, ok bool) {
	i, neg := 0, false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, i = s[0] == '-', 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return chunk.Value{}, false
		}
	}
	switch {
	case digits == 0:
		return chunk.Value{}, false
	case !dot:
		if digits > 18 { // m < 10^18: no overflow, whatever the sign
			return chunk.Value{}, false
		}
		if neg {
			return chunk.Int(-int64(m)), true
		}
		return chunk.Int(int64(m)), true
	case digits > 15:
		return chunk.Value{}, false
	}
	f := float64(m) / exactPow10[frac]
	if neg {
		f = -f
	}
	return chunk.Float(f), true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
