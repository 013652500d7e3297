package migrate

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/api/prom"
)

func collect(t *testing.T, read func(fn func(*Series) error) error) []Series {
	t.Helper()
	var out []Series
	err := read(func(s *Series) error {
		c := Series{Labels: append([]Label(nil), s.Labels...), Points: append([]Point(nil), s.Points...), Skipped: s.Skipped}
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecodeQueryResponse(t *testing.T) {
	body := `[{"metric":"m","tags":{"host":"a","dc":"x"},"aggregateTags":[],"dps":{"1700000000000":42,"1700000000500":42.5,"1700000001000":9007199254740993,"1700000002000":"NaN","1700000003000":null,"1800000000000":1}},
	          {"metric":"m","tags":{},"dps":{}}]`
	s := Slice{1700000000000, 1700000010000}
	got := collect(t, func(fn func(*Series) error) error { return DecodeQueryResponse(strings.NewReader(body), s, fn) })
	if len(got) != 1 {
		t.Fatalf("got %d series, want 1 (the one with points)", len(got))
	}
	wantLabels := []Label{{MetricLabel, "m"}, {"dc", "x"}, {"host", "a"}}
	if fmt.Sprint(got[0].Labels) != fmt.Sprint(wantLabels) {
		t.Fatalf("labels %v, want %v", got[0].Labels, wantLabels)
	}
	pts := got[0].Points
	if len(pts) != 4 {
		t.Fatalf("points %v: want 4 (null skipped, 1800000000000 outside the slice)", pts)
	}
	want := []Point{{1700000000000, 42, "42"}, {1700000000500, 42.5, "42.5"}, {1700000001000, 9007199254740992, "9007199254740993"}}
	for i, w := range want {
		if pts[i] != w {
			t.Errorf("point %d = %+v, want %+v", i, pts[i], w)
		}
	}
	if !math.IsNaN(pts[3].V) || pts[3].Raw != "NaN" {
		t.Errorf("point 3 = %+v, want NaN", pts[3])
	}
	for _, bad := range []string{`{}`, `[{"metric":"m","dps":{"x":1}}]`, `[{"metric":"m","dps":{"1":true}}]`, `[{"dps":{}}]`, `[{"metric":"m","dps":{"1":1}`} {
		err := DecodeQueryResponse(strings.NewReader(bad), s, func(*Series) error { return nil })
		if err == nil {
			t.Errorf("DecodeQueryResponse(%s) = nil, want an error", bad)
		}
	}
}

// TestPutSinkBody checks what PutSink sends: gzipped JSON arrays of at most
// batch points, values as the source wrote them.
func TestPutSinkBody(t *testing.T) {
	var bodies [][]map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/put" || r.Header.Get("Content-Encoding") != "gzip" {
			http.Error(w, "want gzip to /api/put", 400)
			return
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var pts []map[string]json.RawMessage
		if err := json.NewDecoder(zr).Decode(&pts); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		bodies = append(bodies, pts)
		w.WriteHeader(204)
	}))
	defer srv.Close()
	sink := NewPutSink(mustClient(t, Auth{}, 5*time.Second, 0), srv.URL, 2)
	ser := &Series{Labels: []Label{{MetricLabel, "sys.cpu"}, {"host", "a\"b"}}, Points: []Point{
		{1000, 42, "42"}, {1500, 0.1, "0.1"}, {2000, 9007199254740992, "9007199254740993"}, {3000, math.NaN(), "NaN"}, {4000, 1.5, ""}}}
	ctx := context.Background()
	if err := sink.Write(ctx, ser); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 3 || len(bodies[0]) != 2 || len(bodies[2]) != 1 {
		t.Fatalf("bodies of %d requests: %v; want 2+2+1 points", len(bodies), bodies)
	}
	var vals, times []string
	for _, b := range bodies {
		for _, p := range b {
			vals = append(vals, string(p["value"]))
			times = append(times, string(p["timestamp"]))
			if string(p["metric"]) != `"sys.cpu"` || string(p["tags"]) != `{"host":"a\"b"}` {
				t.Fatalf("point %v: metric or tags wrong", p)
			}
		}
	}
	if got := strings.Join(vals, " "); got != `42 0.1 9007199254740993 "NaN" 1.5` {
		t.Errorf("values %s", got)
	}
	if got := strings.Join(times, " "); got != `1 1500 2 3 4` {
		t.Errorf("timestamps %s: want seconds when whole, else ms", got)
	}
}

// TestRemoteWriteSinkBody decodes what RemoteWriteSink sends with
// hourglass's own remote-write decoder.
func TestRemoteWriteSinkBody(t *testing.T) {
	type sample struct {
		labels string
		t      int64
		v      float64
	}
	var got []sample
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		b, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, b)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		msg, err := prom.ParseWriteContentType(r.Header.Get("Content-Type"))
		if err != nil {
			http.Error(w, err.Error(), 415)
			return
		}
		var d prom.Decoder
		err = d.Decode(msg, raw, func(s *prom.Series) error {
			for ts, v := range s.Samples() {
				got = append(got, sample{prom.FormatLabels(s.Labels), ts, v})
			}
			return nil
		}, nil)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()
	sink := NewRemoteWriteSink(mustClient(t, Auth{}, 5*time.Second, 0), srv.URL+"/api/v1/write", 3)
	ctx := context.Background()
	a := &Series{Labels: []Label{{MetricLabel, "up"}, {"job", "x"}}, Points: []Point{{1, 1, ""}, {2, math.Inf(-1), ""}}}
	b := &Series{Labels: []Label{{MetricLabel, "temp"}}, Points: []Point{{1, 0.1, ""}, {2, -0.0, ""}, {3, math.MaxFloat64, ""}}}
	if err := sink.Write(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if requests != 2 || len(got) != 5 {
		t.Fatalf("%d requests with %v, want 2 (batch 3) with 5 samples", requests, got)
	}
	for i, w := range []sample{{`{__name__="up", job="x"}`, 1, 1}, {`{__name__="up", job="x"}`, 2, math.Inf(-1)}, {`{__name__="temp"}`, 1, 0.1}, {`{__name__="temp"}`, 2, 0}, {`{__name__="temp"}`, 3, math.MaxFloat64}} {
		if got[i].t != w.t || math.Float64bits(got[i].v) != math.Float64bits(w.v) || !strings.Contains(got[i].labels, "__name__") {
			t.Errorf("sample %d = %+v, want %+v", i, got[i], w)
		}
	}
}

// chunkedBody builds a STREAMED_XOR_CHUNKS answer: one frame per series.
func chunkedBody(t testing.TB, series map[string][]prompb.Sample) []byte {
	var buf bytes.Buffer
	w := remote.NewChunkedWriter(&buf, nopFlusher{})
	for name, smps := range series {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range smps {
			app.Append(0, s.Timestamp, s.Value)
		}
		resp := prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{{
			Labels: []prompb.Label{{Name: MetricLabel, Value: name}},
			Chunks: []prompb.Chunk{{MinTimeMs: smps[0].Timestamp, MaxTimeMs: smps[len(smps)-1].Timestamp, Type: prompb.Chunk_XOR, Data: c.Bytes()}},
		}}}
		b, err := resp.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// samplesBody builds a SAMPLES answer holding tss: the protobuf, and the
// body as sent (snappy).
func samplesBody(t testing.TB, tss ...*prompb.TimeSeries) (raw, body []byte) {
	raw, err := (&prompb.ReadResponse{Results: []*prompb.QueryResult{{Timeseries: tss}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return raw, snappy.Encode(nil, raw)
}

type nopFlusher struct{}

func (nopFlusher) Flush() {}

func TestDecodeChunkedReadResponse(t *testing.T) {
	body := chunkedBody(t, map[string][]prompb.Sample{"a": {{Timestamp: 5, Value: 1}, {Timestamp: 10, Value: 2}, {Timestamp: 20, Value: 3}}})
	var got []Point
	err := DecodeChunkedReadResponse(bytes.NewReader(body), 1<<20, Slice{10, 20}, func(q int64, s *Series) error {
		got = append(got, s.Points...)
		return nil
	})
	if err != nil || len(got) != 1 || got[0].T != 10 || got[0].V != 2 {
		t.Fatalf("got %v, %v; want the one sample in [10, 20) (chunks hold samples outside the range)", got, err)
	}
	body[len(body)-1] ^= 0xff
	if err := DecodeChunkedReadResponse(bytes.NewReader(body), 1<<20, Slice{0, 100}, func(int64, *Series) error { return nil }); err == nil {
		t.Fatal("a corrupted frame decoded without error")
	}
}

func TestDecodeSamplesReadResponse(t *testing.T) {
	_, body := samplesBody(t, &prompb.TimeSeries{
		Labels:     []prompb.Label{{Name: "job", Value: "x"}, {Name: MetricLabel, Value: "up"}},
		Samples:    []prompb.Sample{{Timestamp: 1, Value: 1}, {Timestamp: 50, Value: 2}},
		Histograms: []prompb.Histogram{{Timestamp: 2}},
	})
	var got []Series
	err := DecodeSamplesReadResponse(body, Slice{0, 10}, func(q int64, s *Series) error {
		got = append(got, Series{Labels: append([]Label(nil), s.Labels...), Points: append([]Point(nil), s.Points...), Skipped: s.Skipped})
		return nil
	})
	if err != nil || len(got) != 1 || len(got[0].Points) != 1 || got[0].Skipped != 1 || got[0].Labels[0].Name != MetricLabel {
		t.Fatalf("got %+v, %v; want one series, labels sorted, one sample in range and one histogram skipped", got, err)
	}
	if err := DecodeSamplesReadResponse([]byte("not snappy"), Slice{0, 10}, func(int64, *Series) error { return nil }); err == nil {
		t.Fatal("garbage decoded without error")
	}
}

func TestDedupAcrossQueries(t *testing.T) {
	var n int
	d := dedup{first: map[string]int64{}, fn: func(*Series) error { n++; return nil }}
	a := &Series{Labels: []Label{{MetricLabel, "a"}}}
	b := &Series{Labels: []Label{{MetricLabel, "b"}}}
	_ = d.series(0, a)
	_ = d.series(0, a) // a second part from the same query: passed on
	_ = d.series(1, a) // the same series from another selector: dropped
	_ = d.series(1, b)
	if n != 3 {
		t.Fatalf("passed on %d parts, want 3", n)
	}
}

// appendQueryJSON encodes series as /api/query answers them, for the fuzz
// round trip.
func appendQueryJSON(dst []byte, ss []Series) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		tags := map[string]string{}
		for _, l := range s.Labels[1:] {
			tags[l.Name] = l.Value
		}
		tb, _ := json.Marshal(tags)
		dst = append(dst, `{"metric":`...)
		dst = strconv.AppendQuote(dst, s.Metric())
		dst = append(dst, `,"tags":`...)
		dst = append(dst, tb...)
		dst = append(dst, `,"dps":{`...)
		for j, p := range s.Points {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = strconv.AppendInt(dst, p.T, 10)
			dst = append(dst, `":`...)
			if isJSONNumber(p.Raw) {
				dst = append(dst, p.Raw...)
			} else {
				dst = strconv.AppendQuote(dst, p.Raw)
			}
		}
		dst = append(dst, "}}"...)
	}
	return append(dst, ']')
}

// BenchmarkDecodeQueryResponse decodes an /api/query answer of 100 series
// of 360 points.
func BenchmarkDecodeQueryResponse(b *testing.B) {
	var ss []Series
	for i := range 100 {
		s := Series{Labels: []Label{{MetricLabel, "sys.cpu.user"}, {"host", "h" + strconv.Itoa(i)}}}
		for j := range 360 {
			s.Points = append(s.Points, Point{T: 1700000000000 + int64(j)*10000, Raw: strconv.FormatFloat(float64(j)*0.25+float64(i), 'g', -1, 64)})
		}
		ss = append(ss, s)
	}
	body := appendQueryJSON(nil, ss)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	sl := Slice{0, math.MaxInt64}
	for b.Loop() {
		n := 0
		if err := DecodeQueryResponse(bytes.NewReader(body), sl, func(s *Series) error { n += len(s.Points); return nil }); err != nil || n != 36000 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/36000, "ns/point")
}

// BenchmarkAppendPutPoint encodes /api/put JSON.
func BenchmarkAppendPutPoint(b *testing.B) {
	ls := []Label{{MetricLabel, "sys.cpu.user"}, {"dc", "lga"}, {"host", "web01"}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for j := range 1000 {
			buf = appendPutPoint(buf, "sys.cpu.user", ls, Point{T: 1700000000000 + int64(j)*10000, Raw: "42.5"})
		}
	}
	b.SetBytes(int64(len(buf)))
}
