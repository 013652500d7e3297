package opentsdb

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// HasFlag reports whether a "presence" query-string flag was sent: its
// presence means true, whatever its value (OpenTSDB: ?summary=false is still
// true).
func HasFlag(q url.Values, name string) bool {
	_, ok := q[name]
	return ok
}

// lastValue returns the last value of a parameter, as OpenTSDB's
// getQueryStringParam does.
func lastValue(q url.Values, name string) (string, bool) {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return "", ok
	}
	return vs[len(vs)-1], true
}

// requiredValue is OpenTSDB's getRequiredQueryStringParam.
func requiredValue(q url.Values, name string) (string, error) {
	v, _ := lastValue(q, name)
	if v == "" {
		return "", MissingParameter(name)
	}
	return v, nil
}

// ParseQueryURI parses the query string of GET /api/query, as OpenTSDB's
// QueryRpc.parseQuery does: start (required), end, the presence flags
// padding, no_annotations, global_annotations, show_tsuids, ms, show_query,
// show_stats, show_summary and arrays, timezone (which OpenTSDB 2.4.1 does
// not read), then tsuid= and m= sub-queries, each repeatable (the tsuid ones
// first). Duplicate sub-queries are dropped.
//
// m is "<agg>:[<modifier>:]...<metric>[{<group-by filters>}][{<filters>}]"
// with at most three modifiers, in any order:
//
//	rate, rate{counter[,max[,reset]]}, rate{dropcounter[,max[,reset]]}
//	a downsample spec (it starts with a digit: 1h-avg, 0all-sum, 1dc-sum)
//	percentiles[99.9,95]
//	explicit_tags
//	pre-agg
//	rollup_raw, rollup_nofallback, rollup_fallback, rollup_fallback_raw (any
//	case; any other part starting rollup_ is ROLLUP_NOFALLBACK, as in
//	OpenTSDB)
//	show-histogram-buckets
//
// e.g. m=sum:rate{counter,,1000}:if.octets.in{host=*}{dc=literal_or(lga|sjc)}.
// Filters in the first braces go through ParseTagFilter with GroupBy set; in
// the second, without. Items are separated by commas, so filter values
// cannot hold one.
//
// hourglass allows ':' in metric names (Prometheus' recording rules), so
// the metric starts at the first part after the aggregator that is not a
// modifier, and runs to the end: m=sum:rate:job:rps{a=b} is metric
// "job:rps". A part OpenTSDB would ignore as an unknown modifier therefore
// becomes part of the metric name.
//
// Errors are *RequestError with OpenTSDB's messages: "Missing parameter
// <code>start</code>", "Missing sub queries", "The query string was empty",
// "Invalid parameter m=x (not enough :-separated parts)", "Invalid parameter
// m=x (too many :-separated parts)", "Invalid rate options specification:
// x", "Max value of counter was not a number, received 'x'", "When parsing
// tag 'x': invalid tag: x", "When parsing filter 'x': ...", "Missing '}' at
// the end of: x", "Metric cannot be null or empty" and so on.
func ParseQueryURI(q url.Values) (*QueryRequest, error) {
	start, err := requiredValue(q, "start")
	if err != nil {
		return nil, err
	}
	r := &QueryRequest{Start: start}
	r.End, _ = lastValue(q, "end")
	r.Timezone, _ = lastValue(q, "timezone")
	r.Padding = HasFlag(q, "padding")
	r.NoAnnotations = HasFlag(q, "no_annotations")
	r.GlobalAnnotations = HasFlag(q, "global_annotations")
	r.ShowTSUIDs = HasFlag(q, "show_tsuids")
	r.MsResolution = HasFlag(q, "ms")
	r.ShowQuery = HasFlag(q, "show_query")
	r.ShowStats = HasFlag(q, "show_stats")
	r.ShowSummary = HasFlag(q, "show_summary")
	r.Arrays = HasFlag(q, "arrays")

	for _, s := range q["tsuid"] {
		sq, err := ParseTSUIDSubQuery(s)
		if err != nil {
			return nil, err
		}
		r.addSubQuery(sq)
	}
	for _, s := range q["m"] {
		sq, err := ParseMSubQuery(s)
		if err != nil {
			return nil, err
		}
		r.addSubQuery(sq)
	}
	if len(r.Queries) == 0 {
		return nil, ErrMissingSubQueries
	}
	return r, nil
}

// modifier applies part to sq if it is an m= modifier, and reports whether
// it was one. tsuid limits it to what tsuid= sub-queries take.
func modifier(sq *SubQuery, part string, tsuid bool) (bool, error) {
	lower := strings.ToLower(part)
	switch {
	case lower == "rate" || strings.HasPrefix(lower, "rate{"):
		sq.Rate = true
		if strings.IndexByte(part, '{') >= 0 {
			ro, err := parseRateOptions(part)
			if err != nil {
				return true, err
			}
			sq.RateOptions = &ro
		}
	case part != "" && part[0] >= '0' && part[0] <= '9' && strings.IndexByte(part, '-') > 0:
		sq.Downsample = part
	case strings.HasPrefix(lower, "percentiles"):
		ps, err := parsePercentiles(part)
		if err != nil {
			return true, err
		}
		sq.Percentiles = ps
	case lower == "show-histogram-buckets":
		sq.ShowHistogramBuckets = true
	case tsuid:
		return false, nil
	case lower == "explicit_tags":
		sq.ExplicitTags = true
	case lower == "pre-agg":
		sq.PreAggregate = true
	case strings.HasPrefix(lower, "rollup_"):
		// QueryRpc: any part starting rollup_ is a usage; an unknown one
		// is the default (ROLLUP_USAGE.parse).
		sq.RollupUsage = normRollupUsage(part)
	default:
		return false, nil
	}
	return true, nil
}

// ParseMSubQuery parses one m= value; see ParseQueryURI.
func ParseMSubQuery(s string) (SubQuery, error) {
	sq := newSubQuery()
	if s == "" {
		return sq, badRequest("The query string was empty")
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 {
		return sq, badRequest("Invalid parameter m=" + s + " (not enough :-separated parts)")
	}
	sq.Aggregator = parts[0]
	i := 1
	for ; i < len(parts)-1; i++ {
		if parts[i] == "" {
			return sq, badRequest("Invalid parameter m=" + s + " (empty :-separated part)")
		}
		ok, err := modifier(&sq, parts[i], false)
		if err != nil {
			return sq, err
		}
		if !ok {
			break
		}
		if i > 3 {
			return sq, badRequest("Invalid parameter m=" + s + " (too many :-separated parts)")
		}
	}
	metric, filters, err := parseMetricAndFilters(strings.Join(parts[i:], ":"))
	if err != nil {
		return sq, err
	}
	sq.Metric, sq.Filters = metric, filters
	return sq, nil
}

// ParseTSUIDSubQuery parses one tsuid= value,
// "<agg>:[<modifier>:]...<tsuid>[,<tsuid>...]", taking the rate, downsample,
// percentiles and show-histogram-buckets modifiers (others are ignored, as
// by OpenTSDB).
func ParseTSUIDSubQuery(s string) (SubQuery, error) {
	sq := newSubQuery()
	if s == "" {
		return sq, badRequest("The tsuid query string was empty")
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 {
		return sq, badRequest("Invalid parameter m=" + s + " (not enough :-separated parts)")
	}
	if len(parts) > 5 {
		return sq, badRequest("Invalid parameter m=" + s + " (too many :-separated parts)")
	}
	sq.Aggregator = parts[0]
	for _, p := range parts[1 : len(parts)-1] {
		if _, err := modifier(&sq, p, true); err != nil {
			return sq, err
		}
	}
	// Java's String.split drops trailing empty strings.
	tsuids := strings.Split(parts[len(parts)-1], ",")
	for len(tsuids) > 0 && tsuids[len(tsuids)-1] == "" {
		tsuids = tsuids[:len(tsuids)-1]
	}
	sq.TSUIDs = tsuids
	return sq, nil
}

// parseRateOptions is QueryRpc.parseRateOptions: rate{counter[,max[,reset]]}.
func parseRateOptions(spec string) (RateOptions, error) {
	ro := DefaultRateOptions
	if len(spec) == 4 {
		return ro, nil
	}
	if len(spec) < 6 || spec[4] != '{' || spec[len(spec)-1] != '}' {
		return ro, badRequest("Invalid rate options specification: " + spec)
	}
	parts := strings.Split(spec[5:len(spec)-1], ",")
	if len(parts) > 3 {
		return ro, badRequest("Incorrect number of values in rate options specification, must be " +
			"counter[,counter max value,reset value], recieved: " + strconv.Itoa(len(parts)) + " parts")
	}
	ro.Counter = strings.HasSuffix(parts[0], "counter")
	ro.DropResets = parts[0] == "dropcounter"
	if len(parts) >= 2 && parts[1] != "" {
		v, err := ParseCounterLimit(parts[1])
		if err != nil {
			return ro, badRequest("Max value of counter was not a number, received '" + shorten(parts[1]) + "'")
		}
		ro.CounterMax = v
	}
	if len(parts) >= 3 && parts[2] != "" {
		v, err := ParseCounterLimit(parts[2])
		if err != nil {
			return ro, badRequest("Reset value of counter was not a number, received '" + shorten(parts[2]) + "'")
		}
		ro.ResetValue = v
	}
	return ro, nil
}

// parsePercentiles is QueryRpc.parsePercentiles: percentiles[99.9,95].
func parsePercentiles(spec string) ([]float64, error) {
	open, close := strings.IndexByte(spec, '['), strings.IndexByte(spec, ']')
	if open < 0 || close < 0 || close < open {
		return nil, badRequest("Malformated percentile query paramater: " + spec)
	}
	var ps []float64
	for _, s := range strings.Split(spec[open+1:close], ",") {
		s = strings.TrimSpace(s)
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || !isDecimalFloat([]byte(s)) {
			return nil, badRequest("Malformated percentile query paramater: " + spec)
		}
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps, nil
}

// parseMetricAndFilters is Tags.parseWithMetricAndFilters:
// metric[{group-by filters}][{filters}]. As there, the second braces' filters
// come first in the result.
func parseMetricAndFilters(s string) (string, []Filter, error) {
	if s == "" {
		return "", nil, badRequest("Metric cannot be null or empty")
	}
	curly := strings.IndexByte(s, '{')
	if curly < 0 {
		return s, nil, nil
	}
	n := len(s)
	if s[n-1] != '}' {
		return "", nil, badRequest("Missing '}' at the end of: " + s)
	}
	if curly == n-2 {
		return s[:n-2], nil, nil
	}
	var filters []Filter
	closing := strings.IndexByte(s, '}')
	if closing < curly {
		return "", nil, badRequest("Invalid metric and filters: " + s)
	}
	if closing != n-1 {
		second := strings.LastIndexByte(s, '{')
		for _, item := range strings.Split(s[second+1:n-1], ",") {
			if item == "" {
				break
			}
			k, v, err := splitTag(item)
			if err == nil {
				var f Filter
				if f, err = ParseTagFilter(k, v, false); err == nil {
					filters = append(filters, f)
					continue
				}
			}
			return "", nil, badRequest("When parsing filter '" + item + "': " + err.(*RequestError).Message)
		}
	}
	for _, item := range strings.Split(s[curly+1:closing], ",") {
		if item == "" && closing != n-1 {
			break
		}
		k, v, err := splitTag(item)
		if err == nil {
			var f Filter
			if f, err = ParseTagFilter(k, v, true); err == nil {
				filters = addGroupByFilter(filters, f)
				continue
			}
		}
		return "", nil, badRequest("When parsing tag '" + item + "': " + err.(*RequestError).Message)
	}
	return s[:curly], filters, nil
}

// splitTag splits "k=v" at its first '=' (OpenTSDB splits at every '=' and
// so rejects a filter expression holding one; hourglass accepts it).
func splitTag(s string) (k, v string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return "", "", badRequest("invalid tag: " + s)
	}
	return k, v, nil
}
