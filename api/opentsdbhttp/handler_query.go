package opentsdbhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hourglass/api/dialect"
	"hourglass/api/opentsdb"
	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/internal/procs"
	"hourglass/meta"
	"hourglass/model"
	"hourglass/query"
)

// subResult is one sub-query's results and figures.
type subResult struct {
	sq      *opentsdb.SubQuery
	results []query.Result
	fill    downsample.FillPolicy
	notes   [][]opentsdb.Annotation // per result, when annotations are on
	stats   subStats
	rollup  int64 // the rollup interval (ms) its series were read from; 0 raw
}

// subStats are one sub-query's figures, in OpenTSDB's names (ms as floats).
type subStats struct {
	index         int
	series        int
	rawDPs        int64
	emitted       int64
	nanDPs        int64
	scanTime      time.Duration
	aggTime       time.Duration
	serialization time.Duration
}

func otsMillis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func (st *subStats) appendJSON(dst []byte) []byte {
	dst = fmt.Appendf(dst, `{"queryIndex":%d,"emittedDPs":%d,"nanDPs":%d,"dpsPostFilter":%d,"series":%d,`+
		`"queryScanTime":%s,"aggregationTime":%s,"serializationTime":%s}`,
		st.index, st.emitted, st.nanDPs, st.rawDPs, st.series,
		fmtMillis(st.scanTime), fmtMillis(st.aggTime), fmtMillis(st.serialization))
	return dst
}

func fmtMillis(d time.Duration) string { return strconv.FormatFloat(otsMillis(d), 'f', 6, 64) }

// handleQuery is /api/query: the JSON body (POST) or the m= / tsuid= query
// string (GET), run through the engine, streamed out in OpenTSDB's shape.
func (s *reads) handleQuery(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	body := dialect.GetBuf() // the parsed request may point into it
	defer dialect.PutBuf(body)
	req, ok := s.readQueryRequest(w, r, body)
	if !ok {
		return
	}
	if r.Method == http.MethodDelete {
		req.Delete = true
	}
	running := s.queries.begin(r, req)
	code := http.StatusOK
	var failure error
	var summary []byte
	defer func() { s.queries.end(running, code, failure, summary) }()
	fail := func(err error) {
		if errors.Is(err, context.DeadlineExceeded) {
			s.engine.CountTimeout()
		}
		code, _, _ = openTSDBStatus(err)
		failure = err
		s.writeError(w, r, err)
	}
	if req.Delete && !s.cfg.AllowDelete {
		// OpenTSDB's answer when tsd.http.query.allow_delete is off.
		code = http.StatusBadRequest
		failure = errors.New("Deleting data is not enabled")
		WriteError(w, http.StatusBadRequest, "Deleting data is not enabled", "")
		return
	}
	if req.Delete && !s.host.MayDelete(r) {
		code, failure = http.StatusForbidden, errors.New("deleting needs the admin scope")
		WriteError(w, http.StatusForbidden, "Deleting data needs the admin scope", "")
		return
	}
	start, end, err := req.Validate(time.Now(), time.UTC)
	if err != nil {
		fail(err)
		return
	}
	loc, _ := req.Location(time.UTC)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.QueryTimeout)
	defer cancel()
	planned, release, err := s.admitQuery(ctx, req, start, end, loc)
	if err != nil {
		fail(err)
		return
	}
	defer release()

	subs := make([]subResult, len(req.Queries))
	if err := s.runSubQueries(ctx, req, planned, subs, start, end, loc); err != nil {
		fail(err)
		return
	}
	var globals []opentsdb.Annotation
	if req.GlobalAnnotations && !req.NoAnnotations {
		list, err := s.meta.Annotations(ctx, [][]byte{nil}, start, end, s.cfg.MaxAnnotations)
		if err != nil {
			fail(err)
			return
		}
		globals = toOpenTSDBNotes(list)
	}
	if err := ctx.Err(); err != nil {
		fail(err)
		return
	}

	summary, err = s.writeQueryReply(ctx, w, req, subs, globals, start, end, began)
	if err != nil {
		failure = err
		if ctx.Err() != nil {
			// Out of time while the reply was written: the status is
			// sent, so the connection is cut (the client sees a truncated
			// reply, not a complete one) and the query log says 408.
			if errors.Is(err, context.DeadlineExceeded) {
				s.engine.CountTimeout()
			}
			code = http.StatusRequestTimeout
			panic(http.ErrAbortHandler)
		}
	}
}

// readQueryRequest parses an /api/query request: the JSON body (POST), or
// the query string (GET, or a DELETE without a body), reading the body
// into body, which the request may point into. It answers the errors
// itself; ok is false then.
func (s *reads) readQueryRequest(w http.ResponseWriter, r *http.Request, body *bytes.Buffer) (*opentsdb.QueryRequest, bool) {
	q := r.URL.Query()
	var req *opentsdb.QueryRequest
	var err error
	switch r.Method {
	case http.MethodGet:
		req, err = opentsdb.ParseQueryURI(q)
	default:
		if err := s.host.ReadBody(r, body); err != nil {
			code, msg := s.host.BodyError(err)
			WriteError(w, code, msg, "")
			return nil, false
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
		return nil, false
	}
	return req, true
}

// runSubQueries runs req's sub-queries into subs: as planned says when it
// is not nil (a light request's, planned by admitQuery), else each planned
// as it runs. A request that deletes,
// or has one sub-query, runs them in turn; otherwise up to procs.Workers() (the CPUs) run
// at once, each bounded by its own limits as when alone, so that a
// dashboard's many small sub-queries (one per panel line) use every core,
// as one large sub-query's scan already does. They are started in request
// order and none is started once one has failed, so every sub-query before
// the first to fail has run to its end: the error is the one running them
// in turn would give.
func (s *reads) runSubQueries(ctx context.Context, req *opentsdb.QueryRequest, planned []query.Request, subs []subResult,
	start, end int64, loc *time.Location) error {
	plannedAt := func(i int) *query.Request {
		if planned == nil {
			return nil
		}
		return &planned[i]
	}
	workers := min(len(subs), procs.Workers())
	if workers <= 1 || req.Delete {
		for i := range req.Queries {
			if err := s.runSubQuery(ctx, req, &req.Queries[i], plannedAt(i), &subs[i], start, end, loc); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(subs))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(subs) {
					return
				}
				if errs[i] = s.runSubQuery(ctx, req, &req.Queries[i], plannedAt(i), &subs[i], start, end, loc); errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runSubQuery runs one sub-query of an /api/query request into sb:
// planned (unless planned is not nil: the plan), fetched, deleted if the request says so, processed, and its
// annotations read.
func (s *reads) runSubQuery(ctx context.Context, req *opentsdb.QueryRequest, sq *opentsdb.SubQuery, planned *query.Request, sb *subResult,
	start, end int64, loc *time.Location) error {
	sb.sq, sb.stats.index = sq, sq.Index
	t0 := time.Now()
	var ereq query.Request
	if planned != nil {
		ereq = *planned
	} else {
		var err error
		if ereq, err = s.engineRequest(ctx, sq, start, end, loc, req.UseCalendar); err != nil {
			return err
		}
	}
	if isHistogramQuery(sq) {
		return s.runPercentiles(ctx, req, sq, sb, ereq, t0) // handler_percentiles.go
	}
	ss, err := s.engine.Fetch(ctx, ereq)
	if err != nil {
		return err
	}
	t1 := time.Now()
	sb.stats.series = len(ss)
	for _, x := range ss {
		sb.stats.rawDPs += int64(x.RawPoints)
		sb.rollup = max(sb.rollup, x.FromRollup)
	}
	if req.Delete {
		// The reply shows what was deleted, as OpenTSDB's does; only
		// the points in [start, end] go (OpenTSDB drops whole hours).
		ls := make([]model.Labels, len(ss))
		for i, x := range ss {
			ls[i] = x.Labels
		}
		if err := s.deleter.Delete(ctx, ls, start, end); err != nil {
			return err
		}
	}
	res, err := s.engine.Process(ctx, ereq, ss)
	if err != nil {
		return err
	}
	sb.stats.scanTime, sb.stats.aggTime = t1.Sub(t0), time.Since(t1)
	sb.results = res
	if ereq.Downsample != nil {
		sb.fill = ereq.Downsample.Fill
	}
	if !req.NoAnnotations {
		if sb.notes, err = s.seriesNotes(ctx, res, start, end); err != nil {
			return err
		}
	}
	return nil
}

// writeQueryReply writes the 200 reply of an /api/query request and returns
// its statsSummary. It stops with ctx's error once ctx has one, looking at
// it each time a megabyte is written, or with the writer's error.
func (s *reads) writeQueryReply(ctx context.Context, w http.ResponseWriter, req *opentsdb.QueryRequest, subs []subResult,
	globals []opentsdb.Annotation, start, end int64, began time.Time) ([]byte, error) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	setRollupHeader(w, subs)
	w.WriteHeader(http.StatusOK)
	buf := dialect.GetBuf()
	defer dialect.PutBuf(buf)
	out := append(buf.AvailableBuffer(), '[')
	first := true
	var tags []opentsdb.Tag // each result's in turn
	for si := range subs {
		sb := &subs[si]
		serStart := time.Now()
		f := opentsdb.ResultFormat{Arrays: req.Arrays, MsResolution: req.MsResolution, NaNIsNull: sb.fill == downsample.FillNull}
		for i := range sb.results {
			res := &sb.results[i]
			qr := queryResult(req, sb, i, globals, tags[:0])
			tags = qr.Tags
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
				if !p.V.IsInt() && math.IsNaN(p.V.Float()) {
					sb.stats.nanDPs++
				}
				out = opentsdb.AppendResultPoint(out, n == 0, p.T, p.V, f)
				n++
				if len(out) > 1<<20 {
					if _, err := w.Write(out); err != nil {
						return nil, err
					}
					out = out[:0]
					if err := ctx.Err(); err != nil {
						return nil, err
					}
				}
			}
			sb.stats.emitted += int64(n)
			if req.ShowStats {
				st := sb.stats
				st.serialization = time.Since(serStart)
				qr.Stats = st.appendJSON(nil)
			}
			out = opentsdb.AppendResultEnd(out, &qr, f)
		}
		sb.stats.serialization = time.Since(serStart)
	}
	if req.ShowSummary {
		if !first {
			out = append(out, ',')
		}
		out = opentsdb.AppendStatsSummary(out, summaryJSON(subs, time.Since(began)))
	}
	out = append(out, ']')
	if _, err := w.Write(out); err != nil {
		return nil, err
	}
	return summaryJSON(subs, time.Since(began)), nil
}

// queryResult is the reply object of result i of sb, without its points,
// its tags appended to tags (the caller's buffer, reused from one result
// to the next: a reply of many series does not allocate each one's).
func queryResult(req *opentsdb.QueryRequest, sb *subResult, i int, globals []opentsdb.Annotation, tags []opentsdb.Tag) opentsdb.QueryResult {
	res := &sb.results[i]
	qr := opentsdb.QueryResult{Metric: res.Metric, AggregateTags: res.AggregateTags, GlobalAnnotations: globals, Tags: tags}
	for _, t := range res.Tags {
		qr.Tags = append(qr.Tags, opentsdb.Tag{Key: t.Key, Value: t.Value})
	}
	if req.ShowQuery {
		qr.Query = sb.sq
	}
	if req.ShowTSUIDs {
		qr.TSUIDs = make([]string, len(res.TSUIDs))
		for j, id := range res.TSUIDs {
			qr.TSUIDs[j] = model.UIDHex(id)
		}
		sort.Strings(qr.TSUIDs)
	}
	if sb.notes != nil && len(sb.notes[i]) > 0 {
		qr.Annotations = sb.notes[i]
	}
	return qr
}

// summaryJSON is the statsSummary object: totals, the average and maximum
// of each sub-query's timings, and each sub-query's figures as queryIdx_NN.
func summaryJSON(subs []subResult, total time.Duration) []byte {
	var emitted, nan, raw int64
	var scanMax, aggMax, serMax, scanSum, aggSum, serSum time.Duration
	for _, sb := range subs {
		emitted += sb.stats.emitted
		nan += sb.stats.nanDPs
		raw += sb.stats.rawDPs
		scanSum += sb.stats.scanTime
		aggSum += sb.stats.aggTime
		serSum += sb.stats.serialization
		scanMax = max(scanMax, sb.stats.scanTime)
		aggMax = max(aggMax, sb.stats.aggTime)
		serMax = max(serMax, sb.stats.serialization)
	}
	n := time.Duration(max(len(subs), 1))
	out := fmt.Appendf(nil, `{"emittedDPs":%d,"nanDPs":%d,"dpsPostFilter":%d,"processingPreWriteTime":%s,`+
		`"avgQueryScanTime":%s,"maxQueryScanTime":%s,"avgAggregationTime":%s,"maxAggregationTime":%s,`+
		`"avgSerializationTime":%s,"maxSerializationTime":%s`,
		emitted, nan, raw, fmtMillis(total), fmtMillis(scanSum/n), fmtMillis(scanMax), fmtMillis(aggSum/n), fmtMillis(aggMax),
		fmtMillis(serSum/n), fmtMillis(serMax))
	for _, sb := range subs {
		out = fmt.Appendf(out, `,"queryIdx_%02d":`, sb.stats.index)
		out = sb.stats.appendJSON(out)
	}
	return append(out, '}')
}

// seriesNotes returns, per result, the annotations of its series that
// start in [start, end], by start time.
func (s *reads) seriesNotes(ctx context.Context, res []query.Result, start, end int64) ([][]opentsdb.Annotation, error) {
	var all [][]byte
	for i := range res {
		all = append(all, res[i].TSUIDs...)
	}
	list, err := s.meta.SeriesAnnotations(ctx, all, start, end, s.cfg.MaxAnnotations)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	byTSUID := map[string][]meta.Annotation{}
	for _, a := range list {
		byTSUID[string(a.TSUID)] = append(byTSUID[string(a.TSUID)], a)
	}
	out := make([][]opentsdb.Annotation, len(res))
	for i := range res {
		var mine []meta.Annotation
		for _, t := range res[i].TSUIDs {
			mine = append(mine, byTSUID[string(t)]...)
		}
		out[i] = toOpenTSDBNotes(mine)
	}
	return out, nil
}

// toOpenTSDBNotes converts stored annotations for a reply, sorted by start
// time as OpenTSDB sorts them.
func toOpenTSDBNotes(list []meta.Annotation) []opentsdb.Annotation {
	sort.SliceStable(list, func(i, j int) bool { return list[i].StartMillis() < list[j].StartMillis() })
	out := make([]opentsdb.Annotation, len(list))
	for i, a := range list {
		out[i] = toOpenTSDBNote(&a)
	}
	return out
}

func toOpenTSDBNote(a *meta.Annotation) opentsdb.Annotation {
	return opentsdb.Annotation{
		TSUID: model.UIDHex(a.TSUID), Description: a.Description, Notes: a.Notes, Custom: a.Custom,
		StartTime: a.StartTime, EndTime: a.EndTime,
	}
}

// engineRequest turns an OpenTSDB sub-query into an engine request.
func (s *reads) engineRequest(ctx context.Context, sq *opentsdb.SubQuery, start, end int64, loc *time.Location, useCalendar bool) (query.Request, error) {
	req := query.Request{Location: loc, Rollup: query.ParseRollupUsage(sq.RollupUsage)}
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
	if isHistogramQuery(sq) {
		if err := checkPercentiles(sq, req); err != nil { // hook: handler_percentiles.go
			return req, err
		}
	}
	req.Start, req.End = start, end
	if sq.Rate {
		ro := sq.Rates()
		req.Rate = true
		req.RateOptions = downsample.RateOptions{Counter: ro.Counter, CounterMax: ro.CounterMax, ResetValue: ro.ResetValue, DropResets: ro.DropResets}
	}
	sel := query.Selection{Metric: sq.Metric, ExplicitTags: sq.ExplicitTags, TSUIDs: sq.TSUIDs}
	if len(sq.TSUIDs) == 0 {
		for _, f := range sq.Filters {
			m, err := f.Compile()
			if err != nil {
				return req, err
			}
			qf := query.Filter{TagK: f.TagK, Matcher: m, GroupBy: f.GroupBy, NotKey: f.Type == opentsdb.FilterNotKey}
			qf.Literals, _ = m.Literals()
			sel.Filters = append(sel.Filters, qf)
		}
	}
	return s.planner.Plan(ctx, req, sel)
}

// parseTSUID decodes a hex TSUID and checks it against the key widths.
func (s *core) parseTSUID(text string) ([]byte, error) { return s.planner.ParseTSUID(text) }

// tsuidEntry resolves a TSUID to its index entry; unknown is an error.
func (s *core) tsuidEntry(text string) (*model.Entry, []byte, error) {
	id, err := s.parseTSUID(text)
	if err != nil {
		return nil, nil, err
	}
	return s.index.Lookup(id), id, nil
}

// pointValueString is a value as /api/query/last writes it: a string.
func pointValueString(v chunk.Value) string {
	return strings.Trim(string(opentsdb.AppendValue(nil, v, false)), `"`)
}
