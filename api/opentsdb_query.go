package api

import (
	"context"
	"net/http"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/downsample"
	"hourglass/query"
	"hourglass/uid"
)

// handleQuery is /api/query: the JSON body (POST) or the m= / tsuid= query
// string (GET), run through the engine, streamed out in OpenTSDB's shape.
func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var req *opentsdb.QueryRequest
	var err error
	switch r.Method {
	case http.MethodGet:
		req, err = opentsdb.ParseQueryURI(q)
	default:
		body := getBuf()
		defer putBuf(body)
		if err := s.readBody(r, body); err != nil {
			code, msg := s.bodyError(err)
			writeOpenTSDBError(w, code, msg, "")
			return
		}
		if body.Len() == 0 && r.Method == http.MethodDelete {
			req, err = opentsdb.ParseQueryURI(q)
		} else {
			req, err = opentsdb.ParseQueryJSON(body.Bytes())
		}
		if err == nil {
			req.Arrays = req.Arrays || opentsdb.HasFlag(q, "arrays")
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if r.Method == http.MethodDelete {
		req.Delete = true
	}
	if req.Delete {
		// OpenTSDB's answer when tsd.http.query.allow_delete is off; this
		// server has no delete yet.
		writeOpenTSDBError(w, http.StatusBadRequest, "Deleting data is not enabled", "")
		return
	}
	start, end, err := req.Validate(time.Now(), time.UTC)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	loc, _ := req.Location(time.UTC)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.QueryTimeout)
	defer cancel()

	type sub struct {
		sq      *opentsdb.SubQuery
		results []query.Result
		fill    downsample.FillPolicy
	}
	subs := make([]sub, len(req.Queries))
	for i := range req.Queries {
		sq := &req.Queries[i]
		ereq, err := s.engineRequest(ctx, sq, start, end, loc, req.UseCalendar)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		res, err := s.engine.Run(ctx, ereq)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		subs[i] = sub{sq: sq, results: res}
		if ereq.Downsample != nil {
			subs[i].fill = ereq.Downsample.Fill
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	buf := getBuf()
	defer putBuf(buf)
	out := append(buf.AvailableBuffer(), '[')
	first := true
	for _, sb := range subs {
		f := opentsdb.ResultFormat{Arrays: req.Arrays, MsResolution: req.MsResolution, NaNIsNull: sb.fill == downsample.FillNull}
		for i := range sb.results {
			res := &sb.results[i]
			qr := opentsdb.QueryResult{Metric: res.Metric, AggregateTags: res.AggregateTags}
			for _, t := range res.Tags {
				qr.Tags = append(qr.Tags, opentsdb.Tag{Key: t.Key, Value: t.Value})
			}
			if req.ShowQuery {
				qr.Query = sb.sq
			}
			if req.ShowTSUIDs {
				qr.TSUIDs = make([]string, len(res.TSUIDs))
				for j, id := range res.TSUIDs {
					qr.TSUIDs[j] = hexUpper(id)
				}
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = opentsdb.AppendResultStart(out, &qr, f)
			n := 0
			for _, p := range res.Points {
				if p.T < start || p.T > end {
					continue
				}
				out = opentsdb.AppendResultPoint(out, n == 0, p.T, p.V, f)
				n++
				if len(out) > 1<<20 {
					if _, err := w.Write(out); err != nil {
						return
					}
					out = out[:0]
				}
			}
			out = opentsdb.AppendResultEnd(out, &qr, f)
		}
	}
	out = append(out, ']')
	_, _ = w.Write(out)
}

func hexUpper(b []byte) string {
	const digits = "0123456789ABCDEF"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// engineRequest turns an OpenTSDB sub-query into an engine request.
func (s *Server) engineRequest(ctx context.Context, sq *opentsdb.SubQuery, start, end int64, loc *time.Location, useCalendar bool) (query.Request, error) {
	req := query.Request{Location: loc}
	agg, err := downsample.Lookup(sq.Aggregator)
	if err != nil {
		return req, err
	}
	req.Aggregator = agg
	if sq.Downsample != "" {
		spec, err := downsample.ParseSpec(sq.Downsample)
		if err != nil {
			return req, err
		}
		if useCalendar {
			spec.Calendar = true
		}
		req.Downsample = &spec
	}
	if len(sq.TSUIDs) > 0 {
		return req, &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "tsuid sub-queries are not supported by this server yet; query by metric and tags"}
	}
	// An unknown metric is an error, as in OpenTSDB.
	if _, err := s.head.UIDs().GetID(ctx, nil, uid.Metric, sq.Metric); err != nil {
		return req, err
	}
	req.Metric = sq.Metric
	req.Start, req.End = start, end
	req.ExplicitTags = sq.ExplicitTags
	seen := map[string]bool{}
	for _, f := range sq.Filters {
		m, err := f.Compile()
		if err != nil {
			return req, err
		}
		req.Matchers = append(req.Matchers, m)
		if f.GroupBy && !seen[f.TagK] {
			seen[f.TagK] = true
			req.GroupBy = append(req.GroupBy, f.TagK)
		}
	}
	if sq.Rate {
		ro := sq.Rates()
		req.Rate = true
		req.RateOptions = downsample.RateOptions{Counter: ro.Counter, CounterMax: ro.CounterMax, ResetValue: ro.ResetValue, DropResets: ro.DropResets}
	}
	return req, nil
}
