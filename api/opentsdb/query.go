package opentsdb

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// QueryRequest is an /api/query request, from its JSON body (ParseQueryJSON)
// or its query string (ParseQueryURI), as OpenTSDB's TSQuery.
type QueryRequest struct {
	// Start and End are the times as sent (see ParseTime); a JSON number is
	// kept as its text. End "" means now.
	Start, End string
	// Timezone is the zone of absolute times and calendar downsampling
	// (an IANA name); "" means the server's default.
	Timezone string
	Queries  []SubQuery

	NoAnnotations     bool
	GlobalAnnotations bool
	MsResolution      bool // JSON msResolution (or ms, as OpenTSDB's docs spell it); QS ms
	ShowTSUIDs        bool
	ShowSummary       bool
	ShowStats         bool
	ShowQuery         bool
	Delete            bool // JSON delete; the handler sets it for the DELETE verb
	UseCalendar       bool
	Padding           bool

	OverrideByteLimit      bool
	OverrideDataPointLimit bool

	// Arrays asks for dps as [[ts,v],...]. It is the ?arrays query-string
	// flag: ParseQueryURI sets it; for a POST the handler sets it from the
	// URL (HasFlag).
	Arrays bool
}

// SubQuery is one sub-query, as OpenTSDB's TSSubQuery. Legacy "tags" have
// been converted to Filters (with GroupBy set).
type SubQuery struct {
	Aggregator string
	Metric     string
	TSUIDs     []string
	// Downsample is the spec as sent, e.g. "1m-avg", "1h-sum-nan", "0all-max",
	// "1dc-sum"; the downsample package parses it.
	Downsample   string
	Rate         bool
	RateOptions  *RateOptions // nil: none sent (see Rates)
	Filters      []Filter
	ExplicitTags bool
	Percentiles  []float64 // sorted ascending
	// RollupUsage is the rollupUsage sent, upper-cased (ROLLUP_RAW, ...), or "".
	RollupUsage          string
	PreAggregate         bool
	ShowHistogramBuckets bool
	UseMultiGets         bool // default true
	UseFuzzyFilter       bool // default true
	// Index is the sub-query's position in the request, echoed in "query".
	Index int
}

// RateOptions are a rate's counter options.
type RateOptions struct {
	Counter    bool
	CounterMax int64 // default math.MaxInt64
	ResetValue int64 // default 0
	DropResets bool
}

// DefaultRateOptions are the options of a rate sent without any.
var DefaultRateOptions = RateOptions{CounterMax: math.MaxInt64}

// Rates returns q's rate options, or DefaultRateOptions when none were sent.
func (q *SubQuery) Rates() RateOptions {
	if q.RateOptions == nil {
		return DefaultRateOptions
	}
	return *q.RateOptions
}

func newSubQuery() SubQuery {
	return SubQuery{UseMultiGets: true, UseFuzzyFilter: true}
}

// AppendJSON appends q as OpenTSDB echoes it in a result's "query" field
// (showQuery): aggregator, metric, tsuids, downsample, rate, filters (with
// "group_by"), explicitTags, percentiles, rateOptions, tags (the group-by
// filters as key: "type(expr)"), index, and the rest of TSSubQuery's
// properties. Unset values are null, as Jackson writes them.
func (q *SubQuery) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"aggregator":`...)
	dst = appendString(dst, q.Aggregator)
	dst = append(dst, `,"metric":`...)
	dst = appendStringOrNull(dst, q.Metric)
	dst = append(dst, `,"tsuids":`...)
	if q.TSUIDs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendStrings(dst, q.TSUIDs)
	}
	dst = append(dst, `,"downsample":`...)
	dst = appendStringOrNull(dst, q.Downsample)
	dst = append(dst, `,"rate":`...)
	dst = strconv.AppendBool(dst, q.Rate)
	dst = append(dst, `,"filters":[`...)
	for i, f := range q.Filters {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = f.AppendJSON(dst)
	}
	dst = append(dst, `],"explicitTags":`...)
	dst = strconv.AppendBool(dst, q.ExplicitTags)
	dst = append(dst, `,"percentiles":`...)
	if q.Percentiles == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, p := range q.Percentiles {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendFloat(dst, p)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"rateOptions":`...)
	if q.RateOptions == nil {
		dst = append(dst, "null"...)
	} else {
		r := q.RateOptions
		dst = append(dst, `{"counter":`...)
		dst = strconv.AppendBool(dst, r.Counter)
		dst = append(dst, `,"counterMax":`...)
		dst = strconv.AppendInt(dst, r.CounterMax, 10)
		dst = append(dst, `,"resetValue":`...)
		dst = strconv.AppendInt(dst, r.ResetValue, 10)
		dst = append(dst, `,"dropResets":`...)
		dst = strconv.AppendBool(dst, r.DropResets)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"tags":{`...)
	n := 0
	for i, f := range q.Filters {
		if !f.GroupBy || slices.ContainsFunc(q.Filters[i+1:], func(g Filter) bool { return g.GroupBy && g.TagK == f.TagK }) {
			continue // one entry per key, the last one wins (a Java map)
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = appendString(dst, f.TagK)
		dst = append(dst, ':')
		dst = appendString(dst, f.String())
	}
	dst = append(dst, `},"index":`...)
	dst = strconv.AppendInt(dst, int64(q.Index), 10)
	dst = append(dst, `,"preAggregate":`...)
	dst = strconv.AppendBool(dst, q.PreAggregate)
	dst = append(dst, `,"rollupUsage":`...)
	dst = appendStringOrNull(dst, q.RollupUsage)
	dst = append(dst, `,"showHistogramBuckets":`...)
	dst = strconv.AppendBool(dst, q.ShowHistogramBuckets)
	dst = append(dst, `,"useMultiGets":`...)
	dst = strconv.AppendBool(dst, q.UseMultiGets)
	dst = append(dst, `,"useFuzzyFilter":`...)
	dst = strconv.AppendBool(dst, q.UseFuzzyFilter)
	return append(dst, '}')
}

// MarshalJSON writes q as AppendJSON does.
func (q *SubQuery) MarshalJSON() ([]byte, error) { return q.AppendJSON(nil), nil }

func appendStringOrNull(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendString(dst, s)
}

// The JSON forms of the request, decoded with encoding/json (a query body is
// small; the write path has its own decoder).
type queryWire struct {
	Start                  flexString     `json:"start"`
	End                    flexString     `json:"end"`
	Timezone               flexString     `json:"timezone"`
	Queries                []subQueryWire `json:"queries"`
	NoAnnotations          flexBool       `json:"noAnnotations"`
	GlobalAnnotations      flexBool       `json:"globalAnnotations"`
	MsResolution           flexBool       `json:"msResolution"`
	Ms                     flexBool       `json:"ms"`
	ShowTSUIDs             flexBool       `json:"showTSUIDs"`
	ShowSummary            flexBool       `json:"showSummary"`
	ShowStats              flexBool       `json:"showStats"`
	ShowQuery              flexBool       `json:"showQuery"`
	Delete                 flexBool       `json:"delete"`
	UseCalendar            flexBool       `json:"useCalendar"`
	Padding                flexBool       `json:"padding"`
	OverrideByteLimit      flexBool       `json:"overrideByteLimit"`
	OverrideDataPointLimit flexBool       `json:"overrideDataPointLimit"`
}

type subQueryWire struct {
	Aggregator           flexString            `json:"aggregator"`
	Metric               flexString            `json:"metric"`
	TSUIDs               []flexString          `json:"tsuids"`
	Downsample           flexString            `json:"downsample"`
	Rate                 flexBool              `json:"rate"`
	RateOptions          *rateOptionsWire      `json:"rateOptions"`
	Tags                 map[string]flexString `json:"tags"`
	Filters              []*filterWire         `json:"filters"`
	ExplicitTags         flexBool              `json:"explicitTags"`
	Percentiles          []flexFloat           `json:"percentiles"`
	RollupUsage          flexString            `json:"rollupUsage"`
	PreAggregate         flexBool              `json:"preAggregate"`
	ShowHistogramBuckets flexBool              `json:"showHistogramBuckets"`
	UseMultiGets         *flexBool             `json:"useMultiGets"`
	UseFuzzyFilter       *flexBool             `json:"useFuzzyFilter"`
}

type rateOptionsWire struct {
	Counter    flexBool     `json:"counter"`
	IsCounter  flexBool     `json:"isCounter"`
	CounterMax counterLimit `json:"counterMax"`
	ResetValue counterLimit `json:"resetValue"`
	DropResets flexBool     `json:"dropResets"`
}

// counterLimit is a rate's counterMax or resetValue as JSON: what
// ParseCounterLimit accepts, as a number or a string; null is unset.
type counterLimit struct {
	v   int64
	set bool
}

func (c *counterLimit) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*c = counterLimit{}
		return nil
	}
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s = strings.TrimSpace(s); s == "" {
			*c = counterLimit{}
			return nil
		}
	}
	v, err := ParseCounterLimit(s)
	if err != nil {
		return errors.New(err.Error() + ", got " + shorten(string(b)))
	}
	*c = counterLimit{v: v, set: true}
	return nil
}

// two63 and two64 are 2^63 and 2^64 as float64.
const (
	two63 = float64(1 << 63)
	two64 = two63 * 2
)

// ParseCounterLimit parses a rate's counter max or reset value. OpenTSDB
// holds them in a long; Grafana's Go backend sends them as float64, and
// an unset uint64 maximum as 1.8446744073709552e+19. So: an integer that
// fits in an int64; a number that does, truncated toward zero; and any
// number from 2^63 to 2^64 (the uint64 range past int64's) is
// math.MaxInt64, the default, "no max". Anything else is an error.
func ParseCounterLimit(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return math.MaxInt64, nil // past int64, within uint64
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(f):
		return 0, errors.New("expected an integer")
	case f < -two63 || f > two64:
		return 0, errors.New("expected an integer from -2^63 to 2^64")
	case f >= two63:
		return math.MaxInt64, nil
	}
	return int64(f), nil
}

type filterWire struct {
	Type    flexString `json:"type"`
	TagK    flexString `json:"tagk"`
	Filter  flexString `json:"filter"`
	GroupBy flexBool   `json:"groupBy"`
	GroupB2 flexBool   `json:"group_by"`
}

var rollupUsages = []string{"ROLLUP_RAW", "ROLLUP_NOFALLBACK", "ROLLUP_FALLBACK", "ROLLUP_FALLBACK_RAW"}

// normRollupUsage upper-cases a known usage; an unknown one becomes OpenTSDB's
// default, ROLLUP_NOFALLBACK.
func normRollupUsage(s string) string {
	u := strings.ToUpper(s)
	if slices.Contains(rollupUsages, u) {
		return u
	}
	return "ROLLUP_NOFALLBACK"
}

// ParseQueryJSON parses an /api/query POST body. Unknown fields are ignored,
// and a number, string or boolean is accepted where another of them is
// expected, as Jackson's coercions do. Errors are *RequestError: an empty
// body is "Missing message content"; malformed JSON, a wrongly typed field
// or a bad filter are "Unable to parse the given JSON", with the reason as
// details.
//
// A sub-query's legacy "tags" are converted as ParseTagFilter does and added
// after its "filters" (OpenTSDB keeps whichever of the two comes last in the
// body and drops the other). Duplicate sub-queries are dropped, as OpenTSDB
// does; Index is each sub-query's position after that. Times are not parsed
// here: see Validate.
func ParseQueryJSON(body []byte) (*QueryRequest, error) {
	var w queryWire
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	q := &QueryRequest{
		Start:                  w.Start.s,
		End:                    w.End.s,
		Timezone:               w.Timezone.s,
		NoAnnotations:          bool(w.NoAnnotations),
		GlobalAnnotations:      bool(w.GlobalAnnotations),
		MsResolution:           bool(w.MsResolution || w.Ms),
		ShowTSUIDs:             bool(w.ShowTSUIDs),
		ShowSummary:            bool(w.ShowSummary),
		ShowStats:              bool(w.ShowStats),
		ShowQuery:              bool(w.ShowQuery),
		Delete:                 bool(w.Delete),
		UseCalendar:            bool(w.UseCalendar),
		Padding:                bool(w.Padding),
		OverrideByteLimit:      bool(w.OverrideByteLimit),
		OverrideDataPointLimit: bool(w.OverrideDataPointLimit),
	}
	for _, sw := range w.Queries {
		sq, err := sw.subQuery()
		if err != nil {
			return nil, err
		}
		q.addSubQuery(sq)
	}
	return q, nil
}

func (w *subQueryWire) subQuery() (SubQuery, error) {
	sq := newSubQuery()
	sq.Aggregator = w.Aggregator.s
	sq.Metric = w.Metric.s
	if w.TSUIDs != nil {
		sq.TSUIDs = make([]string, len(w.TSUIDs))
		for i, t := range w.TSUIDs {
			sq.TSUIDs[i] = t.s
		}
	}
	sq.Downsample = w.Downsample.s
	sq.Rate = bool(w.Rate)
	if r := w.RateOptions; r != nil {
		ro := DefaultRateOptions
		ro.Counter = bool(r.Counter || r.IsCounter)
		if r.CounterMax.set {
			ro.CounterMax = r.CounterMax.v
		}
		if r.ResetValue.set {
			ro.ResetValue = r.ResetValue.v
		}
		ro.DropResets = bool(r.DropResets)
		sq.RateOptions = &ro
	}
	for _, fw := range w.Filters {
		if fw == nil {
			continue
		}
		f := Filter{Type: fw.Type.s, TagK: fw.TagK.s, Expr: fw.Filter.s, GroupBy: bool(fw.GroupBy || fw.GroupB2)}
		if _, err := f.Compile(); err != nil {
			return sq, errUnparseable(err.(*RequestError).Message)
		}
		sq.Filters = append(sq.Filters, f)
	}
	for _, k := range sortedKeys(w.Tags) {
		f, err := ParseTagFilter(k, w.Tags[k].s, true)
		if err != nil {
			return sq, errUnparseable(err.(*RequestError).Message)
		}
		sq.Filters = addGroupByFilter(sq.Filters, f)
	}
	sq.ExplicitTags = bool(w.ExplicitTags)
	if w.Percentiles != nil {
		sq.Percentiles = make([]float64, len(w.Percentiles))
		for i, p := range w.Percentiles {
			sq.Percentiles[i] = float64(p)
		}
		slices.Sort(sq.Percentiles)
	}
	if w.RollupUsage.set {
		sq.RollupUsage = normRollupUsage(w.RollupUsage.s)
	}
	sq.PreAggregate = bool(w.PreAggregate)
	sq.ShowHistogramBuckets = bool(w.ShowHistogramBuckets)
	if w.UseMultiGets != nil {
		sq.UseMultiGets = bool(*w.UseMultiGets)
	}
	if w.UseFuzzyFilter != nil {
		sq.UseFuzzyFilter = bool(*w.UseFuzzyFilter)
	}
	return sq, nil
}

// addGroupByFilter adds a group-by filter converted from a tag, unless an
// equal one is there, which then groups by (TagVFilter.mapToFilters).
func addGroupByFilter(fs []Filter, f Filter) []Filter {
	for i, g := range fs {
		if g.Type == f.Type && g.TagK == f.TagK && g.Expr == f.Expr {
			fs[i].GroupBy = true
			return fs
		}
	}
	return append(fs, f)
}

// addSubQuery appends sq unless an equal sub-query is there already.
func (q *QueryRequest) addSubQuery(sq SubQuery) {
	sq.Index = 0
	key := sq.AppendJSON(nil)
	for i := range q.Queries {
		o := q.Queries[i]
		o.Index = 0
		if string(o.AppendJSON(nil)) == string(key) {
			return
		}
	}
	sq.Index = len(q.Queries)
	q.Queries = append(q.Queries, sq)
}

// Location returns the time zone of q's absolute times: q.Timezone, or def
// (UTC if nil) when q has none. An unknown zone is the *RequestError
// "Invalid timezone name: x".
func (q *QueryRequest) Location(def *time.Location) (*time.Location, error) {
	if q.Timezone == "" {
		if def == nil {
			return time.UTC, nil
		}
		return def, nil
	}
	loc, err := time.LoadLocation(q.Timezone)
	if err != nil || q.Timezone == "Local" {
		return nil, badRequest("Invalid timezone name: " + q.Timezone)
	}
	return loc, nil
}

// Validate checks q as OpenTSDB's TSQuery.validateAndSetQuery does, in its
// order, and returns the query's range in Unix milliseconds: start, end
// (now when End is empty) in q's time zone (def when q has none). Errors are
// *RequestError: "Missing start time", a ParseTime error, "End time [e] must
// be greater than the start time [s]", "Missing queries", "Missing the
// aggregation function", "Missing the metric or tsuids, provide at least
// one", "Invalid percentile parameters: p", "Invalid timezone name: x". It
// does not know the aggregators or parse downsample specs: the engine
// checks those ("No such aggregation function: x").
func (q *QueryRequest) Validate(now time.Time, def *time.Location) (start, end int64, err error) {
	if q.Start == "" {
		return 0, 0, badRequest("Missing start time")
	}
	loc, err := q.Location(def)
	if err != nil {
		return 0, 0, err
	}
	if start, err = ParseTime(q.Start, now, loc); err != nil {
		return 0, 0, err
	}
	if q.End == "" {
		end = now.UnixMilli()
	} else if end, err = ParseTime(q.End, now, loc); err != nil {
		return 0, 0, err
	}
	if end <= start {
		return 0, 0, badRequest("End time [" + strconv.FormatInt(end, 10) +
			"] must be greater than the start time [" + strconv.FormatInt(start, 10) + "]")
	}
	if len(q.Queries) == 0 {
		return 0, 0, badRequest("Missing queries")
	}
	for i := range q.Queries {
		sq := &q.Queries[i]
		if sq.Aggregator == "" {
			return 0, 0, badRequest("Missing the aggregation function")
		}
		if len(sq.TSUIDs) == 0 && sq.Metric == "" {
			return 0, 0, badRequest("Missing the metric or tsuids, provide at least one")
		}
		for _, p := range sq.Percentiles {
			if p < 0 || p > 100 || p != p {
				return 0, 0, badRequest("Invalid percentile parameters: " + strconv.FormatFloat(p, 'g', -1, 64))
			}
		}
		sq.Index = i
	}
	return start, end, nil
}
