package api

import (
	"errors"
	"net/http"
	"strconv"
	"sync"

	"hourglass/api/opentsdb"
	"hourglass/ingest"
	"hourglass/series"
)

// putState is the per-request scratch of /api/put, pooled.
type putState struct {
	dec   opentsdb.PutDecoder
	batch *ingest.Batch
	tags  []series.Tag
	bad   []*opentsdb.PointError
}

func (s *Server) putPool() *sync.Pool {
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
func toSeriesTags(dst []series.Tag, tags []opentsdb.Tag) []series.Tag {
	dst = dst[:0]
	for _, t := range tags {
		dst = append(dst, series.Tag{Key: t.Key, Value: t.Value})
	}
	return dst
}

// handlePut is /api/put: one point or an array, each stored or rejected on
// its own; ?summary and ?details report which (OpenTSDB's PutDataPointRpc).
func (s *Server) handlePut(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	summary, details := opentsdb.HasFlag(q, "summary"), opentsdb.HasFlag(q, "details")
	sync := opentsdb.HasFlag(q, "sync")
	body := getBuf()
	defer putBuf(body)
	if err := s.readBody(r, body); err != nil {
		code, msg := s.bodyError(err)
		writeOpenTSDBError(w, code, msg, "")
		return
	}
	st := s.putPool().Get().(*putState)
	defer s.putPool().Put(st)
	st.batch.Reset()
	st.bad = st.bad[:0]
	err := st.dec.Decode(body.Bytes(), func(i int, dp *opentsdb.DataPoint, perr error) error {
		if perr != nil {
			st.batch.Reject(perr)
			var pe *opentsdb.PointError
			if errors.As(perr, &pe) {
				st.bad = append(st.bad, pe)
			}
			return nil
		}
		st.tags = toSeriesTags(st.tags, dp.Tags)
		if aerr := st.batch.Add(dp.Metric, st.tags, dp.Timestamp, dp.Value); aerr != nil {
			st.bad = append(st.bad, &opentsdb.PointError{Index: i, Message: aerr.Error(), Raw: append([]byte(nil), st.dec.Raw()...)})
		}
		return nil
	})
	if err != nil {
		// The body as a whole is bad: nothing of it is stored.
		s.m.points.WithLabelValues("opentsdb_http", "rejected").Add(float64(st.batch.Len()))
		s.writeError(w, r, err)
		return
	}
	if err := st.batch.Commit(r.Context()); err != nil {
		s.m.points.WithLabelValues("opentsdb_http", "error").Add(float64(st.batch.Len()))
		s.writeError(w, r, err)
		return
	}
	if sync {
		if err := s.head.SyncWAL(); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	// Errors found at commit (a full UID space, say) join the decoding ones.
	errs := st.batch.Errors()
	reported := make(map[int]bool, len(st.bad))
	for _, pe := range st.bad {
		reported[pe.Index] = true
	}
	for i, e := range errs {
		if e != nil && !reported[i] {
			st.bad = append(st.bad, &opentsdb.PointError{Index: i, Message: e.Error()})
		}
	}
	failed := st.batch.Failed()
	success := st.batch.Len() - failed
	s.m.points.WithLabelValues("opentsdb_http", "stored").Add(float64(success))
	s.m.points.WithLabelValues("opentsdb_http", "rejected").Add(float64(failed))
	if !summary && !details {
		if failed == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeOpenTSDBError(w, http.StatusBadRequest, "One or more data points had errors",
			`Please see the TSD logs or append "details" to the put request`)
		return
	}
	var list []*opentsdb.PointError
	if details {
		sortPointErrors(st.bad)
		list = append([]*opentsdb.PointError{}, st.bad...)
	}
	code := http.StatusOK
	if failed > 0 {
		code = http.StatusBadRequest
	}
	timeouts := -1
	if v := q.Get("sync_timeout"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			timeouts = 0
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(opentsdb.AppendPutSummary(nil, success, failed, timeouts, list))
}

func sortPointErrors(errs []*opentsdb.PointError) {
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].Index < errs[j-1].Index; j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
}
