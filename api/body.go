package api

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"hourglass/api/dialect"

	"github.com/klauspost/compress/zstd"
)

// readBody reads the request body into buf, decompressing gzip, zstd or
// snappy (block) by Content-Encoding, within the configured limits and the
// server's decoding budget (dialect.ErrDecodeBusy when it is spent). An unsupported
// encoding is dialect.ErrUnsupportedEncoding.
func (s *Server) readBody(r *http.Request, buf *bytes.Buffer) error {
	res := s.decoding.reservation()
	defer res.release()
	limit := s.cfg.MaxBodyBytes
	raw := &dialect.LimitReader{R: r.Body, N: limit, Err: dialect.ErrTooLargeAsSent}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return readGrowing(raw, buf, limit, dialect.ErrTooLargeAsSent, res)
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", dialect.ErrBadEncoding, err)
		}
		return s.readDecoded(zr, buf, res)
	case "zstd":
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(s.cfg.MaxDecodedBytes)))
		if err != nil {
			return fmt.Errorf("%w: zstd: %v", dialect.ErrBadEncoding, err)
		}
		defer zr.Close()
		return s.readDecoded(zr, buf, res)
	case "snappy":
		return s.readSnappy(raw, buf, s.cfg.MaxDecodedBytes, res)
	}
	return fmt.Errorf("%w %q", dialect.ErrUnsupportedEncoding, enc)
}

func (s *Server) readDecoded(rd io.Reader, buf *bytes.Buffer, res *reservation) error {
	tooLarge := &dialect.BodyTooLargeError{What: "once decompressed", Limit: s.cfg.MaxDecodedBytes}
	err := readGrowing(rd, buf, s.cfg.MaxDecodedBytes, tooLarge, res)
	if err != nil {
		var tl *dialect.BodyTooLargeError
		if errors.As(err, &tl) || errors.Is(err, dialect.ErrTooLargeAsSent) || errors.Is(err, dialect.ErrDecodeBusy) {
			return err
		}
		return fmt.Errorf("%w: %v", dialect.ErrBadEncoding, err)
	}
	return nil
}

// Growing reads: readGrowing never allocates for more than has arrived. It
// fills what buf already holds (a pooled buffer), then chunks of growing
// size, each reserved from the decoding budget before it is allocated, and
// copies the chunks into buf once the body has ended within the limit. A
// body past the limit costs the limit, once, and nothing is copied.
const (
	firstChunk = 32 << 10
	maxChunk   = 1 << 20
)

// readGrowing reads rd to its end into buf (appending), failing with
// tooLarge past limit bytes and with dialect.ErrDecodeBusy when res cannot grow.
func readGrowing(rd io.Reader, buf *bytes.Buffer, limit int64, tooLarge error, res *reservation) error {
	total := int64(buf.Len())
	start := total
	// First what buf can take without growing.
	for buf.Available() > 0 {
		p := buf.AvailableBuffer()[:buf.Available()]
		n, err := rd.Read(p)
		buf.Write(p[:n])
		total += int64(n)
		if total-start > limit {
			return tooLarge
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	var chunks [][]byte
	size := firstChunk
	for {
		if !res.grow(int64(size)) {
			return dialect.ErrDecodeBusy
		}
		c := make([]byte, size)
		n, err := io.ReadFull(rd, c)
		chunks = append(chunks, c[:n])
		total += int64(n)
		if total-start > limit {
			return tooLarge
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
		size = min(2*size, maxChunk)
	}
	rest := int(total) - buf.Len()
	if !res.grow(int64(buf.Len() + rest)) {
		return dialect.ErrDecodeBusy
	}
	buf.Grow(rest)
	for _, c := range chunks {
		buf.Write(c)
	}
	return nil
}

// bodyError turns a readBody error into the status and message of a reply.
func (s *Server) bodyError(err error) (int, string) {
	var tl *dialect.BodyTooLargeError
	var cl *errClaimTooLarge
	switch {
	case errors.As(err, &cl):
		return http.StatusRequestEntityTooLarge, cl.Error()
	case errors.Is(err, dialect.ErrTooLargeAsSent):
		return http.StatusRequestEntityTooLarge, (&dialect.BodyTooLargeError{What: "as sent", Limit: s.cfg.MaxBodyBytes}).Error()
	case errors.As(err, &tl):
		return http.StatusRequestEntityTooLarge, tl.Error()
	case errors.Is(err, dialect.ErrDecodeBusy):
		return http.StatusServiceUnavailable, fmt.Sprintf("%v (-max-decoding-bytes, %d bytes): retry later", err, s.cfg.MaxDecodingBytes)
	case errors.Is(err, dialect.ErrUnsupportedEncoding):
		return http.StatusUnsupportedMediaType, err.Error()
	case errors.Is(err, dialect.ErrBadEncoding):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusBadRequest, "reading the request body: " + err.Error()
}
