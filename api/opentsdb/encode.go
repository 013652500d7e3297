package opentsdb

import (
	"hourglass/api/jsonw"
	"math"
	"slices"
	"strconv"

	"hourglass/chunk"
)

// AppendError appends OpenTSDB's error body (HttpSerializer.formatErrorV1):
// {"error":{"code":N,"message":"...","details":"..."}}, details only when
// non-empty.
func AppendError(dst []byte, code int, message, details string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, message)
	if details != "" {
		dst = append(dst, `,"details":`...)
		dst = appendString(dst, details)
	}
	return append(dst, "}}"...)
}

// ResultFormat says how AppendResult writes a query result's dps.
type ResultFormat struct {
	// Arrays writes dps as [[ts,value],...] (the ?arrays query-string flag)
	// instead of the default object {"ts":value,...}.
	Arrays bool
	// MsResolution writes timestamps in milliseconds; otherwise they are
	// seconds, the milliseconds divided by 1000 (truncated), as OpenTSDB does.
	MsResolution bool
	// NaNIsNull writes NaN as JSON null (fill policy "null") instead of the
	// string "NaN".
	NaNIsNull bool
}

// Annotation is an OpenTSDB annotation as query results carry it.
type Annotation struct {
	TSUID       string // empty for a global annotation
	Description string
	Notes       string
	Custom      map[string]string // nil for none
	StartTime   int64             // Unix seconds
	EndTime     int64             // Unix seconds, 0 for none
}

// AppendJSON appends a in OpenTSDB's field names.
func (a *Annotation) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if a.TSUID != "" {
		dst = append(dst, `"tsuid":`...)
		dst = appendString(dst, a.TSUID)
		dst = append(dst, ',')
	}
	dst = append(dst, `"description":`...)
	dst = appendString(dst, a.Description)
	dst = append(dst, `,"notes":`...)
	dst = appendString(dst, a.Notes)
	if a.Custom != nil {
		dst = append(dst, `,"custom":`...)
		dst = appendStringMap(dst, a.Custom)
	}
	dst = append(dst, `,"startTime":`...)
	dst = strconv.AppendInt(dst, a.StartTime, 10)
	dst = append(dst, `,"endTime":`...)
	dst = strconv.AppendInt(dst, a.EndTime, 10)
	return append(dst, '}')
}

// QueryResult is one element of the /api/query response array, without its
// points.
type QueryResult struct {
	Metric        string
	Tags          []Tag    // written in this order
	AggregateTags []string // written in this order
	// Query is the sub-query echoed with showQuery; nil omits "query".
	Query *SubQuery
	// TSUIDs are written with showTSUIDs (the caller sorts them); nil omits
	// "tsuids".
	TSUIDs []string
	// Annotations are omitted when nil (and must be with noAnnotations);
	// GlobalAnnotations when empty.
	Annotations       []Annotation
	GlobalAnnotations []Annotation
	// Stats is a JSON object written as "stats" (showStats); nil omits it.
	Stats []byte
}

// AppendResult appends r and its points as one result object, in OpenTSDB's
// field order: metric, tags, aggregateTags, query, tsuids, annotations,
// globalAnnotations, dps, stats. The points must already be limited to the
// query's range.
func AppendResult(dst []byte, r *QueryResult, pts []chunk.Point, f ResultFormat) []byte {
	dst = AppendResultStart(dst, r, f)
	for i, p := range pts {
		dst = AppendResultPoint(dst, i == 0, p.T, p.V, f)
	}
	return AppendResultEnd(dst, r, f)
}

// AppendResultStart appends r's fields up to and including the opening of
// dps; follow it with AppendResultPoint for each point and AppendResultEnd.
// This lets a caller stream points without gathering them.
func AppendResultStart(dst []byte, r *QueryResult, f ResultFormat) []byte {
	dst = append(dst, `{"metric":`...)
	dst = appendString(dst, r.Metric)
	dst = append(dst, `,"tags":{`...)
	for i, t := range r.Tags {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, t.Key)
		dst = append(dst, ':')
		dst = appendString(dst, t.Value)
	}
	dst = append(dst, `},"aggregateTags":`...)
	dst = appendStrings(dst, r.AggregateTags)
	if r.Query != nil {
		dst = append(dst, `,"query":`...)
		dst = r.Query.AppendJSON(dst)
	}
	if r.TSUIDs != nil {
		dst = append(dst, `,"tsuids":`...)
		dst = appendStrings(dst, r.TSUIDs)
	}
	if r.Annotations != nil {
		dst = append(dst, `,"annotations":[`...)
		for i := range r.Annotations {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = r.Annotations[i].AppendJSON(dst)
		}
		dst = append(dst, ']')
	}
	if len(r.GlobalAnnotations) > 0 {
		dst = append(dst, `,"globalAnnotations":[`...)
		for i := range r.GlobalAnnotations {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = r.GlobalAnnotations[i].AppendJSON(dst)
		}
		dst = append(dst, ']')
	}
	if f.Arrays {
		return append(dst, `,"dps":[`...)
	}
	return append(dst, `,"dps":{`...)
}

// AppendResultPoint appends one point of dps; first says it is the first
// point of its result. t is Unix milliseconds.
func AppendResultPoint(dst []byte, first bool, t int64, v chunk.Value, f ResultFormat) []byte {
	if !first {
		dst = append(dst, ',')
	}
	if !f.MsResolution {
		t /= 1000
	}
	if f.Arrays {
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, t, 10)
		dst = append(dst, ',')
		dst = AppendValue(dst, v, f.NaNIsNull)
		return append(dst, ']')
	}
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, t, 10)
	dst = append(dst, '"', ':')
	return AppendValue(dst, v, f.NaNIsNull)
}

// AppendResultEnd closes dps, appends stats if any, and closes the result.
func AppendResultEnd(dst []byte, r *QueryResult, f ResultFormat) []byte {
	if f.Arrays {
		dst = append(dst, ']')
	} else {
		dst = append(dst, '}')
	}
	if r.Stats != nil {
		dst = append(dst, `,"stats":`...)
		dst = append(dst, r.Stats...)
	}
	return append(dst, '}')
}

// AppendStatsSummary appends the showSummary element, {"statsSummary":stats},
// that OpenTSDB puts last in the response array; stats is a JSON object.
func AppendStatsSummary(dst, stats []byte) []byte {
	dst = append(dst, `{"statsSummary":`...)
	dst = append(dst, stats...)
	return append(dst, '}')
}

// AppendValue appends v as a JSON value: an integer as a JSON integer, a
// finite float as a JSON number that keeps every bit and always reads back
// as a float (42.0, 1.5e-07, 1e+21), NaN as the string "NaN" (Jackson's
// default) or as null when nanIsNull, and ±Inf as the strings "Infinity" and
// "-Infinity" (Jackson's). Every form is valid JSON.
func AppendValue(dst []byte, v chunk.Value, nanIsNull bool) []byte {
	if v.IsInt() {
		return strconv.AppendInt(dst, v.Int(), 10)
	}
	f := v.Float()
	switch {
	case math.IsNaN(f):
		if nanIsNull {
			return append(dst, "null"...)
		}
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return appendFloat(dst, f)
}

// appendFloat appends a finite float in the shortest form that reads back to
// the same bits, as encoding/json chooses it (plain notation from 1e-6 to
// 1e21, exponent outside), with ".0" added to integral values so the number
// stays a float for a reader that cares.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
		// 1e-07 → 1e-7, as encoding/json does.
		if n := len(dst); n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
		return dst
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

// safeASCII marks the ASCII bytes a JSON string may hold unescaped.
// appendString appends s as a JSON string, as Jackson writes it (no HTML escapes).
func appendString(dst []byte, s string) []byte { return jsonw.AppendString(dst, s, false) }

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendStringMap appends m as a JSON object, keys sorted.
func appendStringMap(dst []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, m[k])
	}
	return append(dst, '}')
}
