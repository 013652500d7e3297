package opentsdb

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Suggest types.
const (
	SuggestMetrics = "metrics"
	SuggestTagK    = "tagk"
	SuggestTagV    = "tagv"
)

// DefaultSuggestMax is the number of suggestions when max is absent or not
// positive.
const DefaultSuggestMax = 25

// SuggestRequest is an /api/suggest request.
type SuggestRequest struct {
	Type string // SuggestMetrics, SuggestTagK or SuggestTagV
	Q    string // prefix, case-sensitive; "" matches everything
	Max  int    // > 0
}

// ParseSuggestURI parses GET /api/suggest's query string: type (required,
// exact case), q, max. Errors are *RequestError with OpenTSDB's messages:
// "Missing parameter <code>type</code>", "Unable to parse 'max' as a
// number", "Invalid 'type' parameter:x".
func ParseSuggestURI(q url.Values) (*SuggestRequest, error) {
	t, err := requiredValue(q, "type")
	if err != nil {
		return nil, err
	}
	prefix, _ := lastValue(q, "q")
	max, _ := lastValue(q, "max")
	return newSuggest(t, prefix, max)
}

// ParseSuggestJSON parses a POST /api/suggest body, {"type","q","max"}
// (max a number or a string). A missing type is "Missing 'type' parameter".
func ParseSuggestJSON(body []byte) (*SuggestRequest, error) {
	var w struct {
		Type flexString `json:"type"`
		Q    flexString `json:"q"`
		Max  flexString `json:"max"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	if w.Type.s == "" {
		return nil, badRequest("Missing 'type' parameter")
	}
	return newSuggest(w.Type.s, w.Q.s, w.Max.s)
}

func newSuggest(typ, q, max string) (*SuggestRequest, error) {
	r := &SuggestRequest{Type: typ, Q: q, Max: DefaultSuggestMax}
	if max != "" {
		n, err := strconv.ParseInt(max, 10, 32)
		if err != nil {
			return nil, badRequest("Unable to parse 'max' as a number")
		}
		if n > 0 {
			r.Max = int(n)
		}
	}
	switch typ {
	case SuggestMetrics, SuggestTagK, SuggestTagV:
	default:
		return nil, badRequest("Invalid 'type' parameter:" + typ)
	}
	return r, nil
}

// DefaultLookupLimit is /api/search/lookup's default limit.
const DefaultLookupLimit = 25

// LookupTag is one tag pair of a lookup; "*" on either side matches any key
// or any value.
type LookupTag struct {
	Key, Value string
}

// LookupRequest is an /api/search/lookup request. Pairs of the same kind are
// ORed, different kinds ANDed, and "*" overrides literals of the same key
// (OpenTSDB's semantics).
type LookupRequest struct {
	Metric  string // "" or "*": any metric
	Tags    []LookupTag
	Limit   int // 0 or less: no limit (OpenTSDB's TimeSeriesLookup)
	UseMeta bool
}

// ParseLookupURI parses GET /api/search/lookup's query string:
// m=<metric>{tagk=tagv,...} (required; either side of a pair may be "*" or
// empty, meaning any) and limit (default 25). Errors are *RequestError:
// "Missing parameter <code>m</code>", "Unable to parse query" (with the
// reason as details, e.g. "Missing '}' at the end of: x"), "Unable to
// convert 'limit' to a valid number", and "Missing metric and tags. Please
// supply at least one value.".
func ParseLookupURI(q url.Values) (*LookupRequest, error) {
	m, err := requiredValue(q, "m")
	if err != nil {
		return nil, err
	}
	r := &LookupRequest{Limit: DefaultLookupLimit, UseMeta: true}
	metric, tags, msg := parseLookupM(m)
	if msg != "" {
		return nil, badRequestDetails("Unable to parse query", msg)
	}
	r.Metric, r.Tags = metric, tags
	if l, ok := lastValue(q, "limit"); ok {
		n, err := strconv.ParseInt(l, 10, 32)
		if err != nil {
			return nil, badRequest("Unable to convert 'limit' to a valid number")
		}
		r.Limit = int(n)
	}
	return r, r.check()
}

// ParseLookupJSON parses a POST /api/search/lookup body,
// {"metric","tags":[{"key","value"}],"limit","useMeta"}.
func ParseLookupJSON(body []byte) (*LookupRequest, error) {
	var w struct {
		Metric *flexString `json:"metric"`
		Tags   []struct {
			Key   flexString `json:"key"`
			Value flexString `json:"value"`
		} `json:"tags"`
		Limit   *flexInt64 `json:"limit"`
		UseMeta *flexBool  `json:"useMeta"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	r := &LookupRequest{Metric: "*", Limit: DefaultLookupLimit, UseMeta: true}
	if w.Metric != nil {
		r.Metric = w.Metric.s
	}
	for _, t := range w.Tags {
		r.Tags = append(r.Tags, LookupTag{Key: anyIfEmpty(t.Key.s), Value: anyIfEmpty(t.Value.s)})
	}
	if w.Limit != nil && w.Limit.set {
		r.Limit = int(w.Limit.v)
	}
	if w.UseMeta != nil {
		r.UseMeta = bool(*w.UseMeta)
	}
	return r, r.check()
}

func (r *LookupRequest) check() error {
	if (r.Metric == "" || r.Metric == "*") && len(r.Tags) == 0 {
		return badRequest("Missing metric and tags. Please supply at least one value.")
	}
	return nil
}

func anyIfEmpty(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// parseLookupM is Tags.parseWithMetric for lookups: "=v" is any key with
// value v, "k=" key k with any value. It returns a message on error.
func parseLookupM(s string) (metric string, tags []LookupTag, msg string) {
	curly := strings.IndexByte(s, '{')
	if curly < 0 {
		return s, nil, ""
	}
	n := len(s)
	if s[n-1] != '}' {
		return "", nil, "Missing '}' at the end of: " + s
	}
	if curly == n-2 {
		if curly == 0 {
			return "", nil, "Missing metric and tags: " + s
		}
		return s[:curly], nil, ""
	}
	for _, item := range strings.Split(s[curly+1:n-1], ",") {
		if len(item) < 2 {
			return "", nil, "When parsing tag '" + item + "': Missing tag pair"
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok || strings.Contains(v, "=") || (k == "" && v == "") {
			return "", nil, "When parsing tag '" + item + "': invalid tag: " + item
		}
		tags = append(tags, LookupTag{Key: anyIfEmpty(k), Value: anyIfEmpty(v)})
	}
	return s[:curly], tags, ""
}

// LastRequest is an /api/query/last request.
type LastRequest struct {
	Queries      []LastSubQuery
	ResolveNames bool
	BackScan     int // hours to scan back; 0: use the last-point index
}

// LastSubQuery names series by metric and exact tags (no wildcards), or by
// TSUIDs.
type LastSubQuery struct {
	Metric string
	Tags   []Tag
	TSUIDs []string
}

// ParseLastURI parses GET /api/query/last's query string: timeseries=
// (repeatable, metric{k=v,...}), tsuids= (repeatable, comma-separated),
// back_scan, resolve (presence). Errors are *RequestError: "Unable to parse
// back_scan parameter", "Missing '}' at the end of: x", "When parsing tag
// 'x': invalid tag: x" (or duplicate tag), "Missing sub queries".
func ParseLastURI(q url.Values) (*LastRequest, error) {
	r := &LastRequest{ResolveNames: HasFlag(q, "resolve")}
	if v, ok := lastValue(q, "back_scan"); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, badRequest("Unable to parse back_scan parameter")
		}
		r.BackScan = int(n)
	}
	for _, s := range q["timeseries"] {
		metric, tags, msg := parseMetricTags(s)
		if msg != "" {
			return nil, badRequest(msg)
		}
		r.Queries = append(r.Queries, LastSubQuery{Metric: metric, Tags: tags})
	}
	for _, s := range q["tsuids"] {
		r.Queries = append(r.Queries, LastSubQuery{TSUIDs: splitJava(s, ",")})
	}
	if len(r.Queries) == 0 {
		return nil, ErrMissingSubQueries
	}
	return r, nil
}

// ParseLastJSON parses a POST /api/query/last body,
// {"queries":[{"metric","tags":{}}|{"tsuids":[]}],"resolveNames","backScan"}.
func ParseLastJSON(body []byte) (*LastRequest, error) {
	var w struct {
		Queries []struct {
			Metric flexString            `json:"metric"`
			Tags   map[string]flexString `json:"tags"`
			TSUIDs []flexString          `json:"tsuids"`
		} `json:"queries"`
		ResolveNames flexBool  `json:"resolveNames"`
		BackScan     flexInt64 `json:"backScan"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	r := &LastRequest{ResolveNames: bool(w.ResolveNames), BackScan: int(w.BackScan.v)}
	for _, qw := range w.Queries {
		sq := LastSubQuery{Metric: qw.Metric.s}
		for _, k := range sortedKeys(qw.Tags) {
			sq.Tags = append(sq.Tags, Tag{Key: k, Value: qw.Tags[k].s})
		}
		for _, t := range qw.TSUIDs {
			sq.TSUIDs = append(sq.TSUIDs, t.s)
		}
		r.Queries = append(r.Queries, sq)
	}
	if len(r.Queries) == 0 {
		return nil, ErrMissingSubQueries
	}
	return r, nil
}

// parseMetricTags is Tags.parseWithMetric: metric{k=v,...}, exact pairs.
func parseMetricTags(s string) (metric string, tags []Tag, msg string) {
	curly := strings.IndexByte(s, '{')
	if curly < 0 {
		return s, nil, ""
	}
	n := len(s)
	if s[n-1] != '}' {
		return "", nil, "Missing '}' at the end of: " + s
	}
	if curly == n-2 {
		return s[:curly], nil, ""
	}
	for _, item := range strings.Split(s[curly+1:n-1], ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" || v == "" || strings.Contains(v, "=") {
			return "", nil, "When parsing tag '" + item + "': invalid tag: " + item
		}
		dup := false
		for _, t := range tags {
			if t.Key == k {
				if t.Value != v {
					return "", nil, "When parsing tag '" + item + "': duplicate tag: " + item + ", tags=" + formatTags(tags)
				}
				dup = true
			}
		}
		if !dup {
			tags = append(tags, Tag{Key: k, Value: v})
		}
	}
	return s[:curly], tags, ""
}

// UIDAssignRequest is an /api/uid/assign request: names to assign UIDs to.
type UIDAssignRequest struct {
	Metric, TagK, TagV []string
}

// ParseUIDAssignURI parses GET /api/uid/assign's query string:
// metric=a,b&tagk=..&tagv=.. . With no names at all it is the
// *RequestError "Missing values to assign UIDs". Names are not validated
// here: reply each invalid one under "<kind>_errors" with ValidateName's
// message (ValidateName("metric", name, max)).
func ParseUIDAssignURI(q url.Values) (*UIDAssignRequest, error) {
	r := &UIDAssignRequest{}
	for _, kind := range []struct {
		name string
		dst  *[]string
	}{{"metric", &r.Metric}, {"tagk", &r.TagK}, {"tagv", &r.TagV}} {
		if v, _ := lastValue(q, kind.name); v != "" {
			*kind.dst = splitJava(v, ",")
		}
	}
	return r, r.check()
}

// ParseUIDAssignJSON parses a POST /api/uid/assign body,
// {"metric":[..],"tagk":[..],"tagv":[..]}.
func ParseUIDAssignJSON(body []byte) (*UIDAssignRequest, error) {
	var w struct {
		Metric []flexString `json:"metric"`
		TagK   []flexString `json:"tagk"`
		TagV   []flexString `json:"tagv"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	conv := func(fs []flexString) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.s)
		}
		return out
	}
	r := &UIDAssignRequest{Metric: conv(w.Metric), TagK: conv(w.TagK), TagV: conv(w.TagV)}
	return r, r.check()
}

func (r *UIDAssignRequest) check() error {
	if len(r.Metric)+len(r.TagK)+len(r.TagV) == 0 {
		return badRequest("Missing values to assign UIDs")
	}
	return nil
}

// splitJava splits as Java's String.split does: trailing empty strings are
// dropped.
func splitJava(s, sep string) []string {
	out := strings.Split(s, sep)
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
