package promhttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"hourglass/api/dialect"
	"hourglass/api/prom"
	"hourglass/internal/errclass"
	"hourglass/internal/quote"
	replywarn "hourglass/internal/warnings"
	"hourglass/query"
)

// The query API, as web/api/v1 writes it: GET, or POST with a form body,
// for query, query_range, labels and series; GET for label values and the
// rest. Parameters, defaults and error messages follow Prometheus'.

// PromAPIVersion is the Prometheus release whose query engine and API this
// build embeds (github.com/prometheus/prometheus v0.315.0 is 3.15.0); it is
// the version /api/v1/status/buildinfo reports, so clients enable what that
// release supports.
const PromAPIVersion = "3.15.0"

// promStatusClientClosed is what Prometheus answers a canceled query with.
const promStatusClientClosed = 499

// Prometheus' defaults for an absent start and end (web/api/v1.MinTime, MaxTime).
var (
	promMinTime = time.Unix(math.MinInt64/1000+62135596801, 0).UTC()
	promMaxTime = time.Unix(math.MaxInt64/1000-62135596801, 999999999).UTC()
)

func promErrorStatus(typ string) int {
	switch typ {
	case prom.ErrorBadData:
		return http.StatusBadRequest
	case prom.ErrorExecution:
		return http.StatusUnprocessableEntity
	case prom.ErrorCanceled:
		return promStatusClientClosed
	case prom.ErrorTimeout, prom.ErrorUnavailable:
		return http.StatusServiceUnavailable
	case prom.ErrorNotFound:
		return http.StatusNotFound
	case prom.ErrorNotAccept:
		return http.StatusNotAcceptable
	}
	return http.StatusInternalServerError
}

// respondError writes a Prometheus error envelope. The message is bounded by
// quote.Message (about 1 KiB), whatever input it quotes: a 1 MB PromQL
// expression with a syntax error, a huge match[] or label value.
func (p *core) respondError(w http.ResponseWriter, typ, msg string) {
	msg = quote.Message(msg)
	code := promErrorStatus(typ)
	if code >= 500 && code != http.StatusServiceUnavailable {
		p.log.Error("prometheus api error", "type", typ, "err", msg)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(prom.AppendError(nil, typ, msg))
}

// queueError answers a query refused by Admit: 503 with a Retry-After
// when it waited for a slot past -query-queue-timeout.
func (p *core) queueError(w http.ResponseWriter, err error) {
	if typ := promExecError(err); typ == prom.ErrorUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(p.cfg.RetryAfter.Seconds()))))
	}
	p.respondError(w, promExecError(err), err.Error())
}

func (p *core) invalidParam(w http.ResponseWriter, name string, err error) {
	p.respondError(w, prom.ErrorBadData, fmt.Sprintf("invalid parameter %q: %v", name, err))
}

// respond writes a success envelope around data (JSON already).
func (p *core) respond(w http.ResponseWriter, data []byte, warnings, infos []string) {
	buf := dialect.GetBuf()
	defer dialect.PutBuf(buf)
	out := prom.AppendSuccessStart(buf.AvailableBuffer())
	out = append(out, data...)
	out = prom.AppendSuccessEnd(out, warnings, infos)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// promExecError maps an error of the engine or the storage to the API's error type.
func promExecError(err error) string {
	var le *query.LimitError
	var tooMany promql.ErrTooManySamples
	var timeout promql.ErrQueryTimeout
	var canceled promql.ErrQueryCanceled
	var stErr promql.ErrStorage
	var qe *query.QueueError
	switch {
	case errors.As(err, &qe):
		return prom.ErrorUnavailable
	case errors.As(err, &timeout), errors.Is(err, context.DeadlineExceeded):
		return prom.ErrorTimeout
	case errors.As(err, &canceled), errors.Is(err, context.Canceled):
		return prom.ErrorCanceled
	case errors.As(err, &le), errors.As(err, &tooMany):
		return prom.ErrorExecution
	case errclass.IsUnavailable(err):
		return prom.ErrorUnavailable
	case errors.As(err, &stErr):
		return prom.ErrorInternal
	}
	return prom.ErrorExecution
}

func promParseTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		s, ns := math.Modf(t)
		ns = math.Round(ns*1000) / 1000
		return time.Unix(int64(s), int64(ns*float64(time.Second))).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	switch s {
	case promMinTime.Format(time.RFC3339Nano):
		return promMinTime, nil
	case promMaxTime.Format(time.RFC3339Nano):
		return promMaxTime, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}

func promParseTimeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	t, err := promParseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid time value for '%s': %w", name, err)
	}
	return t, nil
}

func promParseDuration(s string) (time.Duration, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		ts := d * float64(time.Second)
		if ts > float64(math.MaxInt64) || ts < float64(math.MinInt64) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration. It overflows int64", s)
		}
		return time.Duration(ts), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
}

func promParseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, errors.New("limit must be non-negative")
	}
	return n, nil
}

// promHintLimit is limit+1, so a truncation can be told (web/api/v1.toHintLimit).
func promHintLimit(limit int) int {
	if limit > 0 && limit < math.MaxInt {
		return limit + 1
	}
	return limit
}

func (p *queryAPI) queryOpts(r *http.Request) (promql.QueryOpts, error) {
	var lookback time.Duration
	if s := r.FormValue("lookback_delta"); s != "" {
		d, err := promParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("error parsing lookback delta duration: %w", err)
		}
		lookback = d
	}
	return promql.NewPrometheusQueryOpts(false, lookback), nil
}

// queryContext applies the timeout parameter.
func (p *queryAPI) queryContext(r *http.Request) (context.Context, context.CancelFunc, error) {
	ctx := r.Context()
	if to := r.FormValue("timeout"); to != "" {
		d, err := promParseDuration(to)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		return ctx, cancel, nil
	}
	return ctx, func() {}, nil
}

// handleQuery is the instant query, /api/v1/query.
func (p *queryAPI) handleQuery(w http.ResponseWriter, r *http.Request) {
	limit, err := promParseLimit(r.FormValue("limit"))
	if err != nil {
		p.invalidParam(w, "limit", err)
		return
	}
	ts, err := promParseTimeParam(r, "time", p.now())
	if err != nil {
		p.invalidParam(w, "time", err)
		return
	}
	p.runPromQL(w, r, limit, 0, func(ctx context.Context, opts promql.QueryOpts, qs string) (promql.Query, error) {
		return p.engine.NewInstantQuery(ctx, p.queryable, opts, qs, ts)
	})
}

// runPromQL runs the query= of an instant or range query (step 0) made by
// newQuery, within the request's timeout, and answers.
func (p *queryAPI) runPromQL(w http.ResponseWriter, r *http.Request, limit int, step time.Duration,
	newQuery func(ctx context.Context, opts promql.QueryOpts, qs string) (promql.Query, error)) {
	ctx, cancel, err := p.queryContext(r)
	if err != nil {
		p.invalidParam(w, "timeout", err)
		return
	}
	defer cancel()
	opts, err := p.queryOpts(r)
	if err != nil {
		p.respondError(w, prom.ErrorBadData, err.Error())
		return
	}
	ctx, qs, err := p.withRollups(ctx, r, r.FormValue("query"), step)
	if err != nil {
		p.invalidParam(w, "max_source_resolution", err)
		return
	}
	qry, err := newQuery(ctx, opts, qs)
	if err != nil {
		p.invalidParam(w, "query", err)
		return
	}
	defer qry.Close()
	// Parsed, nothing read yet: a light query takes a light slot, and
	// runs in a context holding the series its check selected.
	ctx, release, err := p.querier.AdmitPromQL(ctx, qry.Statement())
	if err != nil {
		p.queueError(w, err)
		return
	}
	defer release()
	p.runQuery(ctx, w, qry, qs, limit)
}

// handleQueryRange is /api/v1/query_range.
func (p *queryAPI) handleQueryRange(w http.ResponseWriter, r *http.Request) {
	limit, err := promParseLimit(r.FormValue("limit"))
	if err != nil {
		p.invalidParam(w, "limit", err)
		return
	}
	start, err := promParseTime(r.FormValue("start"))
	if err != nil {
		p.invalidParam(w, "start", err)
		return
	}
	end, err := promParseTime(r.FormValue("end"))
	if err != nil {
		p.invalidParam(w, "end", err)
		return
	}
	if end.Before(start) {
		p.invalidParam(w, "end", errors.New("end timestamp must not be before start time"))
		return
	}
	step, err := promParseDuration(r.FormValue("step"))
	if err != nil {
		p.invalidParam(w, "step", err)
		return
	}
	if step <= 0 {
		p.invalidParam(w, "step", errors.New("zero or negative query resolution step widths are not accepted. Try a positive integer"))
		return
	}
	if end.Sub(start)/step > 11000 {
		p.respondError(w, prom.ErrorBadData, "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")
		return
	}
	p.runPromQL(w, r, limit, step, func(ctx context.Context, opts promql.QueryOpts, qs string) (promql.Query, error) {
		return p.engine.NewRangeQuery(ctx, p.queryable, opts, qs, start, end, step)
	})
}

func (p *queryAPI) runQuery(ctx context.Context, w http.ResponseWriter, qry promql.Query, qs string, limit int) {
	// Range functions over non-overlapping steps fold as they decode
	// (query/promql_pushdown.go).
	res := qry.Exec(query.PromPushdown(query.PromNoStepSubqueryInterval(ctx, noStepSubqueryInterval), qry.Statement()))
	if res.Err == nil {
		// The engine is done; a query out of time still answers as one.
		res.Err = ctx.Err()
	}
	if res.Err != nil {
		typ := promExecError(res.Err)
		var tooMany promql.ErrTooManySamples
		switch {
		case typ == prom.ErrorTimeout:
			p.querier.CountTimeout()
		case errors.As(res.Err, &tooMany):
			p.querier.CountSamplesLimit()
		}
		p.respondError(w, typ, res.Err.Error())
		return
	}
	warnings := res.Warnings
	for _, m := range replywarn.From(ctx) { // peers that did not answer
		warnings = warnings.Add(errors.New(m))
	}
	if limit > 0 {
		truncated := false
		switch v := res.Value.(type) {
		case promql.Matrix:
			if len(v) > limit {
				res.Value, truncated = v[:limit], true
			}
		case promql.Vector:
			if len(v) > limit {
				res.Value, truncated = v[:limit], true
			}
		}
		if truncated {
			warnings = warnings.Add(errors.New("results truncated due to limit"))
		}
	}
	warn, info := warnings.AsStrings(qs, 10, 10)
	// The envelope and the answer in one buffer (respond would copy the
	// answer into a second).
	buf := dialect.GetBuf()
	defer dialect.PutBuf(buf)
	out := prom.AppendSuccessStart(buf.AvailableBuffer())
	out = prom.AppendQueryData(out, res.Value)
	out = prom.AppendSuccessEnd(out, warn, info)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// matcherSets parses match[] as Prometheus does: every set needs a matcher
// that does not match the empty string.
func (p *queryAPI) matcherSets(r *http.Request) ([][]*labels.Matcher, error) {
	sets, err := p.parser.ParseMetricSelectors(r.Form["match[]"])
	if err != nil {
		return nil, err
	}
outer:
	for _, ms := range sets {
		for _, m := range ms {
			if m != nil && !m.Matches("") {
				continue outer
			}
		}
		return nil, errors.New("match[] must contain at least one non-empty matcher")
	}
	return sets, nil
}

// requiredMatcherSets is matcherSets for the endpoints that need match[]
// (series, delete_series); it answers the errors itself.
func (p *queryAPI) requiredMatcherSets(w http.ResponseWriter, r *http.Request) ([][]*labels.Matcher, bool) {
	if len(r.Form["match[]"]) == 0 {
		p.respondError(w, prom.ErrorBadData, "no match[] parameter provided")
		return nil, false
	}
	sets, err := p.matcherSets(r)
	if err != nil {
		p.invalidParam(w, "match[]", err)
		return nil, false
	}
	return sets, true
}

// rangeParams parses limit, start and end of the metadata endpoints.
func (p *queryAPI) rangeParams(w http.ResponseWriter, r *http.Request) (limit int, start, end time.Time, ok bool) {
	if err := r.ParseForm(); err != nil {
		p.respondError(w, prom.ErrorBadData, "error parsing form values: "+err.Error())
		return
	}
	var err error
	if limit, err = promParseLimit(r.FormValue("limit")); err != nil {
		p.invalidParam(w, "limit", err)
		return
	}
	if start, err = promParseTimeParam(r, "start", promMinTime); err != nil {
		p.invalidParam(w, "start", err)
		return
	}
	if end, err = promParseTimeParam(r, "end", promMaxTime); err != nil {
		p.invalidParam(w, "end", err)
		return
	}
	return limit, start, end, true
}

func (p *queryAPI) respondStrings(w http.ResponseWriter, vals []string, limit int, warnings annotations.Annotations) {
	if limit > 0 && len(vals) > limit {
		vals = vals[:limit]
		warnings = warnings.Add(errors.New("results truncated due to limit"))
	}
	if vals == nil {
		vals = []string{}
	}
	warn, info := warnings.AsStrings("", 10, 10)
	p.respond(w, prom.AppendStrings(nil, vals), warn, info)
}

// handleLabels is /api/v1/labels.
func (p *queryAPI) handleLabels(w http.ResponseWriter, r *http.Request) {
	p.respondLabelStrings(w, r, func(ctx context.Context, q storage.Querier, hints *storage.LabelHints, ms []*labels.Matcher) ([]string, error) {
		names, _, err := q.LabelNames(ctx, hints, ms...)
		return names, err
	})
}

// handleLabelValues is /api/v1/label/<name>/values.
func (p *queryAPI) handleLabelValues(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	if len(name) > 3 && name[:3] == "U__" {
		name = model.UnescapeName(name, model.ValueEncodingEscaping)
	}
	if !model.UTF8Validation.IsValidLabelName(name) {
		p.respondError(w, prom.ErrorBadData, fmt.Sprintf("invalid label name: %q", name))
		return
	}
	p.respondLabelStrings(w, r, func(ctx context.Context, q storage.Querier, hints *storage.LabelHints, ms []*labels.Matcher) ([]string, error) {
		vals, _, err := q.LabelValues(ctx, name, hints, ms...)
		return vals, err
	})
}

// respondLabelStrings answers the label endpoints: the union, sorted, of
// what list gives for each match[] selector (or for none) in the range.
func (p *queryAPI) respondLabelStrings(w http.ResponseWriter, r *http.Request,
	list func(context.Context, storage.Querier, *storage.LabelHints, []*labels.Matcher) ([]string, error)) {
	limit, start, end, ok := p.rangeParams(w, r)
	if !ok {
		return
	}
	sets, err := p.matcherSets(r)
	if err != nil {
		p.respondError(w, prom.ErrorBadData, err.Error())
		return
	}
	q, err := p.queryable.Querier(timestamp.FromTime(start), timestamp.FromTime(end))
	if err != nil {
		p.respondError(w, promExecError(err), err.Error())
		return
	}
	defer q.Close()
	hints := &storage.LabelHints{Limit: promHintLimit(limit)}
	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	set := map[string]struct{}{}
	for _, ms := range sets {
		got, err := list(r.Context(), q, hints, ms)
		if err != nil {
			p.respondError(w, promExecError(err), err.Error())
			return
		}
		for _, v := range got {
			set[v] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.Sort(out)
	p.respondStrings(w, out, limit, nil)
}

// handleSeries is /api/v1/series: the label sets the match[] selectors
// select in the range, without their samples.
func (p *queryAPI) handleSeries(w http.ResponseWriter, r *http.Request) {
	limit, start, end, ok := p.rangeParams(w, r)
	if !ok {
		return
	}
	sets, ok := p.requiredMatcherSets(w, r)
	if !ok {
		return
	}
	q, err := p.queryable.Querier(timestamp.FromTime(start), timestamp.FromTime(end))
	if err != nil {
		p.respondError(w, promExecError(err), err.Error())
		return
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: timestamp.FromTime(start), End: timestamp.FromTime(end), Func: "series", Limit: promHintLimit(limit)}
	seen := map[string]bool{}
	var all []labels.Labels
	for _, ms := range sets {
		ss := q.Select(r.Context(), true, hints, ms...)
		for ss.Next() {
			l := ss.At().Labels()
			if k := l.String(); !seen[k] {
				seen[k] = true
				all = append(all, l)
			}
		}
		if err := ss.Err(); err != nil {
			p.respondError(w, promExecError(err), err.Error())
			return
		}
	}
	slices.SortFunc(all, labels.Compare)
	var warnings annotations.Annotations
	if limit > 0 && len(all) > limit {
		all = all[:limit]
		warnings = warnings.Add(errors.New("results truncated due to limit"))
	}
	buf := dialect.GetBuf()
	defer dialect.PutBuf(buf)
	out := append(buf.AvailableBuffer(), '[')
	for i, l := range all {
		if i > 0 {
			out = append(out, ',')
		}
		out = prom.AppendLabelSet(out, l)
	}
	out = append(out, ']')
	warn, info := warnings.AsStrings("", 10, 10)
	p.respond(w, out, warn, info)
}

// handleMetadata is /api/v1/metadata: the metadata remote write has sent,
// {"<metric>":[{"type":..,"help":..,"unit":..}]}, with limit, limit_per_metric
// and metric as Prometheus takes them.
func (p *queryAPI) handleMetadata(w http.ResponseWriter, r *http.Request) {
	limit := -1
	if s := r.FormValue("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			p.respondError(w, prom.ErrorBadData, "limit must be a number")
			return
		}
		limit = n
	}
	if s := r.FormValue("limit_per_metric"); s != "" {
		if _, err := strconv.Atoi(s); err != nil {
			p.respondError(w, prom.ErrorBadData, "limit_per_metric must be a number")
			return
		}
		// One entry per metric is kept, so any limit per metric holds.
	}
	metric := r.FormValue("metric")
	p.meta.mu.RLock()
	names := make([]string, 0, len(p.meta.m))
	for n := range p.meta.m {
		if metric == "" || n == metric {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if limit >= 0 && len(names) > limit {
		names = names[:limit]
	}
	out := []byte{'{'}
	for i, n := range names {
		m := p.meta.m[n]
		if i > 0 {
			out = append(out, ',')
		}
		out = prom.AppendString(out, n)
		out = append(out, `:[{"type":`...)
		out = prom.AppendString(out, m.typ.String())
		out = append(out, `,"help":`...)
		out = prom.AppendString(out, m.help)
		out = append(out, `,"unit":`...)
		out = prom.AppendString(out, m.unit)
		out = append(out, `}]`...)
	}
	p.meta.mu.RUnlock()
	out = append(out, '}')
	p.respond(w, out, nil, nil)
}

// handleRules is /api/v1/rules: hourglass evaluates no rules.
func (p *queryAPI) handleRules(w http.ResponseWriter, r *http.Request) {
	p.respond(w, []byte(`{"groups":[]}`), nil, nil)
}

// handleExemplars is /api/v1/query_exemplars: the parameters are checked as
// Prometheus checks them, then answerExemplars answers.
func (p *queryAPI) handleExemplars(w http.ResponseWriter, r *http.Request) {
	start, err := promParseTimeParam(r, "start", promMinTime)
	if err != nil {
		p.invalidParam(w, "start", err)
		return
	}
	end, err := promParseTimeParam(r, "end", promMaxTime)
	if err != nil {
		p.invalidParam(w, "end", err)
		return
	}
	if end.Before(start) {
		p.respondError(w, prom.ErrorBadData, "end timestamp must not be before start timestamp")
		return
	}
	expr, err := p.parser.ParseExpr(r.FormValue("query"))
	if err != nil {
		p.respondError(w, prom.ErrorBadData, err.Error())
		return
	}
	p.answerExemplars(w, r, expr, start.UnixMilli(), end.UnixMilli()) // handler_exemplars.go
}
