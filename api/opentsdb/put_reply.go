package opentsdb

import (
	"strconv"

	"hourglass/internal/quote"
)

// echoMaxTags bounds the tags a ?details reply echoes of one point; the
// count of those left out follows as "…":"(N tags)". Names and values are
// bounded by quote.String.
const echoMaxTags = 64

// AppendDatapoint appends the point as OpenTSDB echoes it in a ?details
// reply, its IncomingDataPoint re-serialized:
// {"metric":"m","timestamp":1,"value":"42","tags":{"k":"v"}}, where value is
// always a string and absent fields are left out (timestamp is 0 when absent
// or unreadable). An element that was not an object is echoed as null. What
// it quotes is bounded: names and values by quote.String, tags by echoMaxTags.
func (e *PointError) AppendDatapoint(dst []byte) []byte {
	b := e.Raw
	if len(b) == 0 || b[0] != '{' {
		return append(dst, "null"...)
	}
	var (
		metric, value []byte
		ts            int64
		tags          []Tag
		ntags         int
		haveTags      bool
		buf           []byte
	)
	i := skipWS(b, 1)
	for i < len(b) && b[i] == '"' {
		ks, ke, kesc, nx, err := scanString(b, i)
		if err != nil {
			break
		}
		key := b[ks:ke]
		if kesc {
			key = unescape(nil, key)
		}
		i = skipWS(b, nx)
		if i >= len(b) || b[i] != ':' {
			break
		}
		i = skipWS(b, i+1)
		switch string(key) {
		case "metric", "value", "timestamp":
			text, kind, isNum, nx, err := scalar(b, i, &buf)
			if err != nil {
				return append(dst, "null"...)
			}
			i = nx
			var t []byte
			if kind == kindText {
				if len(text) > quote.Max && string(key) != "timestamp" {
					t = []byte(quote.Bytes(text))
				} else {
					t = append([]byte{}, text...)
				}
			}
			switch string(key) {
			case "metric":
				metric = t
			case "value":
				value = t
			default:
				ts = 0
				if t != nil {
					if v, ok := parseTimestampField(t, isNum); ok {
						ts = v
					}
				}
			}
		case "tags":
			tags, haveTags, ntags = tags[:0], false, 0
			if i < len(b) && b[i] == '{' {
				haveTags = true
				i = skipWS(b, i+1)
				for i < len(b) && b[i] == '"' {
					ks, ke, kesc, nx, err := scanString(b, i)
					if err != nil {
						return append(dst, "null"...)
					}
					k := b[ks:ke]
					if kesc {
						k = unescape(nil, k)
					}
					i = skipWS(b, nx)
					if i >= len(b) || b[i] != ':' {
						return append(dst, "null"...)
					}
					text, kind, _, nx2, err := scalar(b, skipWS(b, i+1), &buf)
					if err != nil {
						return append(dst, "null"...)
					}
					if kind == kindText {
						if len(tags) < echoMaxTags {
							tags = append(tags, Tag{Key: quote.Bytes(k), Value: quote.Bytes(text)})
						}
						ntags++
					}
					i = skipWS(b, nx2)
					if i < len(b) && b[i] == ',' {
						i = skipWS(b, i+1)
					}
				}
				i++ // '}'
			} else {
				nx, err := skipValue(b, i, 1)
				if err != nil {
					return append(dst, "null"...)
				}
				i = nx
			}
		default:
			nx, err := skipValue(b, i, 1)
			if err != nil {
				return append(dst, "null"...)
			}
			i = nx
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
		}
	}

	dst = append(dst, '{')
	if metric != nil {
		dst = append(dst, `"metric":`...)
		dst = appendString(dst, string(metric))
		dst = append(dst, ',')
	}
	dst = append(dst, `"timestamp":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	if value != nil {
		dst = append(dst, `,"value":`...)
		dst = appendString(dst, string(value))
	}
	if haveTags {
		dst = append(dst, `,"tags":{`...)
		for j, t := range tags {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, t.Key)
			dst = append(dst, ':')
			dst = appendString(dst, t.Value)
		}
		if ntags > len(tags) {
			dst = append(dst, `,"…":"(`...)
			dst = strconv.AppendInt(dst, int64(ntags), 10)
			dst = append(dst, ` tags)"`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// AppendPutSummary appends the reply of /api/put?summary or ?details:
// {"success":N,"failed":M} plus "timeouts" when timeouts >= 0 (OpenTSDB
// writes it when sync_timeout > 0), plus, when details is not nil,
// "errors":[{"datapoint":{...},"error":"message"},...].
func AppendPutSummary(dst []byte, success, failed, timeouts int, details []*PointError) []byte {
	dst = append(dst, `{"success":`...)
	dst = strconv.AppendInt(dst, int64(success), 10)
	dst = append(dst, `,"failed":`...)
	dst = strconv.AppendInt(dst, int64(failed), 10)
	if timeouts >= 0 {
		dst = append(dst, `,"timeouts":`...)
		dst = strconv.AppendInt(dst, int64(timeouts), 10)
	}
	if details != nil {
		dst = append(dst, `,"errors":[`...)
		for i, e := range details {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"datapoint":`...)
			dst = e.AppendDatapoint(dst)
			dst = append(dst, `,"error":`...)
			dst = appendString(dst, e.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
