package prom

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/internal/quote"
)

// ResponseType is a remote-read response type (prometheus.ReadRequest.ResponseType).
type ResponseType int32

const (
	// ResponseSamples is a snappy-compressed ReadResponse.
	ResponseSamples ResponseType = 0
	// ResponseStreamedXORChunks is a stream of framed ChunkedReadResponses.
	ResponseStreamedXORChunks ResponseType = 1
)

func (t ResponseType) String() string {
	switch t {
	case ResponseSamples:
		return "SAMPLES"
	case ResponseStreamedXORChunks:
		return "STREAMED_XOR_CHUNKS"
	}
	return fmt.Sprintf("ResponseType(%d)", int32(t))
}

// ContentType of a STREAMED_XOR_CHUNKS response.
const ChunkedContentType = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"

// NegotiateResponseType returns the first accepted type this server
// supports; none accepted means SAMPLES (storage/remote.NegotiateResponseType).
func NegotiateResponseType(accepted []ResponseType) (ResponseType, error) {
	if len(accepted) == 0 {
		return ResponseSamples, nil
	}
	for _, t := range accepted {
		if t == ResponseSamples || t == ResponseStreamedXORChunks {
			return t, nil
		}
	}
	names := make([]string, len(accepted))
	for i, t := range accepted {
		names[i] = t.String()
	}
	return 0, &RequestError{fmt.Sprintf("server does not support any of the requested response types: [%s]; supported: [SAMPLES STREAMED_XOR_CHUNKS]", strings.Join(names, " "))}
}

// ReadHints are a query's hints (prometheus.ReadHints).
type ReadHints struct {
	StepMs, StartMs, EndMs, RangeMs int64
	Func                            string
	Grouping                        []string
	By                              bool
}

// ReadQuery is one query of a read request.
type ReadQuery struct {
	StartMs, EndMs int64
	Matchers       []*labels.Matcher
	Hints          *ReadHints
}

// ReadRequest is a decoded prometheus.ReadRequest.
type ReadRequest struct {
	Queries  []ReadQuery
	Accepted []ResponseType
}

// Bounds of one read request: no client needs more, and each matcher may
// compile a regular expression.
const (
	MaxReadQueries  = 256
	MaxReadMatchers = 1024 // over all queries
)

// DecodeReadRequest decodes a prometheus.ReadRequest (uncompressed). A
// malformed body is a *MalformedError; a bad matcher or too many queries a
// *RequestError. The strings of the result are copies.
func DecodeReadRequest(b []byte) (*ReadRequest, error) {
	if err := checkMessage(readReqSchema, b); err != nil {
		return nil, err
	}
	req := &ReadRequest{}
	matchers := 0
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		switch {
		case num == 2 && typ == wireVarint:
			var v uint64
			v, off = uvarint(b, next)
			req.Accepted = append(req.Accepted, ResponseType(int32(v)))
			continue
		case num == 2 && typ == wireLen:
			start, end := lenField(b, next)
			for p := start; p < end; {
				var v uint64
				v, p = uvarint(b[:end], p)
				if len(req.Accepted) < 64 {
					req.Accepted = append(req.Accepted, ResponseType(int32(v)))
				}
			}
			off = end
			continue
		case num != 1 || typ != wireLen:
			off = skip(b, next, typ)
			continue
		}
		start, end := lenField(b, next)
		off = end
		if len(req.Queries) == MaxReadQueries {
			return nil, &RequestError{fmt.Sprintf("more than %d queries in one read request", MaxReadQueries)}
		}
		q, n, err := parseQuery(b[start:end], MaxReadMatchers-matchers)
		if err != nil {
			return nil, err
		}
		matchers += n
		req.Queries = append(req.Queries, q)
	}
	return req, nil
}

func parseQuery(b []byte, maxMatchers int) (ReadQuery, int, error) {
	var q ReadQuery
	n := 0
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		switch {
		case num == 1 && typ == wireVarint, num == 2 && typ == wireVarint:
			var v uint64
			v, off = uvarint(b, next)
			if num == 1 {
				q.StartMs = int64(v)
			} else {
				q.EndMs = int64(v)
			}
			continue
		case typ != wireLen:
			off = skip(b, next, typ)
			continue
		}
		start, end := lenField(b, next)
		off = end
		switch num {
		case 3:
			if n++; n > maxMatchers {
				return q, n, &RequestError{fmt.Sprintf("more than %d matchers in one read request", MaxReadMatchers)}
			}
			m, err := parseMatcher(b[start:end])
			if err != nil {
				return q, n, err
			}
			q.Matchers = append(q.Matchers, m)
		case 4:
			if q.Hints == nil {
				q.Hints = &ReadHints{}
			}
			parseHints(b[start:end], q.Hints)
		}
	}
	return q, n, nil
}

func parseMatcher(b []byte) (*labels.Matcher, error) {
	var typ uint64
	var name, value string
	for off := 0; off < len(b); {
		num, wt, next := field(b, off)
		if num == 1 && wt == wireVarint {
			typ, off = uvarint(b, next)
			continue
		}
		if wt != wireLen {
			off = skip(b, next, wt)
			continue
		}
		start, end := lenField(b, next)
		off = end
		switch num {
		case 2:
			name = string(b[start:end])
		case 3:
			value = string(b[start:end])
		}
	}
	if typ > uint64(labels.MatchNotRegexp) {
		return nil, &RequestError{fmt.Sprintf("invalid matcher type %d for label %q", typ, quote.String(name))}
	}
	m, err := labels.NewMatcher(labels.MatchType(typ), name, value)
	if err != nil {
		return nil, &RequestError{fmt.Sprintf("invalid matcher %s%s%q: %v", quote.String(name), labels.MatchType(typ), quote.String(value), err)}
	}
	return m, nil
}

func parseHints(b []byte, h *ReadHints) {
	for off := 0; off < len(b); {
		num, typ, next := field(b, off)
		if typ == wireVarint {
			var v uint64
			v, off = uvarint(b, next)
			switch num {
			case 1:
				h.StepMs = int64(v)
			case 3:
				h.StartMs = int64(v)
			case 4:
				h.EndMs = int64(v)
			case 6:
				h.By = v != 0
			case 7:
				h.RangeMs = int64(v)
			}
			continue
		}
		if typ != wireLen {
			off = skip(b, next, typ)
			continue
		}
		start, end := lenField(b, next)
		off = end
		switch num {
		case 2:
			h.Func = string(b[start:end])
		case 5:
			if len(h.Grouping) < 256 {
				h.Grouping = append(h.Grouping, string(b[start:end]))
			}
		}
	}
}

// appendLabels appends labels as repeated prometheus.Label fields num.
func appendLabels(dst []byte, num int, ls labels.Labels) []byte {
	ls.Range(func(l labels.Label) {
		n := 1 + varintLen(uint64(len(l.Name))) + len(l.Name) + 1 + varintLen(uint64(len(l.Value))) + len(l.Value)
		dst = binary.AppendUvarint(appendKey(dst, num, wireLen), uint64(n))
		dst = appendStringField(dst, 1, l.Name)
		dst = appendStringField(dst, 2, l.Value)
	})
	return dst
}

// SamplesResponse builds a SAMPLES answer: a prometheus.ReadResponse with
// one QueryResult per query. Add the series of the first query, call
// EndQuery, and so on; then AppendSnappy. Reuse it with Reset.
type SamplesResponse struct {
	resp, qr, ts []byte
}

// Reset empties the response.
func (r *SamplesResponse) Reset() { r.resp, r.qr, r.ts = r.resp[:0], r.qr[:0], r.ts[:0] }

// AddSeries adds a series of the current query: its labels, its float
// samples and its native histograms (read_histogram.go).
func (r *SamplesResponse) AddSeries(ls labels.Labels, it chunkenc.Iterator) error {
	ts := appendLabels(r.ts[:0], 1, ls)
	for {
		vt := it.Next()
		if vt == chunkenc.ValNone {
			break
		}
		switch vt {
		case chunkenc.ValHistogram:
			t, h := it.AtHistogram(nil)
			ts = appendBytesField(ts, 4, appendHistogramMsg(nil, t, h, nil))
			continue
		case chunkenc.ValFloatHistogram:
			t, fh := it.AtFloatHistogram(nil)
			ts = appendBytesField(ts, 4, appendHistogramMsg(nil, t, nil, fh))
			continue
		case chunkenc.ValFloat:
		default:
			return fmt.Errorf("series %s: sample of type %v", ls, vt)
		}
		t, v := it.At()
		var s [32]byte
		sb := appendFixed64Field(s[:0], 1, math.Float64bits(v))
		sb = appendVarintField(sb, 2, uint64(t))
		ts = appendBytesField(ts, 2, sb)
	}
	if err := it.Err(); err != nil {
		return err
	}
	r.ts = ts
	r.qr = appendBytesField(r.qr, 1, ts)
	return nil
}

// EndQuery closes the result of the current query.
func (r *SamplesResponse) EndQuery() {
	r.resp = appendBytesField(r.resp, 1, r.qr)
	r.qr = r.qr[:0]
}

// Bytes returns the ReadResponse message, uncompressed.
func (r *SamplesResponse) Bytes() []byte { return r.resp }

// AppendSnappy appends the ReadResponse compressed in snappy's block format,
// the body of a SAMPLES answer.
func (r *SamplesResponse) AppendSnappy(dst []byte) []byte {
	n := snappy.MaxEncodedLen(len(r.resp))
	if cap(dst)-len(dst) < n {
		dst = append(dst, make([]byte, n)...)[:len(dst)]
	}
	enc := snappy.Encode(dst[len(dst):len(dst)+n], r.resp)
	return dst[:len(dst)+len(enc)]
}

// DefaultMaxBytesInFrame is Prometheus' default bound of one frame
// (--storage.remote.read-max-bytes-in-frame).
const DefaultMaxBytesInFrame = 1 << 20

// SamplesPerChunk is how many samples an XOR chunk holds, as in Prometheus' head.
const SamplesPerChunk = 120

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChunkedWriter streams a STREAMED_XOR_CHUNKS answer: for each series, one or
// more frames, each a uvarint length, a big-endian CRC32-Castagnoli of the
// data and the data, a prometheus.ChunkedReadResponse holding that series'
// XOR chunks. A frame holds one series; a series whose chunks exceed the
// frame bound continues in the next frame, as storage/remote does.
type ChunkedWriter struct {
	w        io.Writer
	maxFrame int
	lbls     []byte
	chunks   []byte
	frame    []byte
	series   []byte
}

// NewChunkedWriter returns a writer of frames of at most about maxFrame
// bytes (a frame may exceed it by one chunk). Zero means DefaultMaxBytesInFrame.
func NewChunkedWriter(w io.Writer, maxFrame int) *ChunkedWriter {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxBytesInFrame
	}
	return &ChunkedWriter{w: w, maxFrame: maxFrame}
}

// WriteSeries writes the frames of one series of query queryIndex. A series
// without samples writes nothing.
func (c *ChunkedWriter) WriteSeries(queryIndex int64, ls labels.Labels, it chunkenc.Iterator) error {
	c.lbls = appendLabels(c.lbls[:0], 1, ls)
	budget := c.maxFrame - len(c.lbls)
	c.chunks = c.chunks[:0]
	var (
		chk      chunkenc.Chunk
		app      chunkenc.Appender
		min, max int64
		kind     chunkenc.ValueType // of chk's samples
		prevT    int64
	)
	cut := func() error {
		if chk == nil {
			return nil
		}
		var b [32]byte
		hdr := appendVarintField(b[:0], 1, uint64(min))
		hdr = appendVarintField(hdr, 2, uint64(max))
		hdr = appendVarintField(hdr, 3, uint64(chunkEncodingOf(kind))) // XOR, HISTOGRAM, FLOAT_HISTOGRAM
		data := chk.Bytes()
		n := len(hdr) + 1 + varintLen(uint64(len(data))) + len(data)
		c.chunks = binary.AppendUvarint(appendKey(c.chunks, 2, wireLen), uint64(n))
		c.chunks = append(c.chunks, hdr...)
		c.chunks = appendBytesField(c.chunks, 4, data)
		chk, app = nil, nil
		if len(c.chunks) >= budget {
			return c.flush(queryIndex)
		}
		return nil
	}
	for {
		vt := it.Next()
		if vt == chunkenc.ValNone {
			break
		}
		if chk != nil && vt != kind {
			if err := cut(); err != nil { // a chunk holds one kind of sample
				return err
			}
		}
		if vt == chunkenc.ValHistogram || vt == chunkenc.ValFloatHistogram { // read_histogram.go
			t := it.AtT()
			if chk == nil {
				min = t
			}
			cur, curApp, done, err := histChunkAppend(chk, app, vt, it)
			if err != nil {
				return fmt.Errorf("series %s: %w", ls, err)
			}
			if done != nil {
				chk = done
				max = prevT
				if err := cut(); err != nil {
					return err
				}
				min = t
			}
			chk, app, kind, max, prevT = cur, curApp, vt, t, t
			if chk.NumSamples() >= SamplesPerChunk {
				if err := cut(); err != nil {
					return err
				}
			}
			continue
		}
		if vt != chunkenc.ValFloat {
			return fmt.Errorf("series %s: sample of type %v", ls, vt)
		}
		t, v := it.At()
		prevT = t
		if chk == nil {
			kind = chunkenc.ValFloat
			chk = chunkenc.NewXORChunk()
			var err error
			if app, err = chk.Appender(); err != nil {
				return err
			}
			min = t
		}
		app.Append(0, t, v)
		max = t
		if chk.NumSamples() >= SamplesPerChunk {
			if err := cut(); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := cut(); err != nil {
		return err
	}
	return c.flush(queryIndex)
}

// flush writes the chunks gathered so far as one frame.
func (c *ChunkedWriter) flush(queryIndex int64) error {
	if len(c.chunks) == 0 {
		return nil
	}
	c.series = append(append(c.series[:0], c.lbls...), c.chunks...)
	c.chunks = c.chunks[:0]
	data := appendBytesField(c.frame[:0], 1, c.series)
	data = appendVarintField(data, 2, uint64(queryIndex))
	c.frame = data
	var hdr [binary.MaxVarintLen64 + 4]byte
	n := binary.PutUvarint(hdr[:], uint64(len(data)))
	binary.BigEndian.PutUint32(hdr[n:], crc32.Checksum(data, castagnoli))
	if _, err := c.w.Write(hdr[:n+4]); err != nil {
		return err
	}
	_, err := c.w.Write(data)
	return err
}
