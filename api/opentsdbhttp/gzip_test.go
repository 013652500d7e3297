package opentsdbhttp

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// replyBody is an /api/query reply of n results of pts points each, as
// the load generator's mix gets them (topk: 417 results of a point; raw:
// one of 360).
func replyBody(n, pts int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":"node_cpu_usage","tags":{"dc":"dc-%d","host":"host-%06d","region":"region-%d","service":"svc-%d"},"aggregateTags":[],"dps":{`, i%12, i*7, i%4, i%8)
		for k := range pts {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d":%d.%02d`, 1764300000+k*10, (i*31+k*7)%100, (i*17+k*3)%100)
		}
		b.WriteString("}}")
	}
	b.WriteByte(']')
	return b.Bytes()
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// TestGzipReply: what otsGzipWriter writes reads back as what it was
// given, written whole or in pieces.
func TestGzipReply(t *testing.T) {
	for _, body := range [][]byte{replyBody(417, 1), replyBody(1, 360), replyBody(3, 20000), []byte("[]")} {
		for _, piece := range []int{len(body), 1000, 1 << 20} {
			rec := httptest.NewRecorder()
			g := &otsGzipWriter{ResponseWriter: rec}
			for b := body; len(b) > 0; {
				n := min(piece, len(b))
				if _, err := g.Write(b[:n]); err != nil {
					t.Fatal(err)
				}
				b = b[n:]
			}
			g.finish()
			if rec.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("Content-Encoding %q", rec.Header().Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%d bytes in pieces of %d: read back %d bytes, %v", len(body), piece, len(got), err)
			}
		}
	}
}

// BenchmarkGzipReply gzips replies of the mix's sizes as /api/query does:
// a pooled writer, the whole reply in one Write.
func BenchmarkGzipReply(b *testing.B) {
	for _, c := range []struct {
		name   string
		n, pts int
	}{{"topk", 417, 1}, {"raw", 1, 360}, {"sum", 4, 61}} {
		body := replyBody(c.n, c.pts)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			w := &discardWriter{h: http.Header{}}
			for b.Loop() {
				g := &otsGzipWriter{ResponseWriter: w}
				g.Write(body)
				g.finish()
			}
		})
	}
}
