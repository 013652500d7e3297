package opentsdbhttp

import (
	"context"
	"errors"
	"net/http"

	"hourglass/api/opentsdb"
	"hourglass/ingest"
)

// OpenTSDB 2.4 histograms (issue 16): /api/histogram's bucket form and the
// telnet histogram line are stored as Prometheus native histograms with
// custom buckets (HistogramPoint.Native: exact counts, the buckets' edges
// as bounds), so PromQL reads them (histogram_quantile, histogram_count,
// ...). The binary form (a codec id and a base64 value) is refused, naming
// the form read.

// histogramBatch appends the points of one request.
type histogramBatch struct {
	hb *ingest.HistBatch
	outcomes
	at []int // the point of each sample added to hb
}

func (s *writes) newHistogramBatch() *histogramBatch {
	return &histogramBatch{hb: s.writer.NewBatch().NewHistBatch()}
}

func (b *histogramBatch) add(i int, hp *opentsdb.HistogramPoint, perr error) error {
	if b.set(i, perr); perr != nil {
		return perr
	}
	tags := toSeriesTags(nil, hp.Tags)
	if err := b.hb.Add(hp.Metric, tags, hp.Timestamp, hp.Native(), nil); err != nil {
		b.errs[i] = &opentsdb.PointError{Index: i, Message: err.Error()}
		return err
	}
	b.at = append(b.at, i)
	return nil
}

// commit appends the samples; an error means the storage failed.
func (b *histogramBatch) commit(ctx context.Context) error {
	if err := b.hb.Commit(ctx); err != nil {
		return err
	}
	n := 0
	for _, err := range b.hb.Errors() {
		if err != nil {
			// Errors holds only the samples Add queued, in order: at maps them.
			b.errs[b.at[n]] = &opentsdb.PointError{Index: b.at[n], Message: err.Error()}
		}
		n++
	}
	return nil
}

// handleHistogram is /api/histogram: each point stored or refused on its
// own, with /api/put's replies (?summary, ?details). The body is bounded by
// -max-body-bytes and -max-decoded-bytes, a point's buckets by
// -histogram-max-buckets.
func (s *writes) handleHistogram(w http.ResponseWriter, r *http.Request) {
	summary, details, body, lim, ok := s.readBatch(w, r)
	if !ok {
		return
	}
	b := s.newHistogramBatch()
	err := opentsdb.ParseHistogramJSON(body, lim, s.cfg.HistogramMaxBuckets,
		func(i int, hp *opentsdb.HistogramPoint, perr error) error {
			_ = b.add(i, hp, perr)
			return nil
		})
	if err == nil {
		err = b.commit(r.Context())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t := s.tallyPoints("opentsdb_histogram", b.errs, nil)
	msg := "One or more data points had errors"
	if len(t.errs) > 0 && t.errs[0].Message == opentsdb.ErrBinaryHistogram {
		msg = opentsdb.ErrBinaryHistogram
	}
	writePointsReply(w, &t, summary, details, msg, "histogram")
}

// readBatch reads what a batch write endpoint (rollup, histogram) starts
// from: its ?summary and ?details flags, its body (bounded as
// readJSONBody bounds it; false: the error is answered), and the name
// limits its points are checked against.
func (s *writes) readBatch(w http.ResponseWriter, r *http.Request) (summary, details bool, body []byte, lim opentsdb.Limits, ok bool) {
	q := r.URL.Query()
	summary, details = opentsdb.HasFlag(q, "summary"), opentsdb.HasFlag(q, "details")
	if body, ok = s.readJSONBody(w, r); !ok {
		return
	}
	wl := s.writer.Limits()
	return summary, details, body, opentsdb.Limits{MaxTags: wl.MaxTags, MaxNameLen: wl.MaxNameLen}, true
}

// tallyPoints counts the outcome of a batch write (rollup, histogram) as
// /api/put does: a nil error a success, any other a failure listed (up to
// -put-max-errors) as the *PointError it is or holds, else as one made of
// its message, with raws[i] (when raws is not nil) as point i's raw input;
// and adds the counts to the endpoint's stored and rejected points.
func (s *writes) tallyPoints(endpoint string, errs []error, raws map[int][]byte) putTally {
	var t putTally
	for i, e := range errs {
		if e == nil {
			t.success++
			continue
		}
		t.failed++
		var pe *opentsdb.PointError
		if !errors.As(e, &pe) {
			pe = &opentsdb.PointError{Index: i, Message: e.Error()}
		}
		if raws != nil {
			pe.Raw = raws[i]
		}
		t.addError(pe, s.cfg.PutMaxErrors)
	}
	s.host.Points(endpoint, "stored").Add(float64(t.success))
	s.host.Points(endpoint, "rejected").Add(float64(t.failed))
	return t
}

// outcomes is each point's outcome in a batch write (rollup, histogram),
// by point number.
type outcomes struct{ errs []error }

// set records point i's outcome.
func (o *outcomes) set(i int, err error) {
	for len(o.errs) <= i {
		o.errs = append(o.errs, nil)
	}
	o.errs[i] = err
}

// pointErr is point i's outcome, after commit.
func (o *outcomes) pointErr(i int) error { return o.errs[i] }

// pointBatch is the batch of a write endpoint (rollup, histogram).
type pointBatch interface {
	commit(ctx context.Context) error // stores what was added; an error: nothing may be acknowledged
	pointErr(i int) error             // point i's outcome, after commit
}

// telnetPoint answers a telnet write of one point (rollup, histogram)
// that was added to b with the error addErr: "" once stored, else the
// reply line "<verb>: illegal argument: …" or "<verb>: storage error: …".
func telnetPoint(ctx context.Context, verb string, b pointBatch, addErr error) string {
	if addErr != nil {
		return verb + ": illegal argument: " + addErr.Error()
	}
	if err := b.commit(ctx); err != nil {
		return verb + ": storage error: " + err.Error()
	}
	if err := b.pointErr(0); err != nil {
		return verb + ": illegal argument: " + err.Error()
	}
	return ""
}

// writePointsReply answers a write of points as /api/put does: 204 when
// all were stored, else 400 with msg; with ?summary or ?details the counts
// (and with ?details the errors) as JSON, 200 or 400. what names the
// endpoint in the hint ("rollup", "histogram").
func writePointsReply(w http.ResponseWriter, t *putTally, summary, details bool, msg, what string) {
	if !summary && !details {
		if t.failed == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		WriteError(w, http.StatusBadRequest, msg, `Please see the TSD logs or append "details" to the `+what+` request`)
		return
	}
	var list []*opentsdb.PointError
	if details {
		list = t.errs
	}
	code := http.StatusOK
	if t.failed > 0 {
		code = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(opentsdb.AppendPutSummary(nil, t.success, t.failed, -1, list))
}

// telnetHistogram stores one telnet histogram line and returns the reply
// line, "" on success.
func (s *writes) telnetHistogram(ctx context.Context, line []byte) string {
	lim := s.writer.Limits()
	var hp opentsdb.HistogramPoint
	if err := opentsdb.ParseHistogramLine(line, opentsdb.Limits{MaxTags: lim.MaxTags, MaxNameLen: lim.MaxNameLen}, s.cfg.HistogramMaxBuckets, &hp); err != nil {
		return err.Error()
	}
	b := s.newHistogramBatch()
	return telnetPoint(ctx, "histogram", b, b.add(0, &hp, nil))
}
