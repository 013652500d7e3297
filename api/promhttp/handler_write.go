package promhttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"hourglass/api/dialect"
	"hourglass/api/prom"
	"hourglass/chunk"
	"hourglass/ingest"
	"hourglass/internal/errclass"
	"hourglass/internal/quote"
	"hourglass/model"
	"hourglass/query"
)

// Remote write (POST /api/v1/write), as the Remote-Write 1.0 and 2.0
// specifications prescribe:
//
//	204  everything written
//	400  invalid data, never worth a retry: a malformed body (nothing
//	     written), or invalid series or samples (the valid ones are written,
//	     the first invalid series is named in the body)
//	413  a body over the size limits
//	415  a Content-Type or Content-Encoding this receiver does not read
//	429  load shed: too many bytes or requests in flight; Retry-After says when
//	5xx  the storage failed: retry (writes are idempotent, so a retry of a
//	     partly written request is safe)
//
// A 2.0 request gets X-Prometheus-Remote-Write-{Samples,Histograms,Exemplars}-Written
// whatever the status; a 1.0 request none.

// promCommitEvery bounds the points one batch holds before it is committed, so a
// request's memory stays bounded whatever it holds. A usual request (2,000
// samples) is one commit.
const promCommitEvery = 10_000

// The headers of a remote-write 2.0 reply: what was written.
const (
	HeaderSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	HeaderHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	HeaderExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// promWriteOutcome is what a remote-write request did.
type promWriteOutcome struct {
	msg         prom.Message
	written     int64 // samples stored
	histWritten int64 // native histogram samples stored
	exWritten   int64 // exemplars kept
	rejected    int64 // samples, histograms and exemplars not stored for what they are
	received    int64 // samples, histograms and exemplars in the request
	first       error // the first invalid series or sample
	storeErr    error // the storage failed: 5xx
}

func (p *remote) writeReply(w http.ResponseWriter, o *promWriteOutcome, code int, msg string) {
	if o.msg == prom.MessageV2 {
		h := w.Header()
		h.Set(HeaderSamplesWritten, strconv.FormatInt(o.written, 10))
		h.Set(HeaderHistogramsWritten, strconv.FormatInt(o.histWritten, 10))
		h.Set(HeaderExemplarsWritten, strconv.FormatInt(o.exWritten, 10))
	}
	if code == http.StatusNoContent {
		w.WriteHeader(code)
		return
	}
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(p.cfg.RetryAfter.Seconds()))))
	}
	http.Error(w, quote.Message(msg), code)
}

func (p *remote) handleWrite(w http.ResponseWriter, r *http.Request) {
	o := &promWriteOutcome{}
	msg, err := prom.ParseWriteContentType(r.Header.Get("Content-Type"))
	if err != nil {
		p.writeReply(w, o, http.StatusUnsupportedMediaType, err.Error())
		return
	}
	o.msg = msg
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "snappy":
	default:
		p.writeReply(w, o, http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Encoding %q is not accepted: remote write bodies are snappy (block format)", enc))
		return
	}

	// Admission: the body as sent, then, once the snappy header has told
	// the decoded size, that too.
	maxSent := p.shared.MaxBodyBytes
	if r.ContentLength > maxSent {
		p.writeReply(w, o, http.StatusRequestEntityTooLarge, (&dialect.BodyTooLargeError{What: "as sent", Limit: maxSent}).Error())
		return
	}
	reserve := r.ContentLength
	if reserve < 0 {
		reserve = min(maxSent, p.cfg.WriteMaxDecodedBytes)
	}
	tk, ok := p.limiter.acquire(reserve)
	if !ok {
		p.writeReply(w, o, http.StatusTooManyRequests, "too many remote-write requests in flight; retry later")
		return
	}
	defer p.limiter.release(tk)

	// The snappy header's claim is checked (413) before the rest is read,
	// and against what the compressed bytes can hold before it is
	// allocated; the decoded bytes come from the server's decoding budget.
	res := p.host.Reserve()
	defer res.Release()
	body := dialect.GetBuf()
	defer dialect.PutBuf(body)
	errShed := errors.New("too many remote-write bytes in flight; retry later")
	err = p.host.ReadSnappy(r.Body, body, maxSent, p.cfg.WriteMaxDecodedBytes, res,
		func(sent, decoded int64) error {
			if !p.limiter.grow(tk, sent+decoded) {
				return errShed
			}
			return nil
		})
	if err != nil {
		code, m := p.host.BodyError(err)
		switch {
		case errors.Is(err, errShed):
			code, m = http.StatusTooManyRequests, err.Error()
		case errors.Is(err, dialect.ErrDecodeBusy):
			code = http.StatusTooManyRequests
		case errors.Is(err, dialect.ErrBadEncoding):
			m = "the body is not snappy (block format): " + err.Error()
		}
		p.writeReply(w, o, code, m)
		return
	}
	raw := body.Bytes()

	p.ingest(r.Context(), raw, o)
	p.host.Points("prometheus", "stored").Add(float64(o.written))
	p.host.Points("prometheus", "rejected").Add(float64(o.rejected))
	var me *prom.MalformedError
	switch {
	case errors.As(o.storeErr, &me):
		p.writeReply(w, o, http.StatusBadRequest, "nothing written: "+me.Error())
	case o.storeErr != nil:
		code, m := http.StatusInternalServerError, "storage error: "+o.storeErr.Error()
		if errclass.IsUnavailable(o.storeErr) || errors.Is(o.storeErr, context.Canceled) {
			code = http.StatusServiceUnavailable
		}
		p.log.Error("remote write failed", "err", o.storeErr, "written", o.written)
		p.writeReply(w, o, code, m+"; retry")
	case o.rejected > 0:
		p.writeReply(w, o, http.StatusBadRequest, fmt.Sprintf("%d of %d samples, histograms and exemplars rejected, %d samples written; the first: %v",
			o.rejected, o.received, o.written, o.first))
	default:
		p.writeReply(w, o, http.StatusNoContent, "")
	}
}

// promWriteState is one request's scratch.
type promWriteState struct {
	p     *remote
	o     *promWriteOutcome
	ctx   context.Context
	batch *ingest.Batch
	hb    *ingest.HistBatch // native histograms (handler_write_hist.go)
	tags  []model.Tag
}

func (p *remote) ingest(ctx context.Context, raw []byte, o *promWriteOutcome) {
	// A pooled batch keeps its scratch (a request's samples, their errors)
	// from one request to the next instead of growing it from nothing.
	batch := p.batches.Get().(*ingest.Batch)
	batch.NewRequest()
	defer p.batches.Put(batch)
	ws := &promWriteState{p: p, o: o, ctx: ctx, batch: batch}
	dec := p.decoders.Get().(*prom.Decoder)
	defer p.decoders.Put(dec)
	err := dec.Decode(o.msg, raw, ws.series, ws.metadata)
	if err == nil {
		err = ws.commit()
	}
	if err == nil {
		err = ws.commitHist()
	}
	if err == nil && ws.hb != nil {
		var n int
		n, err = ws.hb.CommitExemplars(ctx)
		o.exWritten += int64(n)
	}
	if err != nil && o.storeErr == nil {
		o.storeErr = err
	}
}

func (ws *promWriteState) reject(n int, err error) {
	ws.o.rejected += int64(n)
	if ws.o.first == nil {
		ws.o.first = err
	}
}

func (ws *promWriteState) series(s *prom.Series) error {
	o := ws.o
	o.received += int64(s.NumSamples + s.Histograms + s.Exemplars)
	if s.Err != nil {
		ws.reject(s.NumSamples+s.Histograms+s.Exemplars, s.Err)
		return nil
	}
	// A series the decoder remembers carries the Labels of its last
	// accepted point and the head's hint (SetRef, promKnown): its points
	// need no checks but the timestamp's, no name built again and no
	// lookup in the head; and the metadata it last recorded.
	known, _ := s.Ref().(*promKnown)
	md := s.Metadata
	hasMeta := md.Type != prom.MetricUnknown || md.Help != "" || md.Unit != ""
	if hasMeta && (known == nil || !known.sameMeta(&md)) {
		ws.p.meta.set(s.Metric, md.Type, md.Help, md.Unit)
		if known != nil {
			known.setMeta(&md)
		}
	}
	if known == nil {
		ws.tags = ws.tags[:0]
		for _, l := range s.Labels {
			// An empty value is an absent label in Prometheus.
			if l.Name != prom.MetricName && l.Value != "" {
				ws.tags = append(ws.tags, model.Tag{Key: l.Name, Value: l.Value})
			}
		}
	}
	var bad error
	nbad := 0
	for t, v := range s.Samples() {
		var err error
		switch {
		case t < 0 || t > query.MaxPromTimestamp:
			err = fmt.Errorf("%w: timestamp %d ms is outside the range this store holds, 0 to %d", ingest.ErrInvalid, t, query.MaxPromTimestamp)
			ws.batch.Reject(err)
		case known != nil:
			err = ws.batch.AddKnown(&known.Known, t, chunk.FloatBits(math.Float64bits(v)))
		default:
			err = ws.batch.Add(s.Metric, ws.tags, t, chunk.FloatBits(math.Float64bits(v)))
			if err == nil {
				known = &promKnown{Known: ingest.Known{Labels: ws.batch.LastLabels()}}
				if hasMeta {
					known.setMeta(&md)
				}
				s.SetRef(known)
			}
		}
		if err != nil {
			nbad++
			if bad == nil {
				bad = err
			}
		}
		if ws.batch.Len() >= promCommitEvery {
			if err := ws.commit(); err != nil {
				return err
			}
		}
	}
	if bad != nil {
		ws.reject(nbad, &prom.SeriesError{Index: s.Index, Labels: promRenderSeries(s), Reason: bad.Error()})
	}
	if s.Histograms > 0 || s.Exemplars > 0 { // hook: handler_write_hist.go
		var kl model.Labels
		if known != nil {
			kl = known.Known.Labels
		}
		return ws.histogramsAndExemplars(s, kl)
	}
	return nil
}

// promKnown is what remote write keeps beside a series the decoder
// remembers (prom.Series.SetRef): the batch's Known, and the metadata the
// series last recorded in the metadata table, so that a series sending the
// same metadata again (2.0 sends it with every series) costs the table
// nothing. Safe for concurrent use: requests share the decoders' cache.
type promKnown struct {
	ingest.Known
	meta atomic.Pointer[promMetricMeta]
}

func (k *promKnown) sameMeta(md *prom.Metadata) bool {
	m := k.meta.Load()
	return m != nil && m.typ == md.Type && m.help == md.Help && m.unit == md.Unit
}

func (k *promKnown) setMeta(md *prom.Metadata) {
	// The strings alias the request body: keep copies.
	k.meta.Store(&promMetricMeta{typ: md.Type, help: strings.Clone(md.Help), unit: strings.Clone(md.Unit)})
}

func promRenderSeries(s *prom.Series) string { return prom.FormatLabels(s.Labels) }

func (ws *promWriteState) metadata(m *prom.Metadata) error {
	if m.Metric != "" {
		ws.p.meta.set(m.Metric, m.Type, m.Help, m.Unit)
	}
	return nil
}

// commit appends the batch. An error means the storage failed.
func (ws *promWriteState) commit() error {
	b := ws.batch
	if b.Len() == 0 {
		return nil
	}
	if err := b.Commit(ws.ctx); err != nil {
		b.Reset()
		return err
	}
	for _, err := range b.CommitErrors() {
		// Invalid input (a full UID space, a point past the retention, a
		// new series over a series limit) is the data's fault, not worth a
		// retry (400, as Mimir answers its series limits); anything else is
		// the storage's.
		if !errclass.IsInvalid(err) {
			ws.o.written += int64(b.Len() - b.Failed())
			b.Reset()
			return err
		}
		ws.reject(1, err)
		if errors.Is(err, model.ErrSeriesLimit) && !errors.Is(ws.o.first, model.ErrSeriesLimit) {
			ws.o.first = err // the reply names the limit
		}
	}
	ws.o.written += int64(b.Len() - b.Failed())
	b.Reset()
	return nil
}

// promLimiter sheds load: it admits a request while the bytes and the
// requests in flight stay under their bounds. Safe for concurrent use.
type promLimiter struct {
	maxBytes int64
	maxReqs  int

	mu    sync.Mutex
	bytes int64
	reqs  int
}

type promLimiterTicket struct{ bytes int64 }

func newPromLimiter(maxBytes int64, maxReqs int) *promLimiter {
	return &promLimiter{maxBytes: maxBytes, maxReqs: maxReqs}
}

// acquire admits a request holding n bytes, if it fits; a request is always
// admitted when nothing else is in flight.
func (l *promLimiter) acquire(n int64) (*promLimiterTicket, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reqs > 0 && (l.reqs >= l.maxReqs || l.bytes+n > l.maxBytes) {
		return nil, false
	}
	l.reqs++
	l.bytes += n
	return &promLimiterTicket{bytes: n}, true
}

// grow raises what an admitted request holds to n bytes, if it fits (or if
// the request is alone).
func (l *promLimiter) grow(t *promLimiterTicket, n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n <= t.bytes {
		return true
	}
	others := l.bytes - t.bytes
	if others > 0 && others+n > l.maxBytes {
		return false
	}
	l.bytes += n - t.bytes
	t.bytes = n
	return true
}

func (l *promLimiter) release(t *promLimiterTicket) {
	l.mu.Lock()
	l.reqs--
	l.bytes -= t.bytes
	l.mu.Unlock()
}

// promMetadata keeps the metadata remote write sends (type, help, unit per
// metric), in memory, for /api/v1/metadata. Safe for concurrent use.
type promMetadata struct {
	max int

	mu sync.RWMutex
	m  map[string]promMetricMeta
}

type promMetricMeta struct {
	typ        prom.MetricType
	help, unit string
}

func newPromMetadata(max int) *promMetadata {
	return &promMetadata{max: max, m: map[string]promMetricMeta{}}
}

func (ms *promMetadata) set(metric string, typ prom.MetricType, help, unit string) {
	ms.mu.RLock()
	old, ok := ms.m[metric]
	full := len(ms.m) >= ms.max
	ms.mu.RUnlock()
	if ok && old.typ == typ && old.help == help && old.unit == unit {
		return
	}
	if !ok && full {
		return
	}
	// The strings alias the request body: keep copies.
	mm := promMetricMeta{typ: typ, help: strings.Clone(help), unit: strings.Clone(unit)}
	ms.mu.Lock()
	if _, ok := ms.m[metric]; ok || len(ms.m) < ms.max {
		ms.m[strings.Clone(metric)] = mm
	}
	ms.mu.Unlock()
}
