package api

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
)

// errBodyTooLarge is returned by readBody when a limit is exceeded; the
// handler answers 413.
type errBodyTooLarge struct {
	what  string
	limit int64
}

func (e *errBodyTooLarge) Error() string {
	return fmt.Sprintf("request body %s is larger than the limit of %d bytes", e.what, e.limit)
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 64<<20 {
		bufPool.Put(b)
	}
}

// readBody reads the request body into buf, decompressing gzip, zstd or
// snappy (block) by Content-Encoding, within the configured limits. An
// unsupported encoding is errUnsupportedEncoding.
func (s *Server) readBody(r *http.Request, buf *bytes.Buffer) error {
	limit := s.cfg.MaxBodyBytes
	raw := &strictLimitReader{r: r.Body, left: limit}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		_, err := buf.ReadFrom(raw)
		return err
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", errBadEncoding, err)
		}
		return s.readDecoded(zr, buf)
	case "zstd":
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(s.cfg.MaxDecodedBytes)))
		if err != nil {
			return fmt.Errorf("%w: zstd: %v", errBadEncoding, err)
		}
		defer zr.Close()
		return s.readDecoded(zr, buf)
	case "snappy":
		comp := getBuf()
		defer putBuf(comp)
		if _, err := comp.ReadFrom(raw); err != nil {
			return err
		}
		dlen, err := snappy.DecodedLen(comp.Bytes())
		if err != nil {
			return fmt.Errorf("%w: snappy: %v", errBadEncoding, err)
		}
		if int64(dlen) > s.cfg.MaxDecodedBytes {
			return &errBodyTooLarge{"once decompressed", s.cfg.MaxDecodedBytes}
		}
		buf.Grow(dlen)
		out, err := snappy.Decode(buf.AvailableBuffer()[:dlen], comp.Bytes())
		if err != nil {
			return fmt.Errorf("%w: snappy: %v", errBadEncoding, err)
		}
		buf.Write(out)
		return nil
	}
	return fmt.Errorf("%w %q", errUnsupportedEncoding, enc)
}

func (s *Server) readDecoded(rd io.Reader, buf *bytes.Buffer) error {
	n, err := buf.ReadFrom(io.LimitReader(rd, s.cfg.MaxDecodedBytes+1))
	if err != nil {
		var tl *errBodyTooLarge
		if errors.As(err, &tl) || errors.Is(err, errTooLargeAsSent) {
			return err
		}
		return fmt.Errorf("%w: %v", errBadEncoding, err)
	}
	if n > s.cfg.MaxDecodedBytes {
		return &errBodyTooLarge{"once decompressed", s.cfg.MaxDecodedBytes}
	}
	return nil
}

// strictLimitReader reads at most left bytes and fails with errBodyTooLarge
// if the source has more, so a truncated body is never mistaken for a whole one.
type strictLimitReader struct {
	r    io.Reader
	left int64
}

func (l *strictLimitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, errTooLargeAsSent
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

var (
	errBadEncoding         = errors.New("the request body does not decompress")
	errUnsupportedEncoding = errors.New("unsupported Content-Encoding")
)

// errTooLargeAsSent marks a body over MaxBodyBytes; bodyError fills in the limit.
var errTooLargeAsSent = errors.New("request body too large")

// bodyError turns a readBody error into the status and message of a reply.
func (s *Server) bodyError(err error) (int, string) {
	var tl *errBodyTooLarge
	switch {
	case errors.Is(err, errTooLargeAsSent):
		return http.StatusRequestEntityTooLarge, (&errBodyTooLarge{"as sent", s.cfg.MaxBodyBytes}).Error()
	case errors.As(err, &tl):
		return http.StatusRequestEntityTooLarge, tl.Error()
	case errors.Is(err, errUnsupportedEncoding):
		return http.StatusUnsupportedMediaType, err.Error()
	case errors.Is(err, errBadEncoding):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusBadRequest, "reading the request body: " + err.Error()
}
