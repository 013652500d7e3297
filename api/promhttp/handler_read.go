package promhttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"hourglass/api/dialect"
	"hourglass/api/prom"
	"hourglass/internal/errclass"
	"hourglass/internal/quote"
	"hourglass/query"
)

// handleRead is remote read (POST /api/v1/read): a snappy-compressed
// prometheus.ReadRequest in; per query, the series its matchers select with
// their samples in its range, as a snappy ReadResponse (SAMPLES) or as
// framed ChunkedReadResponses of XOR chunks (STREAMED_XOR_CHUNKS), whichever
// the client lists first. One request shares one series and sample budget.
func (p *remote) handleRead(w http.ResponseWriter, r *http.Request) {
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "snappy":
	default:
		http.Error(w, fmt.Sprintf("Content-Encoding %q is not accepted: remote read requests are snappy (block format)", enc), http.StatusUnsupportedMediaType)
		return
	}
	res := p.host.Reserve()
	defer res.Release()
	body := dialect.GetBuf()
	defer dialect.PutBuf(body)
	limit := p.cfg.ReadMaxDecodedBytes
	if err := p.host.ReadSnappy(r.Body, body, limit, limit, res, nil); err != nil {
		code, msg := p.host.BodyError(err)
		switch {
		case errors.Is(err, dialect.ErrTooLargeAsSent):
			msg = (&dialect.BodyTooLargeError{What: "as sent", Limit: limit}).Error()
		case errors.Is(err, dialect.ErrDecodeBusy):
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(p.cfg.RetryAfter.Seconds()))))
		case errors.Is(err, dialect.ErrBadEncoding):
			msg = "the body is not snappy (block format): " + err.Error()
		}
		http.Error(w, msg, code)
		return
	}
	raw := body.Bytes()
	req, err := prom.DecodeReadRequest(raw)
	if err != nil {
		http.Error(w, quote.Message(err.Error()), http.StatusBadRequest)
		return
	}
	rt, err := prom.NegotiateResponseType(req.Accepted)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.shared.QueryTimeout)
	defer cancel()
	release := p.admitRead(ctx, w)
	if release == nil {
		return
	}
	defer release()
	mint, maxt := int64(0), int64(0)
	for i, q := range req.Queries {
		if i == 0 || q.StartMs < mint {
			mint = q.StartMs
		}
		if i == 0 || q.EndMs > maxt {
			maxt = q.EndMs
		}
	}
	querier, err := p.queryable.Querier(mint, maxt)
	if err != nil {
		p.readError(w, err)
		return
	}
	defer querier.Close()
	selectQuery := func(q *prom.ReadQuery) storage.SeriesSet {
		hints := &storage.SelectHints{Start: q.StartMs, End: q.EndMs}
		if h := q.Hints; h != nil {
			hints.Step, hints.Func, hints.Grouping, hints.By, hints.Range = h.StepMs, h.Func, h.Grouping, h.By, h.RangeMs
		}
		return querier.Select(ctx, true, hints, q.Matchers...)
	}

	if rt == prom.ResponseSamples {
		var resp prom.SamplesResponse
		for i := range req.Queries {
			ss := selectQuery(&req.Queries[i])
			for ss.Next() {
				s := ss.At()
				if err := resp.AddSeries(s.Labels(), s.Iterator(nil)); err != nil {
					p.readError(w, err)
					return
				}
			}
			if err := ss.Err(); err != nil {
				p.readError(w, err)
				return
			}
			resp.EndQuery()
		}
		out := dialect.GetBuf()
		defer dialect.PutBuf(out)
		body := resp.AppendSnappy(out.AvailableBuffer())
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Header().Set("Content-Encoding", "snappy")
		_, _ = w.Write(body)
		return
	}

	// STREAMED_XOR_CHUNKS: the status goes out with the first frame, so an
	// error of the first query is still a proper error; a later one ends
	// the stream early, which the client reports.
	f, _ := w.(http.Flusher)
	cw := prom.NewChunkedWriter(w, p.cfg.ReadMaxBytesInFrame)
	started := false
	for i := range req.Queries {
		ss := selectQuery(&req.Queries[i])
		if err := ss.Err(); err != nil {
			if !started {
				p.readError(w, err)
			} else {
				p.log.Warn("remote read: stream cut short", "err", err)
			}
			return
		}
		for ss.Next() {
			if !started {
				w.Header().Set("Content-Type", prom.ChunkedContentType)
				w.Header().Del("Content-Encoding")
				w.WriteHeader(http.StatusOK)
				started = true
			}
			s := ss.At()
			if err := cw.WriteSeries(int64(i), s.Labels(), s.Iterator(nil)); err != nil {
				p.log.Warn("remote read: stream cut short", "err", err)
				return
			}
			if f != nil {
				f.Flush()
			}
		}
	}
	if !started {
		w.Header().Set("Content-Type", prom.ChunkedContentType)
		w.WriteHeader(http.StatusOK)
	}
}

// readError answers a remote-read error: 400 for a request over the limits
// (as Prometheus answers its sample limit), 503 when the storage asks for a
// retry or the time ran out, 500 otherwise.
func (p *remote) readError(w http.ResponseWriter, err error) {
	var le *query.LimitError
	var stErr promql.ErrStorage
	if errors.As(err, &stErr) {
		err = stErr.Err
	}
	code := http.StatusInternalServerError
	switch {
	case errors.As(err, &le):
		code = http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
		err = fmt.Errorf("remote read timed out after %v: %w", p.shared.QueryTimeout, err)
	case errclass.IsUnavailable(err):
		code = http.StatusServiceUnavailable
	}
	if code >= 500 {
		p.log.Error("remote read failed", "err", err)
	}
	http.Error(w, err.Error(), code)
}

// admitRead waits for a slot of -query-max-concurrent for a remote read;
// nil when refused, the reply written: 503 with a Retry-After past
// -query-queue-timeout.
func (p *remote) admitRead(ctx context.Context, w http.ResponseWriter) func() {
	release, err := p.querier.Admit(ctx)
	if err == nil {
		return release
	}
	var qe *query.QueueError
	if errors.As(err, &qe) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(p.cfg.RetryAfter.Seconds()))))
		http.Error(w, qe.Error(), http.StatusServiceUnavailable)
		return nil
	}
	p.readError(w, err)
	return nil
}
