package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// The write dialects.
const (
	// DialectPut is OpenTSDB's HTTP /api/put with a JSON array body; it asks
	// for ?summary and reads the counts when the server sends them.
	DialectPut = "opentsdb-put"
	// DialectTelnet is OpenTSDB's line protocol, "put metric ts value
	// k=v...", on a TCP connection per worker.
	DialectTelnet = "telnet"
	// DialectRW1 is Prometheus remote write 1.0 (prometheus.WriteRequest,
	// snappy) to /api/v1/write.
	DialectRW1 = "prom-rw1"
	// DialectRW2 is Prometheus remote write 2.0 (io.prometheus.write.v2.Request
	// with its symbol table, snappy) to /api/v1/write.
	DialectRW2 = "prom-rw2"
)

// Dialects lists the write dialects.
var Dialects = []string{DialectPut, DialectTelnet, DialectRW1, DialectRW2}

// sendResult is what a server did with one batch.
type sendResult struct {
	accepted, rejected, unconfirmed int
	err                             error
}

// sender writes batches in one dialect. One per worker: not safe for
// concurrent use.
type sender interface {
	send(ctx context.Context, pts []Point) sendResult
	close() error
}

// senderConfig is what every sender needs.
type senderConfig struct {
	dialect string
	url     string // base URL of HTTP dialects, http://host:port
	addr    string // host:port of telnet
	client  *http.Client
	// telnetSync asks for a "version" reply after each telnet batch, which
	// tells its errors and that the server read it. Off for servers that
	// answer nothing to "version".
	telnetSync bool
	// probeFirst and probeQuiet bound the wait for the first line of the
	// reply to the probing "version" and for each further line (default
	// 5s and 1s).
	probeFirst, probeQuiet time.Duration
}

func newSender(ctx context.Context, cfg senderConfig) (sender, error) {
	switch cfg.dialect {
	case DialectPut:
		return &httpSender{cfg: cfg, path: "/api/put?summary", contentType: "application/json", encode: appendPutJSON, reply: putReply}, nil
	case DialectRW1:
		e := &rw1Encoder{}
		return &httpSender{cfg: cfg, path: "/api/v1/write", contentType: "application/x-protobuf",
			headers: map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"},
			encode:  e.encode, reply: rwReply}, nil
	case DialectRW2:
		e := &rw2Encoder{symbols: writev2.NewSymbolTable()}
		return &httpSender{cfg: cfg, path: "/api/v1/write", contentType: "application/x-protobuf;proto=io.prometheus.write.v2.Request",
			headers: map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "2.0.0"},
			encode:  e.encode, reply: rwReply}, nil
	case DialectTelnet:
		return dialTelnet(ctx, cfg)
	}
	return nil, fmt.Errorf("unknown dialect %q (want one of %s)", cfg.dialect, strings.Join(Dialects, ", "))
}

// httpSender posts one body per batch.
type httpSender struct {
	cfg         senderConfig
	path        string
	contentType string
	headers     map[string]string
	encode      func(dst []byte, pts []Point) ([]byte, error)
	// reply reads the response of a batch of n points.
	reply func(resp *http.Response, body []byte, n int) sendResult
	buf   []byte
	rbuf  bytes.Buffer
}

func (s *httpSender) send(ctx context.Context, pts []Point) sendResult {
	var err error
	s.buf, err = s.encode(s.buf[:0], pts)
	if err != nil {
		return sendResult{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.url+s.path, bytes.NewReader(s.buf))
	if err != nil {
		return sendResult{err: err}
	}
	req.Header.Set("Content-Type", s.contentType)
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	resp, err := s.cfg.client.Do(req)
	if err != nil {
		return sendResult{err: err}
	}
	defer resp.Body.Close()
	s.rbuf.Reset()
	if _, err := s.rbuf.ReadFrom(io.LimitReader(resp.Body, 1<<20)); err != nil {
		return sendResult{err: fmt.Errorf("reading the reply: %w", err)}
	}
	return s.reply(resp, s.rbuf.Bytes(), len(pts))
}

func (s *httpSender) close() error { return nil }

func statusError(resp *http.Response, body []byte) error {
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
}

// putReply reads an /api/put reply: 204 is all stored; a summary body
// {"success":n,"failed":m} gives the counts (200, or 400 with failures);
// any other answer counts the whole batch rejected (4xx) or failed (5xx).
func putReply(resp *http.Response, body []byte, n int) sendResult {
	if resp.StatusCode == http.StatusNoContent {
		return sendResult{accepted: n}
	}
	var sum struct {
		Success *int `json:"success"`
		Failed  *int `json:"failed"`
	}
	if (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusBadRequest) &&
		json.Unmarshal(body, &sum) == nil && sum.Success != nil && sum.Failed != nil {
		r := sendResult{accepted: *sum.Success, rejected: *sum.Failed}
		if r.rejected > 0 {
			r.err = fmt.Errorf("%d of %d points rejected: %s", r.rejected, n, firstDetail(body))
		}
		return r
	}
	if resp.StatusCode/100 == 2 {
		return sendResult{accepted: n}
	}
	if resp.StatusCode/100 == 4 {
		return sendResult{rejected: n, err: statusError(resp, body)}
	}
	return sendResult{err: statusError(resp, body)}
}

func firstDetail(body []byte) string {
	var d struct {
		Errors []struct {
			Error string `json:"error"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &d) == nil && len(d.Errors) > 0 {
		return d.Errors[0].Error
	}
	return "no details"
}

// rwReply reads a remote-write reply. 2xx is success; a 2.0 receiver may
// say how many samples it wrote in X-Prometheus-Remote-Write-Samples-Written
// and how many native histogram samples in ...-Histograms-Written, on
// success and failure alike (the two add up to the batch's points). 4xx
// rejects the batch (what was written of it, if the headers say); 5xx is a
// failure a sender would retry.
func rwReply(resp *http.Response, body []byte, n int) sendResult {
	written := -1
	if h := resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written"); h != "" {
		if w, err := strconv.Atoi(h); err == nil && w >= 0 {
			written = w
		}
	}
	if h := resp.Header.Get("X-Prometheus-Remote-Write-Histograms-Written"); h != "" && written >= 0 {
		if w, err := strconv.Atoi(h); err == nil && w >= 0 {
			written += w
		}
	}
	if written > n {
		written = -1
	}
	switch {
	case resp.StatusCode/100 == 2:
		if written >= 0 && written < n {
			return sendResult{accepted: written, rejected: n - written,
				err: fmt.Errorf("HTTP %d but %d of %d samples written", resp.StatusCode, written, n)}
		}
		return sendResult{accepted: n}
	case resp.StatusCode/100 == 4:
		if written < 0 {
			written = 0
		}
		return sendResult{accepted: written, rejected: n - written, err: statusError(resp, body)}
	}
	return sendResult{err: statusError(resp, body)}
}

// appendTimestamp appends ms as OpenTSDB clients send it: seconds when
// whole, else milliseconds (13 digits; OpenTSDB takes more than 10 digits
// as milliseconds).
func appendTimestamp(dst []byte, ms int64) []byte {
	if ms%1000 == 0 {
		return strconv.AppendInt(dst, ms/1000, 10)
	}
	return strconv.AppendInt(dst, ms, 10)
}

// appendPutJSON appends an /api/put body: a JSON array of data points.
// Names are quoted as JSON strings.
func appendPutJSON(dst []byte, pts []Point) ([]byte, error) {
	dst = append(dst, '[')
	for i, p := range pts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"metric":`...)
		dst = appendJSONString(dst, p.S.Metric)
		dst = append(dst, `,"timestamp":`...)
		dst = appendTimestamp(dst, p.T)
		dst = append(dst, `,"value":`...)
		dst = p.V.AppendText(dst)
		dst = append(dst, `,"tags":{`...)
		for j, t := range p.S.Tags {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, t.Key)
			dst = append(dst, ':')
			dst = appendJSONString(dst, t.Value)
		}
		dst = append(dst, "}}"...)
	}
	return append(dst, ']'), nil
}

// appendJSONString appends s as a JSON string: as it is when it is plain
// printable ASCII without quote or backslash (every name the generator
// makes), through encoding/json's rules otherwise.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendTelnet appends "put" lines.
func appendTelnet(dst []byte, pts []Point) []byte {
	for _, p := range pts {
		dst = append(dst, "put "...)
		dst = append(dst, p.S.Metric...)
		dst = append(dst, ' ')
		dst = appendTimestamp(dst, p.T)
		dst = append(dst, ' ')
		dst = p.V.AppendText(dst)
		for _, t := range p.S.Tags {
			dst = append(dst, ' ')
			dst = append(dst, t.Key...)
			dst = append(dst, '=')
			dst = append(dst, t.Value...)
		}
		dst = append(dst, '\n')
	}
	return dst
}

// groupBySeries calls fn for each run of points of one series, in the order
// the series first appear; the points of a series keep their order.
func groupBySeries(pts []Point, idx map[*Series]int, order *[]*Series, groups *[][]int, fn func(s *Series, members []int)) {
	clear(idx)
	*order = (*order)[:0]
	for i := range *groups {
		(*groups)[i] = (*groups)[i][:0]
	}
	for i, p := range pts {
		k, ok := idx[p.S]
		if !ok {
			k = len(*order)
			idx[p.S] = k
			*order = append(*order, p.S)
			if k == len(*groups) {
				*groups = append(*groups, nil)
			}
		}
		(*groups)[k] = append((*groups)[k], i)
	}
	for k, s := range *order {
		fn(s, (*groups)[k])
	}
}

// rw1Encoder builds prometheus.WriteRequest bodies: one TimeSeries per
// series with all its samples of the batch, labels sorted by name.
type rw1Encoder struct {
	req    prompb.WriteRequest
	idx    map[*Series]int
	order  []*Series
	groups [][]int
	raw    []byte
}

func (e *rw1Encoder) encode(dst []byte, pts []Point) ([]byte, error) {
	if e.idx == nil {
		e.idx = make(map[*Series]int)
	}
	e.req.Timeseries = e.req.Timeseries[:0]
	groupBySeries(pts, e.idx, &e.order, &e.groups, func(s *Series, members []int) {
		var ts prompb.TimeSeries
		if n := len(e.req.Timeseries); n < cap(e.req.Timeseries) {
			ts = e.req.Timeseries[:n+1][n]
		}
		ts.Labels = appendPromLabels(ts.Labels[:0], s)
		ts.Samples = ts.Samples[:0]
		ts.Histograms = ts.Histograms[:0]
		for _, i := range members {
			if h := pts[i].H; h != nil {
				ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(pts[i].T, h))
				continue
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: pts[i].T, Value: pts[i].V.F()})
		}
		e.req.Timeseries = append(e.req.Timeseries, ts)
	})
	size := e.req.Size()
	if cap(e.raw) < size {
		e.raw = make([]byte, size)
	}
	n, err := e.req.MarshalToSizedBuffer(e.raw[:size])
	if err != nil {
		return dst, fmt.Errorf("encoding remote write 1.0: %w", err)
	}
	return snappyAppend(dst, e.raw[size-n:size]), nil
}

// appendPromLabels appends __name__ and the tags, sorted by name as remote
// write requires.
func appendPromLabels(dst []prompb.Label, s *Series) []prompb.Label {
	dst = append(dst, prompb.Label{Name: "__name__", Value: s.Metric})
	for _, t := range s.Tags { // sorted by key, and every key sorts after "__name__"
		dst = append(dst, prompb.Label{Name: t.Key, Value: t.Value})
	}
	return dst
}

// rw2Encoder builds io.prometheus.write.v2.Request bodies with a symbol
// table per request and the metric type in each series' metadata.
type rw2Encoder struct {
	req     writev2.Request
	symbols writev2.SymbolsTable
	idx     map[*Series]int
	order   []*Series
	groups  [][]int
	raw     []byte
}

func (e *rw2Encoder) encode(dst []byte, pts []Point) ([]byte, error) {
	if e.idx == nil {
		e.idx = make(map[*Series]int)
	}
	e.symbols.Reset()
	e.req.Timeseries = e.req.Timeseries[:0]
	groupBySeries(pts, e.idx, &e.order, &e.groups, func(s *Series, members []int) {
		var ts writev2.TimeSeries
		if n := len(e.req.Timeseries); n < cap(e.req.Timeseries) {
			ts = e.req.Timeseries[:n+1][n]
		}
		refs := ts.LabelsRefs[:0]
		refs = append(refs, e.symbols.Symbolize("__name__"), e.symbols.Symbolize(s.Metric))
		for _, t := range s.Tags {
			refs = append(refs, e.symbols.Symbolize(t.Key), e.symbols.Symbolize(t.Value))
		}
		ts.LabelsRefs = refs
		ts.Samples = ts.Samples[:0]
		ts.Histograms = ts.Histograms[:0]
		for _, i := range members {
			if h := pts[i].H; h != nil {
				ts.Histograms = append(ts.Histograms, writev2.FromIntHistogram(0, pts[i].T, h))
				continue
			}
			ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: pts[i].T, Value: pts[i].V.F()})
		}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE}
		switch s.Kind {
		case Counter:
			ts.Metadata.Type = writev2.Metadata_METRIC_TYPE_COUNTER
		case Histogram:
			ts.Metadata.Type = writev2.Metadata_METRIC_TYPE_HISTOGRAM
		}
		e.req.Timeseries = append(e.req.Timeseries, ts)
	})
	e.req.Symbols = e.symbols.Symbols()
	size := e.req.Size()
	if cap(e.raw) < size {
		e.raw = make([]byte, size)
	}
	n, err := e.req.MarshalToSizedBuffer(e.raw[:size])
	if err != nil {
		return dst, fmt.Errorf("encoding remote write 2.0: %w", err)
	}
	return snappyAppend(dst, e.raw[size-n:size]), nil
}

// snappyAppend appends the snappy block encoding of src to dst.
func snappyAppend(dst, src []byte) []byte {
	need := snappy.MaxEncodedLen(len(src))
	if cap(dst)-len(dst) < need {
		nd := make([]byte, len(dst), len(dst)+need)
		copy(nd, dst)
		dst = nd
	}
	enc := snappy.Encode(dst[len(dst):len(dst)+need], src)
	return dst[:len(dst)+len(enc)]
}

// telnetSender writes put lines on one connection. With sync it then sends
// "version" and reads until the reply: the lines before it are the batch's
// errors, and the reply says the server has read the whole batch.
type telnetSender struct {
	conn net.Conn
	br   *bufio.Reader
	sync bool
	// replyLines is the number of lines the server answers "version" with.
	replyLines int
	buf        []byte
}

func dialTelnet(ctx context.Context, cfg senderConfig) (*telnetSender, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", cfg.addr)
	if err != nil {
		return nil, err
	}
	s := &telnetSender{conn: conn, br: bufio.NewReaderSize(conn, 64<<10)}
	if cfg.telnetSync {
		if cfg.probeFirst <= 0 {
			cfg.probeFirst = 5 * time.Second
		}
		if cfg.probeQuiet <= 0 {
			cfg.probeQuiet = time.Second
		}
		n, err := s.probeVersion(cfg.probeFirst, cfg.probeQuiet)
		if err != nil {
			conn.Close()
			return nil, err
		}
		s.sync, s.replyLines = n > 0, n
	}
	return s, nil
}

// probeVersion sends "version" and counts the reply's lines, waiting up to
// first for the first and quiet after each; 0 means the server answers
// nothing.
func (s *telnetSender) probeVersion(first, quiet time.Duration) (int, error) {
	if _, err := s.conn.Write([]byte("version\n")); err != nil {
		return 0, err
	}
	n := 0
	wait := first
	for {
		_ = s.conn.SetReadDeadline(time.Now().Add(wait))
		_, err := s.br.ReadString('\n')
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = s.conn.SetReadDeadline(time.Time{})
				return n, nil
			}
			return 0, fmt.Errorf("telnet: reading the reply to version: %w", err)
		}
		n++
		wait = quiet
	}
}

func (s *telnetSender) send(ctx context.Context, pts []Point) sendResult {
	s.buf = appendTelnet(s.buf[:0], pts)
	if s.sync {
		s.buf = append(s.buf, "version\n"...)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = s.conn.SetDeadline(d)
	} else {
		_ = s.conn.SetDeadline(time.Now().Add(time.Minute))
	}
	if _, err := s.conn.Write(s.buf); err != nil {
		return sendResult{err: err}
	}
	if !s.sync {
		return sendResult{unconfirmed: len(pts)}
	}
	var r sendResult
	got := 0
	for got < s.replyLines {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return sendResult{err: fmt.Errorf("telnet: waiting for the reply to version: %w", err)}
		}
		if got == 0 && strings.HasPrefix(line, "put:") {
			r.rejected++
			if r.err == nil {
				r.err = errors.New(strings.TrimSpace(line))
			}
			continue
		}
		got++
	}
	r.accepted = max(0, len(pts)-r.rejected)
	return r
}

func (s *telnetSender) close() error {
	_ = s.conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = s.conn.Write([]byte("exit\n"))
	return s.conn.Close()
}
