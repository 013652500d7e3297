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
	hb   *ingest.HistBatch
	errs []error // by point
	at   []int   // the point of each sample added to hb
}

func (s *writes) newHistogramBatch() *histogramBatch {
	return &histogramBatch{hb: s.writer.NewBatch().NewHistBatch()}
}

func (b *histogramBatch) add(i int, hp *opentsdb.HistogramPoint, perr error) error {
	for len(b.errs) <= i {
		b.errs = append(b.errs, nil)
	}
	if perr != nil {
		b.errs[i] = perr
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
	q := r.URL.Query()
	summary, details := opentsdb.HasFlag(q, "summary"), opentsdb.HasFlag(q, "details")
	body, ok := s.readJSONBody(w, r)
	if !ok {
		return
	}
	lim := s.writer.Limits()
	b := s.newHistogramBatch()
	err := opentsdb.ParseHistogramJSON(body, opentsdb.Limits{MaxTags: lim.MaxTags, MaxNameLen: lim.MaxNameLen}, s.cfg.HistogramMaxBuckets,
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
	var t putTally
	for i, e := range b.errs {
		if e == nil {
			t.success++
			continue
		}
		t.failed++
		var pe *opentsdb.PointError
		if !errors.As(e, &pe) {
			pe = &opentsdb.PointError{Index: i, Message: e.Error()}
		}
		t.addError(pe, s.cfg.PutMaxErrors)
	}
	s.host.Points("opentsdb_histogram", "stored").Add(float64(t.success))
	s.host.Points("opentsdb_histogram", "rejected").Add(float64(t.failed))
	msg := "One or more data points had errors"
	if len(t.errs) > 0 && t.errs[0].Message == opentsdb.ErrBinaryHistogram {
		msg = opentsdb.ErrBinaryHistogram
	}
	writePointsReply(w, &t, summary, details, msg, "histogram")
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
	if err := b.add(0, &hp, nil); err != nil {
		return "histogram: illegal argument: " + err.Error()
	}
	if err := b.commit(ctx); err != nil {
		return "histogram: storage error: " + err.Error()
	}
	if b.errs[0] != nil {
		return "histogram: illegal argument: " + b.errs[0].Error()
	}
	return ""
}
