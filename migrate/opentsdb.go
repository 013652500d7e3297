package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/klauspost/compress/gzip"
)

// OpenTSDBSource reads an OpenTSDB 2.x server (or anything speaking its
// HTTP API): each metric of a fixed list is asked for with
// POST /api/query, aggregator none (every series on its own, with all its
// tags), msResolution, over one slice. Safe for concurrent use.
type OpenTSDBSource struct {
	c       *Client
	base    string
	metrics []string
}

// ListMetrics asks /api/suggest?type=metrics for the metrics starting with
// each prefix ("" for all), at most max per prefix, and returns them sorted
// without repeats. A prefix that returns max names may have been cut short:
// that is an error saying to raise max.
func ListMetrics(ctx context.Context, c *Client, base string, prefixes []string, max int) ([]string, error) {
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range prefixes {
		u := base + "/api/suggest?type=metrics&max=" + strconv.Itoa(max) + "&q=" + url.QueryEscape(p)
		var names []string
		err := c.Do(ctx, http.MethodGet, u, nil, nil, func(r *http.Response) error {
			return json.NewDecoder(r.Body).Decode(&names)
		})
		if err != nil {
			return nil, fmt.Errorf("listing metrics: %w", err)
		}
		if len(names) >= max {
			return nil, fmt.Errorf("listing metrics: /api/suggest returned %d names for prefix %q, the -suggest-max: the list may be cut short; raise -suggest-max or give narrower -match prefixes", len(names), p)
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// NewOpenTSDBSource reads the given metrics from the server at base (no
// trailing slash).
func NewOpenTSDBSource(c *Client, base string, metrics []string) *OpenTSDBSource {
	return &OpenTSDBSource{c: c, base: base, metrics: metrics}
}

// Read implements Source: one query per metric.
func (o *OpenTSDBSource) Read(ctx context.Context, s Slice, fn func(*Series) error) error {
	for _, m := range o.metrics {
		if err := o.readMetric(ctx, s, m, fn); err != nil {
			return fmt.Errorf("metric %s: %w", m, err)
		}
	}
	return nil
}

func (o *OpenTSDBSource) readMetric(ctx context.Context, s Slice, metric string, fn func(*Series) error) error {
	q := map[string]any{
		"start": s.Start, "end": s.End - 1, // OpenTSDB's end is inclusive
		"msResolution": true,
		"queries":      []map[string]any{{"aggregator": "none", "metric": metric}},
	}
	body, err := json.Marshal(q)
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	return o.c.Do(ctx, http.MethodPost, o.base+"/api/query", h, body, func(r *http.Response) error {
		return DecodeQueryResponse(r.Body, s, fn)
	})
}

// queryResult is one element of /api/query's answer, the points left raw.
type queryResult struct {
	Metric string            `json:"metric"`
	Tags   map[string]string `json:"tags"`
	Dps    json.RawMessage   `json:"dps"`
}

// DecodeQueryResponse reads the JSON array /api/query answers with
// msResolution (dps an object of "<Unix ms>": value), one series at a time,
// and calls fn for each with its points in s. Values keep their text in
// Point.Raw.
func DecodeQueryResponse(r io.Reader, s Slice, fn func(*Series) error) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := expectDelim(dec, '['); err != nil {
		return fmt.Errorf("query answer: %w", err)
	}
	var ser Series
	for dec.More() {
		var qr queryResult
		if err := dec.Decode(&qr); err != nil {
			return fmt.Errorf("query answer: %w", err)
		}
		if qr.Metric == "" {
			return fmt.Errorf("query answer: a series without a metric")
		}
		ser.Labels = append(ser.Labels[:0], Label{MetricLabel, qr.Metric})
		for k, v := range qr.Tags {
			ser.Labels = append(ser.Labels, Label{k, v})
		}
		sortLabels(ser.Labels)
		var err error
		if ser.Points, err = appendDps(ser.Points[:0], qr.Dps, s); err != nil {
			return fmt.Errorf("query answer: series %s: %w", qr.Metric, err)
		}
		if len(ser.Points) == 0 {
			continue
		}
		if err := fn(&ser); err != nil {
			return err
		}
	}
	if err := expectDelim(dec, ']'); err != nil {
		return fmt.Errorf("query answer: %w", err)
	}
	return nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %q, got %v", d, tok)
	}
	return nil
}

// appendDps reads a dps object {"<ms>": value, ...} and appends the points
// in s. Values are JSON numbers, strings ("NaN", "Infinity") or null (no
// point). It scans the bytes itself: encoding/json's token API costs a dozen
// allocations a point.
func appendDps(dst []Point, raw []byte, s Slice) ([]Point, error) {
	i := skipSpace(raw, 0)
	if i == len(raw) || string(raw[i:]) == "null" {
		return dst, nil
	}
	if raw[i] != '{' {
		return dst, fmt.Errorf("dps: want an object")
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return dst, nil
	}
	for {
		key, j, err := scanPlainString(raw, i)
		if err != nil {
			return dst, fmt.Errorf("dps: timestamp: %w", err)
		}
		ts, ok := parseMs(key)
		if !ok {
			return dst, fmt.Errorf("dps: timestamp %q is not a non-negative integer", truncate(string(key), 40))
		}
		if j = skipSpace(raw, j); j == len(raw) || raw[j] != ':' {
			return dst, fmt.Errorf("dps: want : after %q", key)
		}
		p, j, ok, err := scanValue(raw, skipSpace(raw, j+1))
		if err != nil {
			return dst, fmt.Errorf("dps: value at %s: %w", key, err)
		}
		p.T = ts
		if ok && p.T >= s.Start && p.T < s.End {
			dst = append(dst, p)
		}
		if i = skipSpace(raw, j); i == len(raw) {
			return dst, fmt.Errorf("dps: unterminated object")
		}
		switch raw[i] {
		case '}':
			if skipSpace(raw, i+1) != len(raw) {
				return dst, fmt.Errorf("dps: data after the object")
			}
			return dst, nil
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return dst, fmt.Errorf("dps: want , or } after the value at %s", key)
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// scanPlainString reads a JSON string at b[i] that has no escapes.
func scanPlainString(b []byte, i int) ([]byte, int, error) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, fmt.Errorf("want a string")
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, nil
		case c == '\\' || c < 0x20:
			return nil, j, fmt.Errorf("unexpected byte %q in a string", c)
		}
	}
	return nil, len(b), fmt.Errorf("unterminated string")
}

// parseMs reads a decimal non-negative int64.
func parseMs(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n >= 0
}

// scanValue reads a dps value at b[i]: a number, a string of a special
// float, or null (ok false: no point).
func scanValue(b []byte, i int) (p Point, end int, ok bool, err error) {
	switch {
	case i >= len(b):
		return p, i, false, fmt.Errorf("missing")
	case b[i] == 'n':
		if len(b)-i >= 4 && string(b[i:i+4]) == "null" {
			return p, i + 4, false, nil
		}
	case b[i] == '"':
		str, j, err := scanPlainString(b, i)
		if err != nil {
			return p, j, false, err
		}
		p.Raw = string(str)
		if p.V, err = parseSpecial(p.Raw); err != nil {
			return p, j, false, fmt.Errorf("%q is not a number", truncate(p.Raw, 40))
		}
		return p, j, true, nil
	default:
		j := scanNumber(b, i)
		if j < 0 {
			break
		}
		p.Raw = string(b[i:j])
		if p.V, err = strconv.ParseFloat(p.Raw, 64); err != nil && !isRangeErr(err) {
			return p, j, false, err
		}
		return p, j, true, nil
	}
	return p, i, false, fmt.Errorf("not a number, a string or null")
}

// scanNumber returns the end of the JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	digits := func(j int) int {
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k == j {
			return -1
		}
		return k
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if i = digits(i); i < 0 {
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func parseSpecial(v string) (float64, error) {
	switch v {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Infinity", "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(v, 64)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// PutSink writes to OpenTSDB's /api/put: JSON arrays of at most batch
// points, gzipped. Not safe for concurrent use.
type PutSink struct {
	c     *Client
	url   string
	batch int
	buf   []byte // the JSON array being built, without its closing ]
	n     int    // points in buf
	gz    bytes.Buffer
	zw    *gzip.Writer
}

// NewPutSink writes to base + "/api/put" in batches of batch points.
func NewPutSink(c *Client, base string, batch int) *PutSink {
	return &PutSink{c: c, url: base + "/api/put", batch: max(batch, 1)}
}

// Write implements Sink.
func (p *PutSink) Write(ctx context.Context, s *Series) error {
	metric := s.Metric()
	if metric == "" {
		return fmt.Errorf("a series without a metric name")
	}
	for _, pt := range s.Points {
		if p.n >= p.batch {
			if err := p.Flush(ctx); err != nil {
				return err
			}
		}
		p.buf = appendPutPoint(p.buf, metric, s.Labels, pt)
		p.n++
	}
	return nil
}

// appendPutPoint appends one /api/put object (with a leading [ or ,).
func appendPutPoint(dst []byte, metric string, labels []Label, pt Point) []byte {
	if len(dst) == 0 {
		dst = append(dst, '[')
	} else {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"metric":`...)
	dst = strconv.AppendQuote(dst, metric)
	dst = append(dst, `,"timestamp":`...)
	if pt.T%1000 == 0 {
		dst = strconv.AppendInt(dst, pt.T/1000, 10)
	} else {
		dst = strconv.AppendInt(dst, pt.T, 10)
	}
	dst = append(dst, `,"value":`...)
	switch {
	case pt.Raw != "" && isJSONNumber(pt.Raw):
		dst = append(dst, pt.Raw...)
	case math.IsNaN(pt.V) || math.IsInf(pt.V, 0):
		dst = strconv.AppendQuote(dst, strconv.FormatFloat(pt.V, 'g', -1, 64))
	default:
		dst = strconv.AppendFloat(dst, pt.V, 'g', -1, 64)
	}
	dst = append(dst, `,"tags":{`...)
	first := true
	for _, l := range labels {
		if l.Name == MetricLabel {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = strconv.AppendQuote(dst, l.Name)
		dst = append(dst, ':')
		dst = strconv.AppendQuote(dst, l.Value)
	}
	return append(dst, "}}"...)
}

// isJSONNumber tells whether s is a JSON number literal.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

// Flush implements Sink.
func (p *PutSink) Flush(ctx context.Context) error {
	if p.n == 0 {
		return nil
	}
	p.buf = append(p.buf, ']')
	p.gz.Reset()
	if p.zw == nil {
		p.zw = gzip.NewWriter(&p.gz)
	} else {
		p.zw.Reset(&p.gz)
	}
	if _, err := p.zw.Write(p.buf); err != nil {
		return err
	}
	if err := p.zw.Close(); err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}
	err := p.c.Do(ctx, http.MethodPost, p.url, h, p.gz.Bytes(), func(r *http.Response) error {
		_, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		return err
	})
	p.buf, p.n = p.buf[:0], 0
	if err != nil {
		return fmt.Errorf("writing %s: %w", p.url, err)
	}
	return nil
}
