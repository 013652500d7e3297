package opentsdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"

	"hourglass/internal/quote"
)

// OpenTSDB 2.4 histograms in the simple bucket form (SimpleHistogram):
// /api/histogram's JSON ("buckets" {"low,high": count}, "underflow",
// "overflow") and the telnet histogram command ("u=<n>:o=<n>:<lo>,<hi>=<count>:...").
// The binary form (a codec "id" and a base64 "value") is refused with a
// message naming the form this server reads.

// CmdHistogram is the telnet histogram command.
const CmdHistogram = "histogram"

// DefaultMaxHistogramBuckets is OpenTSDB's bound on the buckets of one
// histogram point (HistogramDataPointRpc: at most 100).
const DefaultMaxHistogramBuckets = 100

// HistogramBucket is one bucket: observations in [Low, High).
type HistogramBucket struct {
	Low, High float64
	Count     int64
}

// HistogramPoint is one histogram point in the simple bucket form.
type HistogramPoint struct {
	Metric    string
	Timestamp int64 // Unix milliseconds (the seconds-or-milliseconds rule applied)
	Tags      []Tag
	Buckets   []HistogramBucket // sorted by Low, not overlapping (after Validate)
	Underflow int64             // observations below the first bucket
	Overflow  int64             // observations at or above the last bucket's High
}

// ErrBinaryHistogram is the message for the binary form, which this server
// does not decode (it knows no codec ids).
const ErrBinaryHistogram = `The binary histogram form ("id" and a base64 "value") is not supported: ` +
	`send the simple bucket form, "buckets" ({"low,high": count}) with "underflow" and "overflow"`

// histogramJSON is a point of an /api/histogram body.
type histogramJSON struct {
	Metric    string            `json:"metric"`
	Timestamp json.RawMessage   `json:"timestamp"`
	Tags      map[string]string `json:"tags"`
	ID        json.RawMessage   `json:"id"`
	Value     json.RawMessage   `json:"value"`
	Buckets   json.RawMessage   `json:"buckets"`
	Underflow json.RawMessage   `json:"underflow"`
	Overflow  json.RawMessage   `json:"overflow"`
}

// ParseHistogramJSON decodes an /api/histogram body, one object or an
// array of them, and calls fn for every point in order with the point or
// its *PointError (a point with more than maxBuckets buckets, 0 meaning
// DefaultMaxHistogramBuckets, is refused before its buckets are read). A
// body that is not JSON, or not an object or array, is a *RequestError
// and fn is not called. fn's error stops the decoding and is returned.
func ParseHistogramJSON(body []byte, l Limits, maxBuckets int, fn func(i int, hp *HistogramPoint, err error) error) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ErrMissingContent
	}
	var elems []json.RawMessage
	switch body[0] {
	case '{':
		elems = []json.RawMessage{body}
		if !json.Valid(body) {
			return ErrUnparseableJSON
		}
	case '[':
		if err := json.Unmarshal(body, &elems); err != nil {
			return ErrUnparseableJSON
		}
		if len(elems) == 0 {
			return ErrNoDataPoints
		}
	default:
		return ErrNotObjectOrArray
	}
	if maxBuckets <= 0 {
		maxBuckets = DefaultMaxHistogramBuckets
	}
	var hp HistogramPoint
	for i, e := range elems {
		err := hp.fromJSON(e, l, maxBuckets)
		if pe, ok := err.(*PointError); ok {
			pe.Index = i
		}
		if err := fn(i, &hp, err); err != nil {
			return err
		}
	}
	return nil
}

func pointErr(format string, args ...any) error {
	return &PointError{Message: quote.Message(fmt.Sprintf(format, args...))}
}

func (hp *HistogramPoint) fromJSON(b []byte, l Limits, maxBuckets int) error {
	*hp = HistogramPoint{Tags: hp.Tags[:0], Buckets: hp.Buckets[:0]}
	var j histogramJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return pointErr("Unable to parse the histogram point: %v", err)
	}
	if len(j.Value) > 0 || len(j.ID) > 0 {
		return &PointError{Message: ErrBinaryHistogram}
	}
	hp.Metric = j.Metric
	ts, ok := parseTimestampField(bytes.Trim(j.Timestamp, `"`), len(j.Timestamp) > 0 && j.Timestamp[0] != '"')
	if !ok {
		return &PointError{Message: "Invalid timestamp"}
	}
	hp.Timestamp = TimestampMillis(ts)
	for k, v := range j.Tags {
		hp.Tags = append(hp.Tags, Tag{Key: k, Value: v})
	}
	slices.SortFunc(hp.Tags, func(a, b Tag) int { return strings.Compare(a.Key, b.Key) })
	var err error
	if hp.Underflow, err = countField("underflow", j.Underflow); err != nil {
		return err
	}
	if hp.Overflow, err = countField("overflow", j.Overflow); err != nil {
		return err
	}
	if len(j.Buckets) == 0 || string(j.Buckets) == "null" {
		return &PointError{Message: `Missing "buckets": a histogram point needs {"low,high": count, ...}`}
	}
	if err := hp.jsonBuckets(j.Buckets, maxBuckets); err != nil {
		return err
	}
	return hp.Validate(l)
}

// jsonBuckets reads the "buckets" object, refusing it once it holds more
// than maxBuckets members.
func (hp *HistogramPoint) jsonBuckets(b []byte, maxBuckets int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return &PointError{Message: `"buckets" must be an object {"low,high": count, ...}`}
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return pointErr("Unable to parse \"buckets\": %v", err)
		}
		if len(hp.Buckets) >= maxBuckets {
			return pointErr("Too many buckets: more than %d in one histogram point (-histogram-max-buckets)", maxBuckets)
		}
		var n json.Number
		if err := dec.Decode(&n); err != nil {
			return pointErr("bucket %q: the count must be a number", kt)
		}
		bk, err := parseBucket(kt.(string), n.String())
		if err != nil {
			return err
		}
		hp.Buckets = append(hp.Buckets, bk)
	}
	return nil
}

func countField(name string, raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.Trim(string(raw), `"`), 10, 64)
	if err != nil || v < 0 {
		return 0, pointErr("%q must be a count, an integer of 0 or more: %s", name, quote.Bytes(raw))
	}
	return v, nil
}

// parseBucket reads "low,high" and a count.
func parseBucket(key, count string) (HistogramBucket, error) {
	lo, hi, ok := strings.Cut(key, ",")
	if !ok {
		return HistogramBucket{}, pointErr("bucket %q: the key must be \"low,high\"", key)
	}
	l, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	h, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if err1 != nil || err2 != nil {
		return HistogramBucket{}, pointErr("bucket %q: low and high must be numbers", key)
	}
	c, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
	if err != nil || c < 0 {
		return HistogramBucket{}, pointErr("bucket %q: the count %q must be an integer of 0 or more", key, count)
	}
	return HistogramBucket{Low: l, High: h, Count: c}, nil
}

// Validate checks the point's metric, timestamp and tags as DataPoint's
// Validate does, then its buckets: finite bounds with Low < High, none
// overlapping another (it sorts them by Low), a total count that fits an
// int64. Errors are *PointError.
func (hp *HistogramPoint) Validate(l Limits) error {
	dp := DataPoint{Metric: hp.Metric, Timestamp: hp.Timestamp, Tags: hp.Tags}
	if err := dp.Validate(l); err != nil {
		return err
	}
	if len(hp.Buckets) == 0 {
		return &PointError{Message: "A histogram point needs at least one bucket"}
	}
	slices.SortFunc(hp.Buckets, func(a, b HistogramBucket) int {
		switch {
		case a.Low < b.Low:
			return -1
		case a.Low > b.Low:
			return 1
		}
		return 0
	})
	total := hp.Underflow
	for i, b := range hp.Buckets {
		if math.IsNaN(b.Low) || math.IsInf(b.Low, 0) || math.IsNaN(b.High) || math.IsInf(b.High, 0) || b.Low >= b.High {
			return pointErr("bucket [%v, %v): the bounds must be finite numbers, low below high", b.Low, b.High)
		}
		if i > 0 && hp.Buckets[i-1].High > b.Low {
			return pointErr("buckets [%v, %v) and [%v, %v) overlap", hp.Buckets[i-1].Low, hp.Buckets[i-1].High, b.Low, b.High)
		}
		if total += b.Count; total < 0 {
			return &PointError{Message: "The counts add up to more than an int64 holds"}
		}
	}
	if total += hp.Overflow; total < 0 {
		return &PointError{Message: "The counts add up to more than an int64 holds"}
	}
	return nil
}

// Native returns the point as a Prometheus native histogram with custom
// buckets (schema -53), the form it is stored in: the bounds are the
// buckets' edges, so the underflow is the bucket up to the first Low, each
// bucket the one up to its High, and the overflow the +Inf bucket. A gap
// between two buckets has a bound (the next Low) but no bucket: the spans
// skip it, so it reads back as absent (OpenTSDB's showHistogramBuckets
// lists only the buckets sent), and as 0 to PromQL. Counts are exact; an
// observation on an edge stays in the bucket it was sent in (OpenTSDB's
// buckets hold their Low, Prometheus' their upper bound). OpenTSDB sends
// no sum; the sum stored is an estimate: each bucket's count times its
// midpoint, the underflow at the first Low, the overflow at the last High
// (a NaN sum would tell PromQL that NaN was observed).
// OpenTSDB's histograms hold one interval's observations each (they come
// pre-windowed; rates over them are not supported): they are gauge
// histograms (CounterResetHint GaugeType). The point must be valid.
func (hp *HistogramPoint) Native() *histogram.Histogram {
	bounds := make([]float64, 0, 2*len(hp.Buckets)+1)
	counts := make([]int64, 0, len(hp.Buckets)+2)
	spans := []histogram.Span{{Offset: 0, Length: 1}}
	bounds = append(bounds, hp.Buckets[0].Low)
	counts = append(counts, hp.Underflow)
	for i, b := range hp.Buckets {
		if i > 0 && hp.Buckets[i-1].High < b.Low {
			bounds = append(bounds, b.Low)
			spans = append(spans, histogram.Span{Offset: 1})
		}
		bounds = append(bounds, b.High)
		counts = append(counts, b.Count)
		spans[len(spans)-1].Length++
	}
	counts = append(counts, hp.Overflow)
	spans[len(spans)-1].Length++
	sum := float64(hp.Underflow)*hp.Buckets[0].Low + float64(hp.Overflow)*hp.Buckets[len(hp.Buckets)-1].High
	for _, b := range hp.Buckets {
		sum += float64(b.Count) * (b.Low + (b.High-b.Low)/2)
	}
	h := &histogram.Histogram{CounterResetHint: histogram.GaugeType, Schema: histogram.CustomBucketsSchema, Sum: sum, CustomValues: bounds,
		PositiveSpans: spans, PositiveBuckets: make([]int64, len(counts))}
	var prev int64
	for i, c := range counts {
		h.Count += uint64(c)
		h.PositiveBuckets[i], prev = c-prev, c
	}
	return h
}

// histLineErr is a telnet histogram reply line.
func histLineErr(kind, msg string) *LineError {
	return &LineError{Reply: "histogram: " + kind + ": " + quote.Message(msg)}
}

// ParseHistogramLine parses a telnet line
//
//	histogram <metric> <timestamp> <value> <tagk=tagv> [...]
//
// whose value is the simple form "u=<n>:o=<n>:<lo>,<hi>=<count>:..."
// (OpenTSDB's code separates with colons). A codec id before the value
// (the binary form) is refused with a message naming the simple form. On
// error it returns a *LineError whose text is the reply line, "histogram:
// illegal argument: ...".
func ParseHistogramLine(line []byte, l Limits, maxBuckets int, hp *HistogramPoint) error {
	if maxBuckets <= 0 {
		maxBuckets = DefaultMaxHistogramBuckets
	}
	*hp = HistogramPoint{Tags: hp.Tags[:0], Buckets: hp.Buckets[:0]}
	line = trimEOL(line)
	cmd, i := nextWord(line, 0)
	if string(cmd) != CmdHistogram {
		return &LineError{Reply: UnknownCommand(string(cmd))}
	}
	var words [][]byte
	for w, j := nextWord(line, i); len(w) > 0; w, j = nextWord(line, j) {
		if len(words) > 3+l.maxTags() {
			return histLineErr("illegal argument", "Too many tags: more than "+strconv.Itoa(l.maxTags()))
		}
		words = append(words, w)
	}
	if len(words) < 4 {
		return histLineErr("illegal argument", "not enough arguments (need least 5, got "+strconv.Itoa(len(words)+1)+")")
	}
	if _, err := strconv.ParseUint(string(words[2]), 10, 8); err == nil {
		return histLineErr("illegal argument", "a codec id: the binary histogram form is not supported; "+
			"send the simple form u=<underflow>:o=<overflow>:<low>,<high>=<count>:...")
	}
	ts, msg := parseLong(removeDotsIfAny(words[1]))
	if msg != "" {
		return histLineErr("invalid value", msg)
	}
	if ts <= 0 {
		return histLineErr("illegal argument", "invalid timestamp: "+strconv.FormatInt(ts, 10))
	}
	hp.Metric, hp.Timestamp = string(words[0]), TimestampMillis(ts)
	if err := hp.simpleValue(string(words[2]), maxBuckets); err != nil {
		return histLineErr("illegal argument", err.Error())
	}
	for _, w := range words[3:] {
		k, v, ok := strings.Cut(string(w), "=")
		if !ok || k == "" || v == "" || strings.Contains(v, "=") {
			return histLineErr("illegal argument", "invalid tag: "+quote.Bytes(w))
		}
		hp.Tags = append(hp.Tags, Tag{Key: k, Value: v})
	}
	if err := hp.Validate(l); err != nil {
		return histLineErr("illegal argument", err.Error())
	}
	return nil
}

func removeDotsIfAny(b []byte) []byte {
	if bytes.IndexByte(b, '.') >= 0 {
		return removeDots(b)
	}
	return b
}

// simpleValue parses "u=<n>:o=<n>:<lo>,<hi>=<count>:...".
func (hp *HistogramPoint) simpleValue(v string, maxBuckets int) error {
	for part := range strings.SplitSeq(v, ":") {
		k, c, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("bad histogram part %q: want u=<n>, o=<n> or <low>,<high>=<count>", quote.String(part))
		}
		switch k {
		case "u", "o":
			n, err := strconv.ParseInt(c, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("bad %s count %q", k, quote.String(c))
			}
			if k == "u" {
				hp.Underflow = n
			} else {
				hp.Overflow = n
			}
		default:
			if len(hp.Buckets) >= maxBuckets {
				return fmt.Errorf("Too many buckets: more than %d in one histogram point (-histogram-max-buckets)", maxBuckets)
			}
			b, err := parseBucket(k, c)
			if err != nil {
				var pe *PointError
				if errors.As(err, &pe) {
					return errors.New(pe.Message)
				}
				return err
			}
			hp.Buckets = append(hp.Buckets, b)
		}
	}
	return nil
}
