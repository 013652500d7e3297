package opentsdbhttp

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"net/http"
	"sort"
	"strings"

	"hourglass/api/opentsdb"
	"hourglass/meta"
	"hourglass/model"
)

var uidKinds = map[string]model.Kind{opentsdb.UIDTypeMetric: model.KindMetric, opentsdb.UIDTypeTagK: model.KindTagK, opentsdb.UIDTypeTagV: model.KindTagV}
var uidTypes = map[model.Kind]string{model.KindMetric: opentsdb.UIDTypeMetric, model.KindTagK: opentsdb.UIDTypeTagK, model.KindTagV: opentsdb.UIDTypeTagV}

// handleUIDAssign is /api/uid/assign: assign UIDs to new names, each name
// on its own: {"metric":{"name":"00002A"},"metric_errors":{"x":"..."}},
// 200 when every name got one, 400 otherwise.
func (s *uidAPI) handleUIDAssign(w http.ResponseWriter, r *http.Request) {
	var req *opentsdb.UIDAssignRequest
	var err error
	if r.Method == http.MethodPost {
		body, ok := s.readJSONBody(w, r)
		if !ok {
			return
		}
		req, err = opentsdb.ParseUIDAssignJSON(body)
	} else {
		req, err = opentsdb.ParseUIDAssignURI(r.URL.Query())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	maxLen := s.writer.Limits().MaxNameLen
	resp := map[string]map[string]string{}
	failed := 0
	for _, k := range []struct {
		name  string
		kind  model.Kind
		names []string
	}{{"metric", model.KindMetric, req.Metric}, {"tagk", model.KindTagK, req.TagK}, {"tagv", model.KindTagV, req.TagV}} {
		if len(k.names) == 0 {
			continue
		}
		ok, bad := map[string]string{}, map[string]string{}
		for _, name := range k.names {
			if err := opentsdb.ValidateName(k.name, name, maxLen); err != nil {
				bad[name] = err.Error()
				failed++
				continue
			}
			id, err := s.uids.Assign(r.Context(), k.kind, name)
			switch {
			case errors.Is(err, model.ErrExists):
				bad[name] = "Name already exists with UID: " + model.UIDHex(id)
				failed++
			case err != nil:
				if code, _, _ := openTSDBStatus(err); code >= 500 {
					s.writeError(w, r, err)
					return
				}
				bad[name] = err.Error()
				failed++
			default:
				ok[name] = model.UIDHex(id)
			}
		}
		resp[k.name] = ok
		if len(bad) > 0 {
			resp[k.name+"_errors"] = bad
		}
	}
	code := http.StatusOK
	if failed > 0 {
		code = http.StatusBadRequest
	}
	WriteJSON(w, code, resp)
}

// parseUID decodes a hex UID of a kind; a bad one is a 400.
func (s *uidAPI) parseUID(kind model.Kind, text string) ([]byte, error) {
	id, err := hex.DecodeString(text)
	if err != nil || len(id) == 0 {
		return nil, &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "Invalid UID: " + text,
			Details: "a UID is hex, e.g. 00002A"}
	}
	if w := s.uids.Width(kind); len(id) != w {
		return nil, &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "Invalid UID: " + text,
			Details: "a " + kind.String() + " UID is " + itoaInt(w) + " bytes, " + itoaInt(2*w) + " hex digits"}
	}
	return id, nil
}

var errUIDNotFound = &opentsdb.RequestError{Status: http.StatusNotFound, Message: "Could not find the requested UID"}

// uidMeta returns the UIDMeta of a UID as OpenTSDB serves it: the stored
// fields, or defaults (created 0) when none were stored.
func (s *uidAPI) uidMeta(ctx context.Context, kind model.Kind, id []byte) (*opentsdb.UIDMeta, meta.UIDMeta, error) {
	name, err := s.uids.GetName(ctx, kind, id)
	if err != nil {
		if errors.Is(err, model.ErrNoSuchUID) {
			return nil, meta.UIDMeta{}, errUIDNotFound
		}
		return nil, meta.UIDMeta{}, err
	}
	m, _, err := s.meta.GetUIDMeta(ctx, byte(kind), id)
	if err != nil {
		return nil, m, err
	}
	return &opentsdb.UIDMeta{UID: model.UIDHex(id), Type: uidTypes[kind], Name: name, Description: m.Description,
		Notes: m.Notes, Created: m.Created, Custom: m.Custom, DisplayName: m.DisplayName}, m, nil
}

// handleUIDMeta is /api/uid/uidmeta: GET reads, POST merges, PUT replaces,
// DELETE clears a UID's metadata (never the UID).
func (s *uidAPI) handleUIDMeta(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req *opentsdb.UIDMetaRequest
	var err error
	body, ok := s.readJSONBody(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodGet && len(strings.TrimSpace(string(body))) > 0 {
		req, err = opentsdb.ParseUIDMetaJSON(body)
	} else {
		req, err = opentsdb.ParseUIDMetaURI(r.URL.Query())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	kind := uidKinds[req.Type]
	id, err := s.parseUID(kind, req.UID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cur, stored, err := s.uidMeta(ctx, kind, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch r.Method {
	case http.MethodGet:
		WriteJSON(w, http.StatusOK, cur)
	case http.MethodDelete:
		if err := s.meta.DeleteUIDMeta(ctx, byte(kind), id); err != nil {
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		// OpenTSDB's rule: a request that sets nothing is 304.
		changed := isSet(req.DisplayName) || isSet(req.Description) || isSet(req.Notes) ||
			req.Custom != nil || (req.Created != nil && *req.Created != 0)
		if !changed {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		next := stored
		if r.Method == http.MethodPut {
			next = meta.UIDMeta{Created: stored.Created}
		}
		setIfSent(&next.DisplayName, req.DisplayName)
		setIfSent(&next.Description, req.Description)
		setIfSent(&next.Notes, req.Notes)
		if req.Custom != nil {
			next.Custom = req.Custom
		}
		if req.Created != nil && *req.Created > 0 && (next.Created == 0 || *req.Created < next.Created) {
			next.Created = *req.Created
		}
		if err := s.meta.PutUIDMeta(ctx, byte(kind), id, next); err != nil {
			s.writeError(w, r, err)
			return
		}
		cur, _, err = s.uidMeta(ctx, kind, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		WriteJSON(w, http.StatusOK, cur)
	}
}

func isSet(p *string) bool { return p != nil && *p != "" }

func setIfSent(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// tsMeta builds a series' TSMeta: the stored fields (or defaults), the
// UIDMeta of its metric and tags, and its last point's time.
func (s *uidAPI) tsMeta(ctx context.Context, tsuid []byte, m meta.TSMeta) (*opentsdb.TSMeta, error) {
	l := s.layout()
	out := &opentsdb.TSMeta{TSUID: model.UIDHex(tsuid), Description: m.Description, Notes: m.Notes, Created: m.Created,
		Units: m.Units, Retention: m.Retention, Max: opentsdb.JSONFloat(m.Max), Min: opentsdb.JSONFloat(m.Min),
		Custom: m.Custom, DisplayName: m.DisplayName, DataType: m.DataType, Tags: []*opentsdb.UIDMeta{}}
	var err error
	if out.Metric, _, err = s.uidMeta(ctx, model.KindMetric, tsuid[:l.MetricWidth]); err != nil {
		return nil, tsmetaUIDError(err)
	}
	for i := l.MetricWidth; i+l.TagKWidth+l.TagVWidth <= len(tsuid); i += l.TagKWidth + l.TagVWidth {
		k, _, err := s.uidMeta(ctx, model.KindTagK, tsuid[i:i+l.TagKWidth])
		if err != nil {
			return nil, tsmetaUIDError(err)
		}
		v, _, err := s.uidMeta(ctx, model.KindTagV, tsuid[i+l.TagKWidth:i+l.TagKWidth+l.TagVWidth])
		if err != nil {
			return nil, tsmetaUIDError(err)
		}
		out.Tags = append(out.Tags, k, v)
	}
	if e := s.index.Lookup(tsuid); e != nil {
		pts, err := s.engine.Last(ctx, []*model.Entry{e}, 0)
		if err != nil {
			return nil, err
		}
		if len(pts) == 1 {
			out.LastReceived = pts[0].T / 1000
		}
	}
	return out, nil
}

func tsmetaUIDError(err error) error {
	if err == errUIDNotFound {
		return &opentsdb.RequestError{Status: http.StatusNotFound, Message: "Unable to find one of the UIDs"}
	}
	return err
}

// seriesByName returns the TSUID of metric{tags} (exact), from the UID
// table; unknown names are 404 "Unable to find one or more UIDs".
func (s *uidAPI) seriesByName(ctx context.Context, metric string, tags []opentsdb.Tag) ([]byte, error) {
	notFound := &opentsdb.RequestError{Status: http.StatusNotFound, Message: "Unable to find one or more UIDs"}
	id, err := s.uids.GetID(ctx, nil, model.KindMetric, metric)
	if err != nil {
		if errors.Is(err, model.ErrNoSuchName) {
			notFound.Details = err.Error()
			return nil, notFound
		}
		return nil, err
	}
	type pair struct{ k, v []byte }
	var pairs []pair
	for _, t := range tags {
		k, err := s.uids.GetID(ctx, nil, model.KindTagK, t.Key)
		if err == nil {
			var v []byte
			if v, err = s.uids.GetID(ctx, nil, model.KindTagV, t.Value); err == nil {
				pairs = append(pairs, pair{k, v})
				continue
			}
		}
		if errors.Is(err, model.ErrNoSuchName) {
			notFound.Details = err.Error()
			return nil, notFound
		}
		return nil, err
	}
	sort.Slice(pairs, func(i, j int) bool { return string(pairs[i].k) < string(pairs[j].k) })
	for _, p := range pairs {
		id = append(append(id, p.k...), p.v...)
	}
	return id, nil
}

// handleTSMeta is /api/uid/tsmeta. GET ?tsuid= reads one series' meta (404
// if the series and its meta are unknown); GET ?m=metric{tags} lists those
// of every series of the metric with those tags. POST merges and PUT
// replaces (the series named by tsuid, or by ?m= exactly, with
// ?create=true needed when it has no meta and no data); DELETE clears it.
func (s *uidAPI) handleTSMeta(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.getTSMeta(w, r)
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	body, ok := s.readJSONBody(w, r)
	if !ok {
		return
	}
	var req *opentsdb.TSMetaRequest
	var err error
	if len(strings.TrimSpace(string(body))) > 0 {
		req, err = opentsdb.ParseTSMetaJSON(body)
	} else {
		req, err = opentsdb.ParseTSMetaURI(q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var id []byte
	if req.TSUID != "" {
		if id, err = s.parseTSUID(req.TSUID); err != nil {
			s.writeError(w, r, err)
			return
		}
	} else if r.Method == http.MethodDelete {
		WriteError(w, http.StatusBadRequest, "Unable to delete TSMeta information", "Missing TSUID")
		return
	} else {
		m, ok := q["m"]
		if !ok || len(m) == 0 || m[len(m)-1] == "" {
			s.writeError(w, r, opentsdb.MissingParameter("m"))
			return
		}
		metric, tags, err := opentsdb.ParseMetricTags(m[len(m)-1])
		if err == nil {
			id, err = s.seriesByName(ctx, metric, tags)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if r.Method == http.MethodDelete {
		if err := s.meta.DeleteTSMeta(ctx, id); err != nil {
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	stored, exists, err := s.meta.GetTSMeta(ctx, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !exists && s.index.Lookup(id) == nil {
		if req.TSUID != "" {
			WriteError(w, http.StatusBadRequest, "Requested TSMeta did not exist", "")
			return
		}
		if q.Get("create") != "true" {
			WriteError(w, http.StatusBadRequest, `Could not find TSMeta, specify "create=true" to create a new one.`, "")
			return
		}
	}
	changed := isSet(req.DisplayName) || isSet(req.Description) || isSet(req.Notes) ||
		isSet(req.Units) || isSet(req.DataType) || req.Custom != nil ||
		(req.Created != nil && *req.Created != 0) || (req.Retention != nil && *req.Retention != 0) ||
		(req.Max != nil && !math.IsNaN(*req.Max)) || (req.Min != nil && !math.IsNaN(*req.Min))
	if !changed {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	next := mergeTSMeta(stored, req, r.Method == http.MethodPut)
	if err := s.meta.PutTSMeta(ctx, id, next); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.tsMeta(ctx, id, next)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, out)
}

// getTSMeta is a GET of /api/uid/tsmeta: one series by tsuid=, or every
// series of m= (at most LastMaxSeries).
func (s *uidAPI) getTSMeta(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	if opentsdb.HasFlag(q, "tsuid") {
		id, err := s.parseTSUID(q.Get("tsuid"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		m, stored, err := s.meta.GetTSMeta(ctx, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !stored && s.index.Lookup(id) == nil {
			WriteError(w, http.StatusNotFound, "Could not find Timeseries meta data", "")
			return
		}
		out, err := s.tsMeta(ctx, id, m)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		WriteJSON(w, http.StatusOK, out)
		return
	}
	m, ok := q["m"]
	if !ok || len(m) == 0 || m[len(m)-1] == "" {
		s.writeError(w, r, opentsdb.MissingParameter("m"))
		return
	}
	metric, tags, err := opentsdb.ParseMetricTags(m[len(m)-1])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.seriesByName(ctx, metric, tags); err != nil {
		s.writeError(w, r, err)
		return
	}
	var otsMillis []model.Matcher
	for _, t := range tags {
		mt, err := opentsdb.Filter{Type: opentsdb.FilterLiteralOr, TagK: t.Key, Expr: t.Value}.Compile()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		otsMillis = append(otsMillis, mt)
	}
	entries := s.index.Select(metric, otsMillis, false, 0, 1<<62)
	if len(entries) > s.cfg.LastMaxSeries {
		WriteError(w, http.StatusRequestEntityTooLarge, "Sorry, the query matches more than the limit of "+
			itoaInt(s.cfg.LastMaxSeries)+" series", "narrow the metric's tags")
		return
	}
	sort.Slice(entries, func(i, j int) bool { return string(entries[i].TSUID) < string(entries[j].TSUID) })
	out := make([]*opentsdb.TSMeta, 0, len(entries))
	for _, e := range entries {
		m, _, err := s.meta.GetTSMeta(ctx, e.TSUID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		tm, err := s.tsMeta(ctx, e.TSUID, m)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out = append(out, tm)
	}
	WriteJSON(w, http.StatusOK, out)
}

// mergeTSMeta is what a POST (the fields sent, over what is stored) or a
// PUT (the fields sent, over defaults) writes.
func mergeTSMeta(stored meta.TSMeta, req *opentsdb.TSMetaRequest, put bool) meta.TSMeta {
	next := stored
	if put {
		next = meta.NewTSMeta()
		next.Created = stored.Created
	}
	setIfSent(&next.DisplayName, req.DisplayName)
	setIfSent(&next.Description, req.Description)
	setIfSent(&next.Notes, req.Notes)
	setIfSent(&next.Units, req.Units)
	setIfSent(&next.DataType, req.DataType)
	if req.Custom != nil {
		next.Custom = req.Custom
	}
	if req.Retention != nil {
		next.Retention = *req.Retention
	}
	if req.Max != nil {
		next.Max = meta.Float(*req.Max)
	}
	if req.Min != nil {
		next.Min = meta.Float(*req.Min)
	}
	if req.Created != nil && *req.Created > 0 && (next.Created == 0 || *req.Created < next.Created) {
		next.Created = *req.Created
	}
	return next
}

// handleUIDRename is /api/uid/rename: {"result":"true"}, or 400 with
// {"result":"false","error":"..."}.
//
// A name that stored series carry cannot be renamed: the series index and
// the WAL hold series by name, so the rename would split them. Such a
// request fails with an error that says so; names no series uses (assigned
// through /api/uid/assign, say) rename as in OpenTSDB.
func (s *uidAPI) handleUIDRename(w http.ResponseWriter, r *http.Request) {
	var req *opentsdb.RenameRequest
	var err error
	if r.Method == http.MethodPost {
		body, ok := s.readJSONBody(w, r)
		if !ok {
			return
		}
		req, err = opentsdb.ParseRenameJSON(body)
	} else {
		req, err = opentsdb.ParseRenameURI(r.URL.Query())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	fail := func(msg string) {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"result": "false", "error": msg})
	}
	kind := uidKinds[req.Type]
	what := map[model.Kind]string{model.KindMetric: "metric", model.KindTagK: "tagk", model.KindTagV: "tagv"}[kind]
	if err := opentsdb.ValidateName(what, req.NewName, s.writer.Limits().MaxNameLen); err != nil {
		fail(err.Error())
		return
	}
	if s.nameInUse(kind, req.Name) {
		fail("the " + what + " '" + req.Name + "' is carried by stored series; hourglass keeps series by name " +
			"in its index and WAL and cannot rename a name in use (see docs/opentsdb-compatibility.md)")
		return
	}
	if err := s.uids.Rename(r.Context(), kind, req.Name, req.NewName); err != nil {
		var nf *model.NoSuchNameError
		switch {
		case errors.As(err, &nf):
			fail(nf.Error())
		case errors.Is(err, model.ErrExists):
			fail("Name already exists" + strings.TrimPrefix(err.Error(), model.ErrExists.Error()))
		default:
			s.writeError(w, r, err)
		}
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"result": "true"})
}

// nameInUse reports whether any series in the index carries the name.
func (s *uidAPI) nameInUse(kind model.Kind, name string) bool {
	ix := s.index
	switch kind {
	case model.KindMetric:
		for _, m := range ix.Metrics(name) {
			if m == name {
				return true
			}
		}
		return false
	}
	used := false
	ix.All("", func(e *model.Entry) bool {
		e.Labels.Range(func(k, v string) bool {
			used = (kind == model.KindTagK && k == name) || (kind == model.KindTagV && v == name)
			return !used
		})
		return !used
	})
	return used
}
