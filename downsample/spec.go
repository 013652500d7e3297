package downsample

import (
	"math"
	"strconv"
	"strings"
)

// FillPolicy says what a downsampler emits for a bucket that holds no point.
type FillPolicy uint8

const (
	// FillNone emits nothing; aggregation across series interpolates over
	// the gap later. It is the default.
	FillNone FillPolicy = iota
	// FillNaN emits NaN, which aggregators skip; serialized as "NaN".
	FillNaN
	// FillNull emits NaN as well; the serializer prints it as JSON null.
	FillNull
	// FillZero emits 0.
	FillZero
)

// String returns the policy's name as written in a spec.
func (f FillPolicy) String() string {
	switch f {
	case FillNone:
		return "none"
	case FillNaN:
		return "nan"
	case FillNull:
		return "null"
	case FillZero:
		return "zero"
	}
	return "FillPolicy(" + strconv.Itoa(int(f)) + ")"
}

// ParseFillPolicy parses a fill policy name, case-insensitively as OpenTSDB
// does: none, nan, null or zero. ("scalar" exists only in /api/query/exp.)
func ParseFillPolicy(s string) (FillPolicy, bool) {
	switch strings.ToLower(s) {
	case "none":
		return FillNone, true
	case "nan":
		return FillNaN, true
	case "null":
		return FillNull, true
	case "zero":
		return FillZero, true
	}
	return FillNone, false
}

// unitMillis is the length of each duration unit in ms, as OpenTSDB's
// DateTime.parseDuration defines them (n = 30 days, y = 365 days).
var unitMillis = map[string]int64{
	"ms": 1,
	"s":  1000,
	"m":  60 * 1000,
	"h":  3600 * 1000,
	"d":  24 * 3600 * 1000,
	"w":  7 * 24 * 3600 * 1000,
	"n":  30 * 24 * 3600 * 1000,
	"y":  365 * 24 * 3600 * 1000,
}

// Spec is a parsed downsample spec, `<n><unit>[c]-<agg>[-<fill>]` or
// `0all-<agg>`.
type Spec struct {
	// Interval is the bucket width in ms: N × the unit's nominal length
	// (a month is 30 days, a year 365). 0 when All is set. In calendar mode
	// the real buckets follow the calendar; Interval is only nominal.
	Interval int64
	// Unit is the lower-case unit: ms, s, m, h, d, w, n or y; "" when All.
	Unit string
	// N is the number of units per bucket; 0 when All.
	N int64
	// All puts the whole query range into one bucket, stamped with the
	// query start.
	All bool
	// Calendar aligns buckets to the calendar in the query's time zone
	// instead of to the Unix epoch: the `c` suffix, or the JSON useCalendar
	// flag (the caller sets this field). Ignored when All is set.
	Calendar bool
	// Agg is the downsampling function; never nil or "none" in a parsed
	// spec.
	Agg *Aggregator
	// Fill is what empty buckets become.
	Fill FillPolicy
}

// String formats s as a spec that ParseSpec parses back to s:
// "1h-avg", "1dc-sum-nan", "0all-max". The fill policy is left out when it
// is none.
func (s Spec) String() string {
	var b strings.Builder
	if s.All {
		b.WriteString("0all")
	} else {
		b.WriteString(strconv.FormatInt(s.N, 10))
		b.WriteString(s.Unit)
		if s.Calendar {
			b.WriteByte('c')
		}
	}
	b.WriteByte('-')
	if s.Agg != nil {
		b.WriteString(s.Agg.name)
	}
	if s.Fill != FillNone {
		b.WriteByte('-')
		b.WriteString(s.Fill.String())
	}
	return b.String()
}

// ParseSpec parses a downsample spec as OpenTSDB 2.4's
// DownsamplingSpecification does:
//
//	<n><unit>[c]-<aggregator>[-<fill policy>]
//	0all-<aggregator>[-<fill policy>]
//
// Units are ms, s, m, h, d, w, n (30 days) and y (365 days), matched
// case-insensitively; a trailing c asks for calendar alignment. Any interval
// token that contains "all" means one bucket for the whole query. The
// aggregator is any name Lookup knows except "none"; the fill policy is
// none (the default), nan, null or zero, case-insensitively. Like Java's
// String.split, trailing empty parts are ignored ("1m-avg-" is "1m-avg").
//
// Errors are *SpecError values wrapping ErrInvalidSpec.
func ParseSpec(s string) (Spec, error) {
	fail := func(reason string, err error) (Spec, error) {
		return Spec{}, &SpecError{Spec: s, Reason: reason, Err: err}
	}
	parts := strings.Split(s, "-")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	switch {
	case len(parts) < 2:
		return fail("must provide at least interval and function", nil)
	case len(parts) > 3:
		return fail("must consist of interval, function, and optional fill policy", nil)
	}

	var spec Spec
	iv := parts[0]
	switch {
	case iv == "":
		return fail("missing interval", nil)
	case strings.Contains(iv, "all"):
		spec.All = true
	default:
		if strings.HasSuffix(iv, "c") {
			spec.Calendar = true
			iv = iv[:len(iv)-1]
		}
		digits := 0
		for digits < len(iv) && iv[digits] >= '0' && iv[digits] <= '9' {
			digits++
		}
		if digits == 0 {
			return fail("interval "+strconv.Quote(parts[0])+" must start with a number", nil)
		}
		unit := strings.ToLower(iv[digits:])
		if unit == "" {
			return fail("interval "+strconv.Quote(parts[0])+" has no unit (want one of ms, s, m, h, d, w, n, y)", nil)
		}
		ms, ok := unitMillis[unit]
		if !ok {
			return fail("interval "+strconv.Quote(parts[0])+" has unknown unit "+strconv.Quote(iv[digits:])+" (want one of ms, s, m, h, d, w, n, y)", nil)
		}
		n, err := strconv.ParseInt(iv[:digits], 10, 64)
		if err != nil || n > math.MaxInt64/ms {
			return fail("interval "+strconv.Quote(parts[0])+" is too long (must be < 2^63 ms)", nil)
		}
		if n == 0 {
			return fail("interval "+strconv.Quote(parts[0])+" must be greater than zero", nil)
		}
		if spec.Calendar && n > math.MaxInt32 {
			return fail("calendar interval "+strconv.Quote(parts[0])+" is too long (at most 2147483647 units)", nil)
		}
		spec.N, spec.Unit, spec.Interval = n, unit, n*ms
	}

	agg, err := Lookup(parts[1])
	if err != nil {
		return fail("no such downsampling function: "+parts[1], err)
	}
	if agg.kind == kNone {
		return fail("cannot use the NONE aggregator for downsampling", nil)
	}
	spec.Agg = agg

	if len(parts) == 3 {
		f, ok := ParseFillPolicy(parts[2])
		switch {
		case ok:
			spec.Fill = f
		case strings.EqualFold(parts[2], "scalar"):
			return fail("fill policy \"scalar\" is only supported by /api/query/exp", nil)
		default:
			return fail("no such fill policy "+strconv.Quote(parts[2])+": must be one of none, nan, null, zero", nil)
		}
	}
	return spec, nil
}
