package opentsdb

import (
	"bytes"
	"math"
	"strconv"

	"hourglass/chunk"
)

// PutDecoder decodes /api/put bodies. It is the fast path of the write API:
// a hand-written scanner over the body that allocates nothing per point once
// it has seen a body's names (see ParsePut). The zero value is ready to use
// with default Limits. A PutDecoder may be reused for many bodies, one at a
// time; it is not safe for concurrent use (keep one per goroutine or in a
// sync.Pool).
type PutDecoder struct {
	Limits Limits

	dp     DataPoint
	intern interner
	// memo holds the previous point's tags by position, with their
	// validity: tag keys (and many values) repeat in place from one point
	// to the next, and a comparison is cheaper than interning.
	memo    []tagMemo
	memoLen int // the name length limit memo's validity was computed for
	// tagSets holds the tags objects that decoded without a message, by
	// their bytes: a series' tags are sent the same way every time.
	tagSets seriesCache
	// curTags is the tagSets entry of the point being decoded or
	// reported, nil if its tags are not remembered.
	curTags *seriesEntry
	// reporting says fn is running for a good point: Ref and SetRef work.
	reporting bool
	raw       []byte // the element being reported
	strBuf    []byte // unescaped strings, reused
	valBuf    []byte // an unescaped value string, reused
	keyBuf    []byte // an unescaped object key, reused
	// pastMax counts the pairs of the point's tags object after the first
	// Limits.MaxTags+1, which are skipped unread: a point with too many
	// tags costs a scan, not an intern and a duplicate check per pair.
	pastMax int
}

type tagMemo struct {
	key, value           string
	keyValid, valueValid bool
}

// ParsePut decodes an /api/put body with a fresh PutDecoder; see
// PutDecoder.Decode.
func ParsePut(body []byte, l Limits, fn func(i int, dp *DataPoint, err error) error) error {
	d := PutDecoder{Limits: l}
	return d.Decode(body, fn)
}

// Decode decodes body, one JSON object or an array of them, and calls fn once
// per point, in order, with i its index in the body and either the decoded,
// validated point (err nil) or the point's *PointError. A bad point does not
// stop its neighbours. If fn returns an error, Decode stops and returns it.
//
// Decode returns a *RequestError for the body as a whole, with OpenTSDB's
// message: ErrMissingContent for an empty (or all-space) body,
// ErrNotObjectOrArray, ErrUnparseableJSON for malformed JSON, and
// ErrNoDataPoints for an empty array. OpenTSDB then rejects every point of
// the body; as Decode reports points while it reads, fn's caller must hold
// what it was given until Decode returns nil, and drop it otherwise.
//
// dp and dp.Tags are reused for the next point: copy what you keep (the
// strings themselves are immutable and may be kept).
//
// Fields, as OpenTSDB's IncomingDataPoint (unknown fields are ignored; a
// repeated field keeps its last value):
//   - metric: a string (a number or boolean is taken as its text).
//   - timestamp: an integer, or a string holding one; a number with a
//     fraction or exponent is truncated toward zero (Jackson's
//     ACCEPT_FLOAT_AS_INT). Above 2^32-1 it is milliseconds, otherwise
//     seconds; it must be > 0 and at most 9999999999999 ms.
//   - value: a number, or a string holding one. Without '.', 'e' or 'E' it is
//     an int64 (at most 19 digits, exact); otherwise a float64, parsed exactly
//     (decimal notation only). NaN and ±Inf are rejected.
//   - tags: an object of at least one pair; numbers and booleans are taken as
//     their text.
//
// Per-point messages, in this order: "Metric name was empty", "Invalid
// timestamp", "Empty value", "Missing tags", "Unable to parse value to a
// number", then those of DataPoint.Validate. hourglass adds "Unexpected null
// datapoint encountered in set." (OpenTSDB's text for a null element) and
// "Invalid data point: not an object", "Invalid metric name: not a string",
// "Invalid tags: not an object" and "Invalid tag value with key [k]: not a
// string" where OpenTSDB would reject the whole body.
func (d *PutDecoder) Decode(body []byte, fn func(i int, dp *DataPoint, err error) error) error {
	if l := d.Limits.maxNameLen(); l != d.memoLen {
		d.memo, d.memoLen = d.memo[:0], l
	}
	i := skipWS(body, 0)
	if i == len(body) {
		return ErrMissingContent
	}
	switch body[i] {
	case '{':
		next, err := d.element(body, i, 0, fn)
		if err != nil {
			return err
		}
		if skipWS(body, next) != len(body) {
			return ErrUnparseableJSON
		}
		return nil
	case '[':
		i = skipWS(body, i+1)
		if i < len(body) && body[i] == ']' {
			if skipWS(body, i+1) != len(body) {
				return ErrUnparseableJSON
			}
			return ErrNoDataPoints
		}
		for n := 0; ; n++ {
			next, err := d.element(body, i, n, fn)
			if err != nil {
				return err
			}
			i = skipWS(body, next)
			if i >= len(body) {
				return ErrUnparseableJSON
			}
			if body[i] == ']' {
				if skipWS(body, i+1) != len(body) {
					return ErrUnparseableJSON
				}
				return nil
			}
			if body[i] != ',' {
				return ErrUnparseableJSON
			}
			i = skipWS(body, i+1)
		}
	default:
		return ErrNotObjectOrArray
	}
}

// element decodes the array element at b[i] and reports it to fn.
func (d *PutDecoder) element(b []byte, i, n int, fn func(int, *DataPoint, error) error) (int, error) {
	if i >= len(b) {
		return 0, ErrUnparseableJSON
	}
	var (
		next int
		msg  string
		err  error
	)
	switch b[i] {
	case '{':
		next, msg, err = d.point(b, i)
	case 'n':
		next, err = scanLiteral(b, i, "null")
		msg = "Unexpected null datapoint encountered in set."
	default:
		next, err = skipValue(b, i, 1)
		msg = "Invalid data point: not an object"
	}
	if err != nil {
		return 0, ErrUnparseableJSON
	}
	d.raw = b[i:next:next]
	if msg != "" {
		err = fn(n, nil, &PointError{Index: n, Message: msg, Raw: d.raw})
	} else {
		d.reporting = true
		err = fn(n, &d.dp, nil)
		d.reporting = false
	}
	d.raw = nil
	return next, err
}

// Ref returns what SetRef attached to the series (the metric, and the tags
// object exactly as written) of the point being reported, while Decode's fn
// runs for a good point; nil otherwise, or if nothing was attached or the
// decoder had forgotten the series.
func (d *PutDecoder) Ref() any {
	if !d.reporting || d.curTags == nil {
		return nil
	}
	return d.curTags.refs[d.dp.Metric]
}

// SetRef attaches v to the series of the point being reported, for as long
// as the decoder remembers its tags; Ref returns it for every later point of
// the series. A handler keeps there its own form of the series (the
// storage's name for it, say), so a series sent again costs one lookup in
// all. It does nothing outside fn, for a point with an error, or past the
// decoder's bound on what it remembers.
func (d *PutDecoder) SetRef(v any) {
	if !d.reporting || d.curTags == nil {
		return
	}
	d.tagSets.setRef(d.curTags, d.dp.Metric, v)
}

// Raw returns the JSON of the point being reported, exactly as sent, while
// Decode's fn runs (nil otherwise). It aliases the body. A handler uses it
// to echo a point that decoded well but failed later (an unknown metric, a
// storage error) in a ?details reply: PointError{Raw: Raw()}.
func (d *PutDecoder) Raw() []byte { return d.raw }

// JSON value kinds, as far as a point's fields care.
const (
	kindAbsent = iota // missing or null
	kindText          // a string, number or boolean: the text is usable
	kindOther         // an object or array
)

// scalar decodes the value at b[i] for a field that wants text. Strings with
// escapes are unescaped into *buf. The returned text is valid until *buf is
// next used.
func scalar(b []byte, i int, buf *[]byte) (text []byte, kind int, isNum bool, next int, err error) {
	if i >= len(b) {
		return nil, 0, false, 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		s, e, esc, next, err := scanString(b, i)
		if err != nil {
			return nil, 0, false, 0, err
		}
		if esc {
			*buf = unescape((*buf)[:0], b[s:e])
			return *buf, kindText, false, next, nil
		}
		return b[s:e], kindText, false, next, nil
	case c == '-' || c >= '0' && c <= '9':
		next, _, err := scanNumber(b, i)
		if err != nil {
			return nil, 0, false, 0, err
		}
		return b[i:next], kindText, true, next, nil
	case c == 't' || c == 'f':
		lit := "true"
		if c == 'f' {
			lit = "false"
		}
		next, err := scanLiteral(b, i, lit)
		if err != nil {
			return nil, 0, false, 0, err
		}
		return b[i:next], kindText, false, next, nil
	case c == 'n':
		next, err := scanLiteral(b, i, "null")
		return nil, kindAbsent, false, next, err
	default:
		next, err := skipValue(b, i, 1)
		return nil, kindOther, false, next, err
	}
}

// point decodes the object at b[i] into d.dp and validates it. It returns
// the point's error message, or a syntax error for the whole body.
func (d *PutDecoder) point(b []byte, i int) (next int, msg string, err error) {
	dp := &d.dp
	dp.Metric, dp.Timestamp, dp.Value, dp.Tags = "", 0, chunk.Value{}, dp.Tags[:0]
	d.curTags, d.pastMax = nil, 0
	maxLen := d.Limits.maxNameLen()

	var (
		metricKind  = kindAbsent
		metricValid bool
		tsOK        bool
		tsRaw       int64
		valueKind   = kindAbsent
		valueEmpty  bool
		valueMsg    string
		tagsKind    = kindAbsent
		tagMsg      string
		tagsValid   = true
		text        []byte
		kind        int
		isNum       bool
	)

	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
		goto done
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, "", errSyntax
		}
		ks, ke, kesc, nx, err := scanString(b, i)
		if err != nil {
			return 0, "", err
		}
		key := b[ks:ke]
		if kesc {
			d.keyBuf = unescape(d.keyBuf[:0], key)
			key = d.keyBuf
		}
		i = skipWS(b, nx)
		if i >= len(b) || b[i] != ':' {
			return 0, "", errSyntax
		}
		i = skipWS(b, i+1)

		switch string(key) {
		case "metric":
			text, kind, _, i, err = scalar(b, i, &d.strBuf)
			if err != nil {
				return 0, "", err
			}
			metricKind = kind
			if kind == kindText && len(text) > 0 {
				dp.Metric, metricValid = d.intern.get(text, maxLen)
			} else {
				dp.Metric = ""
			}
		case "timestamp":
			text, kind, isNum, i, err = scalar(b, i, &d.strBuf)
			if err != nil {
				return 0, "", err
			}
			tsRaw, tsOK = 0, false
			if kind == kindText {
				tsRaw, tsOK = parseTimestampField(text, isNum)
			} else if kind == kindAbsent {
				tsOK = true // null is 0 to Jackson: "Invalid timestamp" below
			}
		case "value":
			text, kind, _, i, err = scalar(b, i, &d.valBuf)
			if err != nil {
				return 0, "", err
			}
			valueKind, valueEmpty, valueMsg = kind, false, ""
			switch {
			case kind == kindText && len(text) == 0:
				valueEmpty = true
			case kind == kindText:
				if v, m := parseValue(text); m != "" {
					valueMsg = "Unable to parse value to a number"
				} else {
					dp.Value = v
				}
			case kind == kindOther:
				valueMsg = "Unable to parse value to a number"
			}
		case "tags":
			if i, tagsKind, tagMsg, tagsValid, err = d.tagsField(b, i, maxLen); err != nil {
				return 0, "", err
			}
		default:
			i, err = skipValue(b, i, 1)
			if err != nil {
				return 0, "", err
			}
		}

		i = skipWS(b, i)
		if i >= len(b) {
			return 0, "", errSyntax
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return 0, "", errSyntax
		}
		i = skipWS(b, i+1)
	}

done:
	switch {
	case metricKind == kindOther:
		return i, "Invalid metric name: not a string", nil
	case dp.Metric == "":
		return i, "Metric name was empty", nil
	case !tsOK || tsRaw <= 0:
		return i, "Invalid timestamp", nil
	case valueKind == kindAbsent || valueEmpty:
		return i, "Empty value", nil
	case tagsKind == kindText && tagMsg != "":
		return i, tagMsg, nil
	case tagsKind == kindOther:
		return i, "Invalid tags: not an object", nil
	case len(dp.Tags) == 0:
		return i, "Missing tags", nil
	case d.pastMax > 0:
		return i, d.tooManyTags(), nil
	case valueMsg != "":
		return i, valueMsg, nil
	}
	dp.Timestamp = TimestampMillis(tsRaw)
	var err2 error
	if metricValid && d.curTags != nil && d.curTags.tagsOK {
		err2 = dp.validateValue() // validateSeries would pass: known from the tags
	} else {
		err2 = dp.validateRest(d.Limits, metricValid && tagsValid)
	}
	if err2 != nil {
		return i, err2.(*PointError).Message, nil
	}
	return i, "", nil
}

// tagsField decodes the value of a point's "tags" field at b[i].
func (d *PutDecoder) tagsField(b []byte, i, maxLen int) (next, kind int, msg string, valid bool, err error) {
	d.dp.Tags, d.curTags, d.pastMax = d.dp.Tags[:0], nil, 0
	if i < len(b) && b[i] == '{' {
		next, valid, err = d.tagsCached(b, i, maxLen, &msg)
		return next, kindText, msg, valid, err
	}
	_, kind, _, next, err = scalar(b, i, &d.strBuf)
	if kind == kindText {
		kind = kindOther // a string, number or boolean
	}
	return next, kind, "", true, err
}

// tooManyTags is the message of a point whose tags went past the limit.
func (d *PutDecoder) tooManyTags() string {
	return "Too many tags: " + strconv.Itoa(len(d.dp.Tags)+d.pastMax) + " maximum allowed: " +
		strconv.Itoa(d.Limits.maxTags()) + ", tags: " + formatTags(d.dp.Tags)
}

// tagsCached is tags, for an object sent before by its bytes.
//
// An object whose first '}' ends it (no '}' in its strings: the common
// case) is looked up without a scan: the bytes up to that '}' equal an
// object decoded before only if they are that whole object. Others are
// scanned to their end first.
func (d *PutDecoder) tagsCached(b []byte, i, maxLen int, msg *string) (next int, valid bool, err error) {
	if j := bytes.IndexByte(b[i:], '}'); j > 0 {
		if e := d.tagSets.get(b[i:i+j+1], d.Limits); e != nil {
			return d.tagsHit(e, i+j+1)
		}
	}
	if end, err := skipValue(b, i, 1); err == nil {
		if e := d.tagSets.get(b[i:end], d.Limits); e != nil {
			return d.tagsHit(e, end)
		}
	}
	next, *msg, valid, err = d.tags(b, i, maxLen)
	if err == nil && *msg == "" {
		d.curTags = d.tagSets.put(b[i:next], d.Limits, "", d.dp.Tags, valid)
		if d.curTags != nil {
			// The checks of validateSeries that depend on the tags alone.
			d.curTags.tagsOK = valid && (&DataPoint{Tags: d.curTags.tags}).validateSeries(d.Limits, true) == nil
		}
	}
	return next, valid, err
}

func (d *PutDecoder) tagsHit(e *seriesEntry, next int) (int, bool, error) {
	d.dp.Tags = append(d.dp.Tags[:0], e.tags...)
	d.curTags = e
	return next, e.valid, nil
}

// tags decodes the tags object at b[i] into d.dp.Tags, collapsing a pair sent
// twice. It returns a message for a tag value that is not text.
func (d *PutDecoder) tags(b []byte, i, maxLen int) (next int, msg string, valid bool, err error) {
	dp := &d.dp
	valid = true
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, "", true, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, "", false, errSyntax
		}
		ks, ke, kesc, nx, err := scanString(b, i)
		if err != nil {
			return 0, "", false, err
		}
		if len(dp.Tags) > d.Limits.maxTags() {
			// Too many already: the rest is scanned, not decoded.
			if i = skipWS(b, nx); i >= len(b) || b[i] != ':' {
				return 0, "", false, errSyntax
			}
			if i, err = skipValue(b, skipWS(b, i+1), 1); err != nil {
				return 0, "", false, err
			}
			d.pastMax++
			var end bool
			if i, end, err = nextMember(b, i); err != nil || end {
				return i, msg, valid, err
			}
			continue
		}
		pos := len(dp.Tags)
		if pos == len(d.memo) {
			d.memo = append(d.memo, tagMemo{})
		}
		memo := &d.memo[pos]
		var k string
		var kv bool
		switch {
		case kesc:
			d.strBuf = unescape(d.strBuf[:0], b[ks:ke])
			k, kv = d.intern.get(d.strBuf, maxLen)
		case memo.key == string(b[ks:ke]) && memo.key != "":
			k, kv = memo.key, memo.keyValid
		default:
			k, kv = d.intern.get(b[ks:ke], maxLen)
			memo.key, memo.keyValid = k, kv
		}
		i = skipWS(b, nx)
		if i >= len(b) || b[i] != ':' {
			return 0, "", false, errSyntax
		}
		i = skipWS(b, i+1)
		text, kind, _, nx2, err := scalar(b, i, &d.strBuf)
		if err != nil {
			return 0, "", false, err
		}
		i = nx2
		switch kind {
		case kindText:
			var v string
			var vv bool
			if memo.value == string(text) && memo.value != "" {
				v, vv = memo.value, memo.valueValid
			} else {
				v, vv = d.intern.get(text, maxLen)
				memo.value, memo.valueValid = v, vv
			}
			valid = valid && kv && vv
			dup := false
			for _, t := range dp.Tags {
				if t.Key == k && t.Value == v {
					dup = true
					break
				}
			}
			if !dup {
				dp.Tags = append(dp.Tags, Tag{Key: k, Value: v})
			}
		case kindAbsent:
			if msg == "" {
				msg = "Invalid tag value with key [" + shorten(k) + "]: null"
			}
		default:
			if msg == "" {
				msg = "Invalid tag value with key [" + shorten(k) + "]: not a string"
			}
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, "", false, errSyntax
		}
		if b[i] == '}' {
			return i + 1, msg, valid, nil
		}
		if b[i] != ',' {
			return 0, "", false, errSyntax
		}
		i = skipWS(b, i+1)
	}
}

// nextMember reads what follows an object member at b[i]: the object's end
// (end, next after the '}') or a ',' (next at the following member).
func nextMember(b []byte, i int) (next int, end bool, err error) {
	i = skipWS(b, i)
	switch {
	case i >= len(b):
		return 0, false, errSyntax
	case b[i] == '}':
		return i + 1, true, nil
	case b[i] != ',':
		return 0, false, errSyntax
	}
	return skipWS(b, i+1), false, nil
}

// parseTimestampField parses a JSON timestamp: a number (a fraction or
// exponent truncated toward zero, as Jackson does for a long) or a string
// holding an integer (trimmed, as Jackson does).
func parseTimestampField(text []byte, isNum bool) (int64, bool) {
	if !isNum {
		text = trimSpace(text)
		if len(text) == 0 {
			return 0, true // "" is 0 to Jackson
		}
	}
	if looksLikeInteger(text) {
		v, msg := parseLong(text)
		return v, msg == ""
	}
	if !isNum {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafeString(text), 64)
	if err != nil || f != f || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
