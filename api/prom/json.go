package prom

import (
	"hourglass/api/jsonw"
	"math"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// The JSON of Prometheus' HTTP API (web/api/v1/json_codec.go and
// util/jsonutil), written with appenders:
//
//	{"status":"success","data":<data>,"warnings":[...],"infos":[...]}
//	{"status":"error","errorType":"bad_data","error":"..."}
//
// Sample timestamps are Unix seconds with up to three decimals; sample
// values are strings ("1.5", "NaN", "+Inf", "-Inf"), which is what Grafana's
// parser requires.

// Error types of the API and the statuses Prometheus answers them with.
const (
	ErrorBadData     = "bad_data"    // 400
	ErrorExecution   = "execution"   // 422
	ErrorTimeout     = "timeout"     // 503
	ErrorCanceled    = "canceled"    // 499
	ErrorInternal    = "internal"    // 500
	ErrorUnavailable = "unavailable" // 503 here: the storage asks the client to retry
	ErrorNotFound    = "not_found"   // 404
	ErrorNotAccept   = "not_acceptable"
)

// AppendSuccessStart appends the envelope up to the data: {"status":"success","data":
func AppendSuccessStart(dst []byte) []byte {
	return append(dst, `{"status":"success","data":`...)
}

// AppendSuccessEnd closes an envelope opened by AppendSuccessStart, with
// the warnings and infos if there are any.
func AppendSuccessEnd(dst []byte, warnings, infos []string) []byte {
	if len(warnings) > 0 {
		dst = append(dst, `,"warnings":`...)
		dst = AppendStrings(dst, warnings)
	}
	if len(infos) > 0 {
		dst = append(dst, `,"infos":`...)
		dst = AppendStrings(dst, infos)
	}
	return append(dst, '}')
}

// AppendError appends an error envelope.
func AppendError(dst []byte, errorType, msg string) []byte {
	dst = append(dst, `{"status":"error","errorType":`...)
	dst = AppendString(dst, errorType)
	dst = append(dst, `,"error":`...)
	dst = AppendString(dst, msg)
	return append(dst, '}')
}

// AppendQueryData appends {"resultType":"<type>","result":<value>} for the
// value of a PromQL query.
func AppendQueryData(dst []byte, v parser.Value) []byte {
	dst = slices.Grow(dst, querySize(v))
	dst = append(dst, `{"resultType":`...)
	dst = AppendString(dst, string(v.Type()))
	dst = append(dst, `,"result":`...)
	dst = AppendValue(dst, v)
	return append(dst, '}')
}

// querySize is about the bytes AppendQueryData writes for v, so that the
// answer is written into one buffer of its size instead of one that grows
// (and is copied) as it fills: a point takes about 24 bytes ("[t,"v"]," with
// a 10-digit timestamp and a short value), a series' labels about 128.
func querySize(v parser.Value) int {
	switch x := v.(type) {
	case promql.Matrix:
		n := 64
		for i := range x {
			n += 128 + 24*len(x[i].Floats) + 256*len(x[i].Histograms)
		}
		return n
	case promql.Vector:
		return 64 + 160*len(x)
	}
	return 64
}

// AppendValue appends a PromQL value as the API writes it.
func AppendValue(dst []byte, v parser.Value) []byte {
	switch x := v.(type) {
	case promql.Matrix:
		dst = append(dst, '[')
		var tc tsCache
		for i := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendSeries(dst, &x[i], &tc)
		}
		return append(dst, ']')
	case promql.Vector:
		dst = append(dst, '[')
		for i := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendSample(dst, &x[i])
		}
		return append(dst, ']')
	case promql.Scalar:
		dst = append(dst, '[')
		dst = appendJSONFloat(dst, float64(x.T)/1000)
		dst = append(dst, ',', '"')
		dst = strconv.AppendFloat(dst, x.V, 'f', -1, 64)
		return append(dst, '"', ']')
	case promql.String:
		dst = append(dst, '[')
		dst = appendJSONFloat(dst, float64(x.T)/1000)
		dst = append(dst, ',')
		dst = AppendString(dst, x.V)
		return append(dst, ']')
	}
	return append(dst, "null"...)
}

// AppendSeries appends one series of a matrix: {"metric":{...},"values":[[t,"v"],...]}
// with "histograms" for histogram points; an empty list is left out.
func AppendSeries(dst []byte, s *promql.Series) []byte { return appendSeries(dst, s, nil) }

// tsCache holds the timestamps of a matrix's first series with points,
// written: the series of a range query share their steps, so the others'
// timestamps are mostly copied from here instead of formatted again.
type tsCache struct {
	t    []int64
	end  []int // text of t[i]: text[end[i-1]:end[i]]
	text []byte
	done bool // filled: a series' points were all seen
}

// appendTimestamp appends t, the i-th point's timestamp of a series,
// through c when not nil.
func (c *tsCache) appendTimestamp(dst []byte, i int, t int64) []byte {
	if c == nil {
		return AppendTimestamp(dst, t)
	}
	if i < len(c.t) {
		if c.t[i] == t {
			lo := 0
			if i > 0 {
				lo = c.end[i-1]
			}
			return append(dst, c.text[lo:c.end[i]]...)
		}
		return AppendTimestamp(dst, t)
	}
	if c.done || i != len(c.t) {
		return AppendTimestamp(dst, t)
	}
	start := len(dst)
	dst = AppendTimestamp(dst, t)
	c.text = append(c.text, dst[start:]...)
	c.t = append(c.t, t)
	c.end = append(c.end, len(c.text))
	return dst
}

func appendSeries(dst []byte, s *promql.Series, tc *tsCache) []byte {
	dst = append(dst, `{"metric":`...)
	dst = AppendLabelSet(dst, s.Metric)
	if len(s.Floats) > 0 {
		dst = append(dst, `,"values":[`...)
		for i, p := range s.Floats {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = tc.appendTimestamp(dst, i, p.T)
			dst = append(dst, ',')
			dst = AppendFloat(dst, p.F)
			dst = append(dst, ']')
		}
		dst = append(dst, ']')
		if tc != nil && len(tc.t) > 0 {
			tc.done = true
		}
	}
	if len(s.Histograms) > 0 {
		dst = append(dst, `,"histograms":[`...)
		for i, p := range s.Histograms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = AppendTimestamp(dst, p.T)
			dst = append(dst, ',')
			dst = AppendHistogram(dst, p.H)
			dst = append(dst, ']')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// AppendSample appends one sample of a vector: {"metric":{...},"value":[t,"v"]}
// or, for a histogram, "histogram":[t,{...}].
func AppendSample(dst []byte, s *promql.Sample) []byte {
	dst = append(dst, `{"metric":`...)
	dst = AppendLabelSet(dst, s.Metric)
	if s.H == nil {
		dst = append(dst, `,"value":`...)
		dst = AppendPoint(dst, s.T, s.F)
	} else {
		dst = append(dst, `,"histogram":[`...)
		dst = AppendTimestamp(dst, s.T)
		dst = append(dst, ',')
		dst = AppendHistogram(dst, s.H)
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// AppendPoint appends [t,"v"].
func AppendPoint(dst []byte, t int64, v float64) []byte {
	dst = append(dst, '[')
	dst = AppendTimestamp(dst, t)
	dst = append(dst, ',')
	dst = AppendFloat(dst, v)
	return append(dst, ']')
}

// AppendLabelSet appends labels as a JSON object, in their order.
func AppendLabelSet(dst []byte, ls labels.Labels) []byte {
	dst = append(dst, '{')
	i := 0
	ls.Range(func(l labels.Label) {
		if i > 0 {
			dst = append(dst, ',')
		}
		i++
		dst = AppendString(dst, l.Name)
		dst = append(dst, ':')
		dst = AppendString(dst, l.Value)
	})
	return append(dst, '}')
}

// AppendTimestamp appends a timestamp in ms as seconds with up to three
// decimals, as jsonutil.MarshalTimestamp does.
func AppendTimestamp(dst []byte, t int64) []byte {
	u := uint64(t)
	if t < 0 {
		dst = append(dst, '-')
		u = uint64(-t) // math.MinInt64 stays itself as an unsigned: still right
	}
	dst = strconv.AppendUint(dst, u/1000, 10)
	if f := u % 1000; f != 0 {
		dst = append(dst, '.')
		if f < 100 {
			dst = append(dst, '0')
		}
		if f < 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendUint(dst, f, 10)
	}
	return dst
}

// AppendFloat appends a sample value as a JSON string, as
// jsonutil.MarshalFloat does: "NaN", "+Inf", "-Inf", otherwise the shortest
// decimal that reads back to the same float, in exponent form when tiny or huge.
func AppendFloat(dst []byte, f float64) []byte {
	dst = append(dst, '"')
	if d, ok := appendHundredths(dst, f); ok {
		return append(d, '"')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	return append(dst, '"')
}

// appendHundredths appends f as strconv.AppendFloat(dst, f, 'f', -1, 64)
// does when f is a whole number of hundredths m/100 other than 0, |f| <
// 1e12 (gauges written with two decimals, counts), without its shortest-
// digits search: float64(m)/100 is the float nearest the decimal m/100,
// which is what parsing that decimal gives, so the decimal reads back to
// f; and no decimal with as few digits or fewer does: any such is a
// multiple of 0.01 too (or of 0.001 beside a power of ten), at least 0.001
// from f's decimal, while below 1e12 floats are less than 2^-13 apart. The
// decimal is then the shortest, and the only one of its length.
func appendHundredths(dst []byte, f float64) ([]byte, bool) {
	if !(f > -1e12 && f < 1e12) || f == 0 {
		return dst, false
	}
	m := math.Round(f * 100)
	if m/100 != f {
		return dst, false
	}
	n := int64(m)
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	dst = strconv.AppendInt(dst, n/100, 10)
	if r := n % 100; r != 0 {
		dst = append(dst, '.', byte('0'+r/10))
		if r%10 != 0 {
			dst = append(dst, byte('0'+r%10))
		}
	}
	return dst, true
}

// appendJSONFloat appends f as encoding/json writes a float64 number.
func appendJSONFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...) // cannot happen for a timestamp
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(dst) - start; n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// AppendHistogram appends a native histogram as jsonutil.MarshalHistogram does.
func AppendHistogram(dst []byte, h *histogram.FloatHistogram) []byte {
	dst = append(dst, `{"count":`...)
	dst = AppendFloat(dst, h.Count)
	dst = append(dst, `,"sum":`...)
	dst = AppendFloat(dst, h.Sum)
	found := false
	it := h.AllBucketIterator()
	for it.Next() {
		b := it.At()
		if b.Count == 0 {
			continue
		}
		if !found {
			dst = append(dst, `,"buckets":[`...)
		} else {
			dst = append(dst, ',')
		}
		found = true
		boundaries := 2
		if b.LowerInclusive {
			if b.UpperInclusive {
				boundaries = 3
			} else {
				boundaries = 1
			}
		} else if b.UpperInclusive {
			boundaries = 0
		}
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, int64(boundaries), 10)
		dst = append(dst, ',')
		dst = AppendFloat(dst, b.Lower)
		dst = append(dst, ',')
		dst = AppendFloat(dst, b.Upper)
		dst = append(dst, ',')
		dst = AppendFloat(dst, b.Count)
		dst = append(dst, ']')
	}
	if found {
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// AppendStrings appends a JSON array of strings.
func AppendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// AppendString appends s as a JSON string exactly as encoding/json writes
// it: HTML characters escaped, invalid UTF-8 as U+FFFD, so the output is
// always valid JSON. (Prometheus escapes lists this way and label sets
// without the HTML escapes; both parse to the same strings.)
func AppendString(dst []byte, s string) []byte { return jsonw.AppendString(dst, s, true) }
