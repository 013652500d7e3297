package opentsdbhttp

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"hourglass/api/dialect"
	"hourglass/api/opentsdb"
	"hourglass/ingest"
	"hourglass/model"
)

// putState is the per-request scratch of /api/put, pooled.
type putState struct {
	dec   opentsdb.PutDecoder
	batch *ingest.Batch
	tags  []model.Tag
	bad   []*opentsdb.PointError
}

func (s *writes) putPool() *sync.Pool {
	s.putOnce.Do(func() {
		lim := s.writer.Limits()
		s.puts.New = func() any {
			return &putState{
				dec:   opentsdb.PutDecoder{Limits: opentsdb.Limits{MaxTags: lim.MaxTags, MaxNameLen: lim.MaxNameLen}},
				batch: s.writer.NewBatch(),
			}
		}
	})
	return &s.puts
}

// toSeriesTags converts a decoded point's tags into dst.
func toSeriesTags(dst []model.Tag, tags []opentsdb.Tag) []model.Tag {
	dst = dst[:0]
	for _, t := range tags {
		dst = append(dst, model.Tag{Key: t.Key, Value: t.Value})
	}
	return dst
}

// putTally is what an /api/put request did, window by window.
type putTally struct {
	success, failed int
	errs            []*opentsdb.PointError // up to Config.PutMaxErrors, by index
	dropped         int                    // errors past that
	limit           error                  // the first refusal by a series limit
}

func (t *putTally) addError(pe *opentsdb.PointError, max int) {
	if len(t.errs) < max {
		t.errs = append(t.errs, pe)
	} else {
		t.dropped++
	}
}

// putWindow decodes one body (or one window of a streamed body, whose first
// point is number offset), stores its points and adds the outcome to t. A
// non-nil error is the body's own (malformed JSON: nothing of this window is
// stored) or the store's.
func (s *writes) putWindow(ctx context.Context, st *putState, body []byte, offset int, t *putTally) error {
	st.batch.Reset()
	st.bad = st.bad[:0]
	err := st.dec.Decode(body, func(i int, dp *opentsdb.DataPoint, perr error) error {
		if perr != nil {
			st.batch.Reject(perr)
			var pe *opentsdb.PointError
			if errors.As(perr, &pe) {
				pe.Index += offset
				pe.Raw = append([]byte(nil), pe.Raw...)
				st.bad = append(st.bad, pe)
			}
			return nil
		}
		// The decoder remembers the series it has seen, and beside each
		// one, the Labels the batch gave it: a series sent again is
		// checked and looked up once, by the decoder.
		var aerr error
		if k, ok := st.dec.Ref().(*ingest.Known); ok {
			aerr = st.batch.AddKnown(k, dp.Timestamp, dp.Value)
		} else {
			st.tags = toSeriesTags(st.tags, dp.Tags)
			if aerr = st.batch.Add(dp.Metric, st.tags, dp.Timestamp, dp.Value); aerr == nil {
				st.dec.SetRef(&ingest.Known{Labels: st.batch.LastLabels()})
			}
		}
		if aerr != nil {
			st.bad = append(st.bad, &opentsdb.PointError{Index: offset + i, Message: aerr.Error(), Raw: append([]byte(nil), st.dec.Raw()...)})
		}
		return nil
	})
	if err != nil {
		// The window as a whole is bad: nothing of it is stored.
		s.host.Points("opentsdb_http", "rejected").Add(float64(st.batch.Len()))
		return err
	}
	if err := st.batch.Commit(ctx); err != nil {
		s.host.Points("opentsdb_http", "error").Add(float64(st.batch.Len()))
		return err
	}
	// Errors found at commit (a full UID space, say) join the decoding ones.
	reported := make(map[int]bool, len(st.bad))
	for _, pe := range st.bad {
		reported[pe.Index] = true
	}
	for i, e := range st.batch.Errors() {
		if e != nil && !reported[offset+i] {
			st.bad = append(st.bad, &opentsdb.PointError{Index: offset + i, Message: e.Error()})
		}
		if t.limit == nil && errors.Is(e, model.ErrSeriesLimit) {
			t.limit = e
		}
	}
	sortPointErrors(st.bad)
	for _, pe := range st.bad {
		t.addError(pe, s.cfg.PutMaxErrors)
	}
	failed := st.batch.Failed()
	t.failed += failed
	t.success += st.batch.Len() - failed
	s.host.Points("opentsdb_http", "stored").Add(float64(st.batch.Len() - failed))
	s.host.Points("opentsdb_http", "rejected").Add(float64(failed))
	return nil
}

// handlePut is /api/put: one point or an array, each stored or rejected on
// its own; ?summary and ?details report which (OpenTSDB's PutDataPointRpc).
// A body up to Config.PutStreamBytes is decoded whole, so a malformed one
// stores nothing; a longer one (an array) is decoded and stored in windows of
// about that size as it arrives, so no body is too large, and a malformed
// part stops it there (what came before is stored, and the reply says how
// much). ?sync waits for the WAL's fsync; ?sync_timeout=<ms> bounds that wait.
func (s *writes) handlePut(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	summary, details := opentsdb.HasFlag(q, "summary"), opentsdb.HasFlag(q, "details")
	sync := opentsdb.HasFlag(q, "sync")
	syncTimeout := time.Duration(0)
	if v := q.Get("sync_timeout"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			WriteError(w, http.StatusBadRequest, "Unable to parse the sync_timeout parameter: "+v, "a number of milliseconds")
			return
		}
		syncTimeout = time.Duration(n) * time.Millisecond
		sync = sync || n > 0
	}
	rd, closeBody, err := s.putBodyReader(r)
	if err != nil {
		code, msg := s.host.BodyError(err)
		WriteError(w, code, msg, "")
		return
	}
	defer closeBody()
	st := s.putPool().Get().(*putState)
	defer s.putPool().Put(st)
	st.batch.NewRequest()
	var t putTally

	// The first window: is it the whole body?
	body := dialect.GetBuf()
	defer dialect.PutBuf(body)
	n, err := body.ReadFrom(io.LimitReader(rd, s.cfg.PutStreamBytes+1))
	if err != nil {
		code, msg := s.host.BodyError(wrapDecodeErr(err))
		WriteError(w, code, msg, "")
		return
	}
	if n <= s.cfg.PutStreamBytes {
		if err := s.putWindow(r.Context(), st, body.Bytes(), 0, &t); err != nil {
			s.writeError(w, r, err)
			return
		}
	} else {
		sr := &putStream{r: bufio.NewReaderSize(io.MultiReader(body, rd), 64<<10), window: s.cfg.PutStreamBytes}
		if err := s.putStreamed(r.Context(), st, sr, &t); err != nil {
			code, msg, det := openTSDBStatus(err)
			if isBodyError(err) {
				code, msg = s.host.BodyError(err)
				det = ""
			}
			if t.success+t.failed > 0 {
				if det != "" {
					det += "; "
				}
				det += fmt.Sprintf("the body was streamed: the %d points before this part of it were processed "+
					"(%d stored, %d failed), nothing after it", t.success+t.failed, t.success, t.failed)
			}
			WriteError(w, code, msg, det)
			return
		}
	}
	timeouts := -1
	if syncTimeout > 0 {
		timeouts = 0
	}
	if sync {
		if err, timedOut := s.syncWAL(syncTimeout); timedOut {
			timeouts, t.success = t.success, 0
		} else if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if !summary && !details {
		switch {
		case timeouts > 0:
			WriteError(w, http.StatusBadRequest, fmt.Sprintf(
				"The put call has timedout with %d successful writes, %d failed writes and %d timed out writes.",
				t.success, t.failed, timeouts), "The points are in the write-ahead log; its fsync had not finished")
		case t.failed == 0:
			w.WriteHeader(http.StatusNoContent)
		case t.limit != nil:
			WriteError(w, http.StatusBadRequest, "One or more data points had errors: "+t.limit.Error(),
				`Append "details" to the put request for each point's error`)
		default:
			WriteError(w, http.StatusBadRequest, "One or more data points had errors",
				`Please see the TSD logs or append "details" to the put request`)
		}
		return
	}
	var list []*opentsdb.PointError
	if details {
		list = append([]*opentsdb.PointError{}, t.errs...)
	}
	code := http.StatusOK
	if t.failed > 0 || timeouts > 0 {
		code = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(opentsdb.AppendPutSummary(nil, t.success, t.failed, timeouts, list))
}

// syncWAL fsyncs the WAL, waiting at most timeout (0: no bound). timedOut
// says the wait ended first; the fsync goes on.
func (s *writes) syncWAL(timeout time.Duration) (err error, timedOut bool) {
	if timeout <= 0 {
		return s.head.SyncWAL(), false
	}
	done := make(chan error, 1)
	go func() { done <- s.head.SyncWAL() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err, false
	case <-timer.C:
		return nil, true
	}
}

// putStreamed stores a long array body window by window.
func (s *writes) putStreamed(ctx context.Context, st *putState, sr *putStream, t *putTally) error {
	if err := sr.open(); err != nil {
		return err
	}
	offset := 0
	for {
		win, n, more, err := sr.next()
		if err != nil {
			return err
		}
		if n > 0 {
			if err := s.putWindow(ctx, st, win, offset, t); err != nil {
				return err
			}
			offset += n
		}
		if !more {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// putStream cuts a JSON array read from r into windows of whole elements,
// each returned as a JSON array of about window bytes. It checks only the
// structure it needs (strings, nesting, commas); the decoder checks the rest.
type putStream struct {
	r      *bufio.Reader
	window int64
	buf    []byte
	pos    int64 // bytes consumed, for messages
	done   bool
}

func streamErr(pos int64, msg string) error {
	return &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "Unable to parse the given JSON",
		Details: fmt.Sprintf("%s at byte %d of the body", msg, pos)}
}

// readByte reads the next byte. The end of the body is io.EOF; any other
// error (a decompression or size error) is returned as it is.
func (p *putStream) readByte() (byte, error) {
	c, err := p.r.ReadByte()
	if err == nil {
		p.pos++
	}
	return c, err
}

// endErr is the error of a body that stops at a point where it may not:
// "unexpected end" for io.EOF, the read error itself otherwise.
func (p *putStream) endErr(err error) error {
	if err == io.EOF {
		return streamErr(p.pos, "unexpected end of the body")
	}
	return err
}

// isBodyError reports whether err is about reading the body (its size or
// its encoding), which bodyError answers.
func isBodyError(err error) bool {
	var tl *dialect.BodyTooLargeError
	return errors.As(err, &tl) || errors.Is(err, dialect.ErrTooLargeAsSent) || errors.Is(err, dialect.ErrBadEncoding) ||
		errors.Is(err, dialect.ErrUnsupportedEncoding)
}

func (p *putStream) skipSpace() (byte, error) {
	for {
		c, err := p.readByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

// open reads up to the array's first element.
func (p *putStream) open() error {
	c, err := p.skipSpace()
	if err != nil {
		return p.endErr(err)
	}
	if c != '[' {
		// Only an array can be this long and valid.
		return streamErr(p.pos, "a body of more than one window must be a JSON array of data points")
	}
	c, err = p.skipSpace()
	if err != nil {
		return p.endErr(err)
	}
	if c == ']' {
		p.done = true
		return nil
	}
	return p.r.UnreadByte()
}

// next returns the next window (a JSON array), how many elements it holds and
// whether more follow.
func (p *putStream) next() ([]byte, int, bool, error) {
	if p.done {
		return nil, 0, false, nil
	}
	p.buf = append(p.buf[:0], '[')
	n := 0
	maxElem := max(p.window, 1<<20)
	for {
		start := len(p.buf)
		c, err := p.skipSpace()
		if err != nil {
			return nil, 0, false, p.endErr(err)
		}
		// One element: a value, scanned to its end.
		depth, inStr, esc := 0, false, false
		for {
			p.buf = append(p.buf, c)
			if inStr {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
				}
			} else {
				switch c {
				case '"':
					inStr = true
				case '{', '[':
					depth++
				case '}', ']':
					depth--
				}
			}
			if int64(len(p.buf)-start) > maxElem {
				return nil, 0, false, streamErr(p.pos, fmt.Sprintf("a data point of more than %d bytes", maxElem))
			}
			if depth < 0 {
				return nil, 0, false, streamErr(p.pos, "unbalanced brackets")
			}
			if depth == 0 && !inStr {
				// A scalar element ends before a separator; peek at it.
				if c != '}' && c != ']' && c != '"' {
					nb, err := p.r.Peek(1)
					if err == nil && nb[0] != ',' && nb[0] != ']' && nb[0] != ' ' && nb[0] != '\n' && nb[0] != '\r' && nb[0] != '\t' {
						c, _ = p.readByte()
						continue
					}
				}
				break
			}
			if c, err = p.readByte(); err != nil {
				return nil, 0, false, p.endErr(err)
			}
		}
		n++
		sep, err := p.skipSpace()
		if err != nil {
			return nil, 0, false, p.endErr(err)
		}
		switch sep {
		case ']':
			// The end; nothing but space may follow.
			for {
				c, err := p.readByte()
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, 0, false, wrapDecodeErr(err)
				}
				if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
					return nil, 0, false, streamErr(p.pos, "data after the end of the array")
				}
			}
			p.done = true
			return append(p.buf, ']'), n, false, nil
		case ',':
			if int64(len(p.buf)) >= p.window {
				return append(p.buf, ']'), n, true, nil
			}
			p.buf = append(p.buf, ',')
		default:
			return nil, 0, false, streamErr(p.pos, fmt.Sprintf("expected ',' or ']', found %q", sep))
		}
	}
}

// wrapDecodeErr turns a body read error into one bodyError knows.
func wrapDecodeErr(err error) error {
	var tl *dialect.BodyTooLargeError
	if errors.As(err, &tl) || errors.Is(err, dialect.ErrTooLargeAsSent) || errors.Is(err, dialect.ErrBadEncoding) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
		errors.Is(err, zstd.ErrMagicMismatch) {
		return fmt.Errorf("%w: %v", dialect.ErrBadEncoding, err)
	}
	return err
}

// putBodyReader returns the decoded body of an /api/put request as a
// stream: identity, gzip or zstd (a snappy block is read whole, within
// MaxDecodedBytes); a compressed stream reserves two windows of the decoding
// budget until closed (dialect.ErrDecodeBusy if it cannot). Decoded, it may hold at most Config.PutMaxBytes (0: no
// limit).
func (s *writes) putBodyReader(r *http.Request) (io.Reader, func(), error) {
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	var rd io.Reader
	closeFn := func() {}
	switch enc {
	case "", "identity":
		rd = r.Body
	case "gzip", "x-gzip", "zstd":
		// A decompressed stream holds about two windows at once: reserved
		// from the decoding budget for the whole request.
		res := s.host.Reserve()
		if !res.Grow(2 * s.cfg.PutStreamBytes) {
			return nil, closeFn, dialect.ErrDecodeBusy
		}
		if enc == "zstd" {
			zr, err := zstd.NewReader(r.Body, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(s.cfg.MaxDecodedBytes)))
			if err != nil {
				res.Release()
				return nil, closeFn, fmt.Errorf("%w: zstd: %v", dialect.ErrBadEncoding, err)
			}
			rd, closeFn = zr, func() { zr.Close(); res.Release() }
			break
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			res.Release()
			return nil, closeFn, fmt.Errorf("%w: gzip: %v", dialect.ErrBadEncoding, err)
		}
		rd, closeFn = zr, res.Release
	default:
		// Snappy (a block, not a stream) and anything else: readBody knows.
		body := dialect.GetBuf()
		if err := s.host.ReadBody(r, body); err != nil {
			dialect.PutBuf(body)
			return nil, closeFn, err
		}
		return body, func() { dialect.PutBuf(body) }, nil
	}
	if s.cfg.PutMaxBytes > 0 {
		rd = &dialect.LimitReader{R: rd, N: s.cfg.PutMaxBytes,
			Err: &dialect.BodyTooLargeError{What: "once decompressed (-put-max-bytes)", Limit: s.cfg.PutMaxBytes}}
	}
	return &decodeErrReader{rd}, closeFn, nil
}

// decodeErrReader marks errors of a decompressing reader as bad encodings.
type decodeErrReader struct{ r io.Reader }

func (d *decodeErrReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = wrapDecodeErr(err)
	}
	return n, err
}

func sortPointErrors(errs []*opentsdb.PointError) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Index < errs[j].Index })
}
