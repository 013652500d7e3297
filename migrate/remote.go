package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// RemoteReadSource reads a Prometheus remote-read endpoint: one request per
// slice with one query per selector, asking for STREAMED_XOR_CHUNKS first
// and taking SAMPLES from servers that only have that. A series matched by
// several selectors is read once. Safe for concurrent use.
//
// A STREAMED_XOR_CHUNKS answer is read a frame at a time. A SAMPLES answer
// is one snappy block (a format that cannot be decoded as it arrives) of one
// protobuf message: it is read whole, compressed then decoded, each at most
// MaxSamplesBytes (-remote-read-max-bytes), so a slice holds up to about
// three times that in memory while it is decoded; a larger answer is an error
// saying to use shorter slices.
type RemoteReadSource struct {
	c        *Client
	url      string
	matchers [][]*prompb.LabelMatcher
	maxFrame uint64
	accept   []prompb.ReadRequest_ResponseType // in order of preference
	// MaxSamplesBytes bounds a SAMPLES answer (DefaultRemoteReadMaxBytes).
	MaxSamplesBytes int
}

// Bounds of a remote-read answer: one STREAMED_XOR_CHUNKS frame (Prometheus
// sends 1 MiB) and, by default, a whole SAMPLES answer.
const (
	maxFrameBytes             = 64 << 20
	DefaultRemoteReadMaxBytes = 512 << 20
)

// ParseSelectors reads PromQL series selectors (`up`, `{job="x"}`,
// `{__name__=~".+"}`) into remote-read matchers.
func ParseSelectors(sels []string) ([][]*prompb.LabelMatcher, error) {
	var out [][]*prompb.LabelMatcher
	pql := parser.NewParser(parser.Options{})
	for _, sel := range sels {
		ms, err := pql.ParseMetricSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("-match %q: %w", truncate(sel, 200), err)
		}
		pms := make([]*prompb.LabelMatcher, 0, len(ms))
		for _, m := range ms {
			var t prompb.LabelMatcher_Type
			switch m.Type {
			case labels.MatchEqual:
				t = prompb.LabelMatcher_EQ
			case labels.MatchNotEqual:
				t = prompb.LabelMatcher_NEQ
			case labels.MatchRegexp:
				t = prompb.LabelMatcher_RE
			case labels.MatchNotRegexp:
				t = prompb.LabelMatcher_NRE
			}
			pms = append(pms, &prompb.LabelMatcher{Type: t, Name: m.Name, Value: m.Value})
		}
		out = append(out, pms)
	}
	return out, nil
}

// NewRemoteReadSource reads url (e.g. http://prometheus:9090/api/v1/read)
// for the series of the given matchers.
func NewRemoteReadSource(c *Client, url string, matchers [][]*prompb.LabelMatcher) *RemoteReadSource {
	return &RemoteReadSource{c: c, url: url, matchers: matchers, maxFrame: maxFrameBytes, MaxSamplesBytes: DefaultRemoteReadMaxBytes,
		accept: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}}
}

// Read implements Source.
func (rr *RemoteReadSource) Read(ctx context.Context, s Slice, fn func(*Series) error) error {
	req := &prompb.ReadRequest{AcceptedResponseTypes: rr.accept}
	for _, ms := range rr.matchers {
		req.Queries = append(req.Queries, &prompb.Query{
			StartTimestampMs: s.Start, EndTimestampMs: s.End - 1, // inclusive
			Matchers: ms,
		})
	}
	raw, err := req.Marshal()
	if err != nil {
		return err
	}
	h := http.Header{
		"Content-Type":                     {"application/x-protobuf"},
		"Content-Encoding":                 {"snappy"},
		"X-Prometheus-Remote-Read-Version": {"0.1.0"},
	}
	dd := dedup{first: map[string]int64{}, fn: fn}
	return rr.c.Do(ctx, http.MethodPost, rr.url, h, snappy.Encode(nil, raw), func(r *http.Response) error {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-streamed-protobuf") {
			return DecodeChunkedReadResponse(r.Body, rr.maxFrame, s, dd.series)
		}
		max := rr.MaxSamplesBytes
		b, err := io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
		if err != nil {
			return err
		}
		if len(b) > max {
			return fmt.Errorf("remote read answer: over %d bytes (-remote-read-max-bytes): use a shorter -slice", max)
		}
		return decodeSamples(b, max, s, dd.series)
	})
}

// dedup passes a series on only from the first query that returned it (a
// series may come in several parts from that query).
type dedup struct {
	first map[string]int64
	fn    func(*Series) error
}

func (d *dedup) series(query int64, s *Series) error {
	k := s.key()
	if q, ok := d.first[k]; ok && q != query {
		return nil
	}
	d.first[k] = query
	return d.fn(s)
}

// DecodeSamplesReadResponse reads a snappy-compressed SAMPLES ReadResponse
// and calls fn with each series' float samples in s; native histogram
// samples are counted in Series.Skipped.
// The decoded answer may hold DefaultRemoteReadMaxBytes.
func DecodeSamplesReadResponse(body []byte, s Slice, fn func(query int64, s *Series) error) error {
	return decodeSamples(body, DefaultRemoteReadMaxBytes, s, fn)
}

// decodeSamples is DecodeSamplesReadResponse with the decoded answer
// bounded by max bytes, checked on snappy's length before decoding.
func decodeSamples(body []byte, max int, s Slice, fn func(query int64, s *Series) error) error {
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return fmt.Errorf("remote read answer: snappy: %w", err)
	}
	if n > max {
		return fmt.Errorf("remote read answer: %d bytes decoded, over %d (-remote-read-max-bytes): use a shorter -slice", n, max)
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return fmt.Errorf("remote read answer: snappy: %w", err)
	}
	var resp prompb.ReadResponse
	if err := resp.Unmarshal(raw); err != nil {
		return fmt.Errorf("remote read answer: %w", err)
	}
	var ser Series
	for qi, qr := range resp.Results {
		if qr == nil {
			continue
		}
		for _, ts := range qr.Timeseries {
			if ts == nil {
				continue
			}
			ser.Labels = appendLabels(ser.Labels[:0], ts.Labels)
			ser.Points, ser.Skipped = ser.Points[:0], 0
			for _, smp := range ts.Samples {
				if smp.Timestamp >= s.Start && smp.Timestamp < s.End {
					ser.Points = append(ser.Points, Point{T: smp.Timestamp, V: smp.Value})
				}
			}
			for _, h := range ts.Histograms {
				if h.Timestamp >= s.Start && h.Timestamp < s.End {
					ser.Skipped++
				}
			}
			if len(ser.Points)+ser.Skipped == 0 {
				continue
			}
			if err := fn(int64(qi), &ser); err != nil {
				return err
			}
		}
	}
	return nil
}

// DecodeChunkedReadResponse reads STREAMED_XOR_CHUNKS frames (each at most
// maxFrame bytes) and calls fn with each series' float samples in s (chunks
// may hold samples outside the asked range; they are dropped); samples of
// histogram chunks are counted in Series.Skipped.
func DecodeChunkedReadResponse(r io.Reader, maxFrame uint64, s Slice, fn func(query int64, s *Series) error) error {
	cr := remote.NewChunkedReader(r, maxFrame, nil)
	var resp prompb.ChunkedReadResponse
	var ser Series
	var it chunkenc.Iterator
	for {
		resp.Reset()
		err := cr.NextProto(&resp)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("remote read answer: %w", err)
		}
		for _, cs := range resp.ChunkedSeries {
			if cs == nil {
				continue
			}
			ser.Labels = appendLabels(ser.Labels[:0], cs.Labels)
			ser.Points, ser.Skipped = ser.Points[:0], 0
			for _, c := range cs.Chunks {
				if c.MaxTimeMs < s.Start || c.MinTimeMs >= s.End {
					continue
				}
				if it, err = appendChunk(&ser, c, s, it); err != nil {
					return fmt.Errorf("remote read answer: series %s: %w", labelsString(ser.Labels), err)
				}
			}
			if len(ser.Points)+ser.Skipped == 0 {
				continue
			}
			if err := fn(resp.QueryIndex, &ser); err != nil {
				return err
			}
		}
	}
}

// appendChunk appends the samples of c in s to ser.
func appendChunk(ser *Series, c prompb.Chunk, s Slice, it chunkenc.Iterator) (chunkenc.Iterator, error) {
	enc := chunkenc.Encoding(c.Type)
	if !chunkenc.IsValidEncoding(enc) {
		return it, fmt.Errorf("chunk encoding %d is unknown", c.Type)
	}
	chk, err := chunkenc.FromData(enc, c.Data)
	if err != nil {
		return it, err
	}
	it = chk.Iterator(it)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		t := it.AtT()
		if t < s.Start || t >= s.End {
			continue
		}
		if vt != chunkenc.ValFloat {
			ser.Skipped++
			continue
		}
		_, v := it.At()
		ser.Points = append(ser.Points, Point{T: t, V: v})
	}
	return it, it.Err()
}

func appendLabels(dst []Label, ls []prompb.Label) []Label {
	for _, l := range ls {
		dst = append(dst, Label{l.Name, l.Value})
	}
	sortLabels(dst)
	return dst
}

func labelsString(ls []Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return truncate(b.String(), 300)
}

// RemoteWriteSink writes Remote-Write 1.0 requests (prometheus.WriteRequest,
// snappy) of at most batch samples. Not safe for concurrent use.
type RemoteWriteSink struct {
	c     *Client
	url   string
	batch int
	req   prompb.WriteRequest
	n     int
	raw   []byte
	enc   []byte
}

// NewRemoteWriteSink writes to url (e.g. http://hourglass:4242/api/v1/write).
func NewRemoteWriteSink(c *Client, url string, batch int) *RemoteWriteSink {
	return &RemoteWriteSink{c: c, url: url, batch: max(batch, 1)}
}

// Write implements Sink. A series with more points than fit in the batch
// is split over several requests.
func (w *RemoteWriteSink) Write(ctx context.Context, s *Series) error {
	pts := s.Points
	for len(pts) > 0 {
		if w.n >= w.batch {
			if err := w.Flush(ctx); err != nil {
				return err
			}
		}
		k := min(len(pts), w.batch-w.n)
		ts := prompb.TimeSeries{Labels: make([]prompb.Label, 0, len(s.Labels)), Samples: make([]prompb.Sample, 0, k)}
		for _, l := range s.Labels {
			ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
		}
		for _, p := range pts[:k] {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.T, Value: p.V})
		}
		w.req.Timeseries = append(w.req.Timeseries, ts)
		w.n += k
		pts = pts[k:]
	}
	return nil
}

// Flush implements Sink.
func (w *RemoteWriteSink) Flush(ctx context.Context) error {
	if w.n == 0 {
		return nil
	}
	size := w.req.Size()
	if cap(w.raw) < size {
		w.raw = make([]byte, size)
	}
	n, err := w.req.MarshalToSizedBuffer(w.raw[:size])
	if err != nil {
		return err
	}
	w.enc = snappy.Encode(w.enc[:cap(w.enc)], w.raw[size-n:size])
	h := http.Header{
		"Content-Type":                      {"application/x-protobuf"},
		"Content-Encoding":                  {"snappy"},
		"X-Prometheus-Remote-Write-Version": {"0.1.0"},
	}
	err = w.c.Do(ctx, http.MethodPost, w.url, h, w.enc, func(r *http.Response) error {
		_, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		return err
	})
	w.req.Timeseries, w.n = w.req.Timeseries[:0], 0
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.url, err)
	}
	return nil
}
