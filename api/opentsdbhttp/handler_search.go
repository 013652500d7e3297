package opentsdbhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"hourglass/api/dialect"
	"hourglass/api/opentsdb"
	"hourglass/model"
)

// readJSONBody reads a request body for a JSON endpoint; ok false means the
// error reply has been written.
func (s *core) readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body := dialect.GetBuf()
	defer dialect.PutBuf(body)
	if err := s.host.ReadBody(r, body); err != nil {
		code, msg := s.host.BodyError(err)
		WriteError(w, code, msg, "")
		return nil, false
	}
	return append([]byte(nil), body.Bytes()...), true
}

// handleSuggest is /api/suggest: names of a kind that start with q, sorted.
func (s *reads) handleSuggest(w http.ResponseWriter, r *http.Request) {
	var req *opentsdb.SuggestRequest
	var err error
	if r.Method == http.MethodPost {
		body, ok := s.readJSONBody(w, r)
		if !ok {
			return
		}
		req, err = opentsdb.ParseSuggestJSON(body)
	} else {
		req, err = opentsdb.ParseSuggestURI(r.URL.Query())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	kind := map[string]model.Kind{opentsdb.SuggestMetrics: model.KindMetric, opentsdb.SuggestTagK: model.KindTagK, opentsdb.SuggestTagV: model.KindTagV}[req.Type]
	names, err := s.uids.Suggest(r.Context(), kind, req.Q, min(req.Max, s.cfg.SuggestMaxResults))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if names == nil {
		names = []string{}
	}
	WriteJSON(w, http.StatusOK, names)
}

// handleLookup is /api/search/lookup, answered from the series index (no
// meta table or tracking switch needed): the series of a metric (or of any
// metric) with the tags asked for.
func (s *reads) handleLookup(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	var req *opentsdb.LookupRequest
	var err error
	if r.Method == http.MethodPost {
		body, ok := s.readJSONBody(w, r)
		if !ok {
			return
		}
		req, err = opentsdb.ParseLookupJSON(body)
	} else {
		req, err = opentsdb.ParseLookupURI(r.URL.Query())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	metric := req.Metric
	if metric == "*" {
		metric = ""
	}
	// Names that resolve to nothing are OpenTSDB's 404.
	unresolved := func(k model.Kind, name string) bool {
		if name == "" || name == "*" {
			return false
		}
		_, err := s.uids.GetID(ctx, nil, k, name)
		return err != nil
	}
	bad := unresolved(model.KindMetric, metric)
	for _, t := range req.Tags {
		bad = bad || unresolved(model.KindTagK, t.Key) || unresolved(model.KindTagV, t.Value)
	}
	if bad {
		WriteError(w, http.StatusNotFound, "Unable to resolve one or more UIDs",
			"a metric, tag key or tag value of the lookup was never written")
		return
	}
	match := lookupMatcher(req.Tags)
	limit := req.Limit
	if limit <= 0 || limit > s.cfg.LookupMaxResults {
		limit = s.cfg.LookupMaxResults
	}
	var found []*model.Entry
	total := 0
	s.index.All(metric, func(e *model.Entry) bool {
		if match(e.Labels) {
			total++
			found = append(found, e)
		}
		return ctx.Err() == nil
	})
	// By TSUID, the order of OpenTSDB's meta table.
	sort.Slice(found, func(i, j int) bool { return string(found[i].TSUID) < string(found[j].TSUID) })
	if len(found) > limit {
		found = found[:limit]
	}
	type result struct {
		TSUID  string            `json:"tsuid"`
		Metric string            `json:"metric"`
		Tags   map[string]string `json:"tags"`
	}
	results := make([]result, len(found))
	for i, e := range found {
		tags := map[string]string{}
		e.Labels.Range(func(k, v string) bool { tags[k] = v; return true })
		results[i] = result{TSUID: model.UIDHex(e.TSUID), Metric: e.Labels.Metric(), Tags: tags}
	}
	tags := make([]map[string]string, len(req.Tags))
	for i, t := range req.Tags {
		tags[i] = map[string]string{"key": t.Key, "value": t.Value}
	}
	WriteJSON(w, http.StatusOK, map[string]any{
		"type": "LOOKUP", "metric": req.Metric, "tags": tags, "limit": req.Limit,
		"time": float64(time.Since(began).Microseconds()) / 1000, "results": results,
		"startIndex": 0, "totalResults": total,
	})
}

// lookupMatcher returns OpenTSDB's lookup semantics over tag pairs: pairs
// with a key are grouped by key and ANDed across keys, the values of one key
// ORed, a bare key ("k=*") requiring only the key and overriding values of
// it; value-only pairs ("*=v") are ORed together: some tag has one of them.
func lookupMatcher(pairs []opentsdb.LookupTag) func(model.Labels) bool {
	byKey := map[string]map[string]bool{} // nil set: any value
	var anyKeyValues map[string]bool
	for _, p := range pairs {
		switch {
		case p.Key == "*" && p.Value == "*":
			// matches every series
		case p.Key == "*":
			if anyKeyValues == nil {
				anyKeyValues = map[string]bool{}
			}
			anyKeyValues[p.Value] = true
		case p.Value == "*":
			byKey[p.Key] = nil
		default:
			set, seen := byKey[p.Key]
			if seen && set == nil {
				continue // a bare key wins
			}
			if set == nil {
				set = map[string]bool{}
				byKey[p.Key] = set
			}
			set[p.Value] = true
		}
	}
	return func(l model.Labels) bool {
		for k, vals := range byKey {
			v, ok := l.Get(k)
			if !ok || (vals != nil && !vals[v]) {
				return false
			}
		}
		if anyKeyValues != nil {
			hit := false
			l.Range(func(_, v string) bool {
				hit = anyKeyValues[v]
				return !hit
			})
			return hit
		}
		return true
	}
}

// handleQueryLast is /api/query/last: the newest point of each series asked
// for, by metric and tags (every series of the metric that has those tags)
// or by TSUID, as [{"metric","timestamp","value","tags","tsuid"}] with the
// timestamp in ms and the value a string (metric and tags only with resolve).
func (s *reads) handleQueryLast(w http.ResponseWriter, r *http.Request) {
	var req *opentsdb.LastRequest
	var err error
	if r.Method == http.MethodPost {
		body, ok := s.readJSONBody(w, r)
		if !ok {
			return
		}
		req, err = opentsdb.ParseLastJSON(body)
	} else {
		req, err = opentsdb.ParseLastURI(r.URL.Query())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.QueryTimeout)
	defer cancel()
	release, err := s.engine.Admit(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	var entries []*model.Entry
	for _, sq := range req.Queries {
		if len(sq.TSUIDs) > 0 {
			for _, t := range sq.TSUIDs {
				e, _, err := s.tsuidEntry(t)
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				if e != nil {
					entries = append(entries, e)
				}
			}
			continue
		}
		if sq.Metric == "" {
			s.writeError(w, r, &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "Missing metric or tsuids in a sub query"})
			return
		}
		if _, err := s.uids.GetID(ctx, nil, model.KindMetric, sq.Metric); err != nil {
			s.writeError(w, r, err)
			return
		}
		var matchers []model.Matcher
		for _, t := range sq.Tags {
			m, err := opentsdb.Filter{Type: opentsdb.FilterLiteralOr, TagK: t.Key, Expr: t.Value}.Compile()
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			matchers = append(matchers, m)
		}
		entries = append(entries, s.index.Select(sq.Metric, matchers, false, 0, 1<<62)...)
		if len(entries) > s.cfg.LastMaxSeries {
			break
		}
	}
	if len(entries) > s.cfg.LastMaxSeries {
		WriteError(w, http.StatusRequestEntityTooLarge,
			"Sorry, the last-point query asks for more than the limit of "+itoaInt(s.cfg.LastMaxSeries)+" series",
			"narrow the metric's tags or raise -last-max-series")
		return
	}
	var minT int64
	if req.BackScan > 0 {
		minT = time.Now().UnixMilli() - int64(req.BackScan)*3600*1000
	}
	pts, err := s.engine.Last(ctx, entries, minT)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		if req.ResolveNames {
			b.WriteString(`"metric":`)
			writeJSONString(&b, p.Entry.Labels.Metric())
			b.WriteByte(',')
		}
		b.WriteString(`"timestamp":`)
		b.WriteString(itoa64(p.T))
		b.WriteString(`,"value":`)
		writeJSONString(&b, pointValueString(p.V))
		if req.ResolveNames {
			tags := map[string]string{}
			p.Entry.Labels.Range(func(k, v string) bool { tags[k] = v; return true })
			t, _ := json.Marshal(tags)
			b.WriteString(`,"tags":`)
			b.Write(t)
		}
		b.WriteString(`,"tsuid":`)
		writeJSONString(&b, model.UIDHex(p.Entry.TSUID))
		b.WriteByte('}')
	}
	b.WriteByte(']')
	writeOTSRaw(w, http.StatusOK, b.Bytes())
}

func writeJSONString(b *bytes.Buffer, s string) {
	e, _ := json.Marshal(s)
	b.Write(e)
}

func itoaInt(n int) string  { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
