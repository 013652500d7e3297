package opentsdbhttp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/meta"
)

// annotationTSUID decodes an annotation's TSUID ("" is a global one).
func (s *notes) annotationTSUID(text string) ([]byte, error) {
	if text == "" {
		return nil, nil
	}
	return s.parseTSUID(text)
}

// handleAnnotation is /api/annotation (and /api/annotations): GET reads one
// annotation (/api/annotations: the global ones in a range), POST merges,
// PUT replaces, DELETE deletes. The request is the JSON body, or the query
// string (start_time, end_time, tsuid, description, notes) without one.
func (s *notes) handleAnnotation(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := time.Now()
	var req *opentsdb.AnnotationRequest
	var err error
	body, ok := s.readJSONBody(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodGet && len(strings.TrimSpace(string(body))) > 0 {
		req, err = opentsdb.ParseAnnotationJSON(body)
	} else {
		req, err = opentsdb.ParseAnnotationURI(r.URL.Query(), now, time.UTC)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tsuid, err := s.annotationTSUID(req.TSUID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	global := strings.HasSuffix(strings.TrimSuffix(strings.ToLower(r.URL.Path), "/"), "/annotations")
	switch r.Method {
	case http.MethodGet:
		if global {
			end := now.UnixMilli()
			if req.EndTime != 0 {
				end = meta.TimestampMillis(req.EndTime)
			}
			list, err := s.meta.Annotations(ctx, [][]byte{nil}, meta.TimestampMillis(req.StartTime), end, s.cfg.MaxAnnotations)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			WriteJSON(w, http.StatusOK, annotationsJSON(toOpenTSDBNotes(list)))
			return
		}
		a, err := s.meta.GetAnnotation(ctx, tsuid, meta.TimestampMillis(req.StartTime))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if a == nil {
			WriteError(w, http.StatusNotFound, "Unable to locate annotation in storage", "")
			return
		}
		n := toOpenTSDBNote(a)
		writeOTSRaw(w, http.StatusOK, n.AppendJSON(nil))
	case http.MethodDelete:
		if req.StartTime < 1 {
			WriteError(w, http.StatusBadRequest, "Unable to delete Annotation information", "The start timestamp has not been set")
			return
		}
		if _, err := s.meta.DeleteAnnotation(ctx, tsuid, meta.TimestampMillis(req.StartTime)); err != nil {
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		a, changed, err := s.syncAnnotation(ctx, req, tsuid, r.Method == http.MethodPut)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !changed {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		n := toOpenTSDBNote(a)
		writeOTSRaw(w, http.StatusOK, n.AppendJSON(nil))
	}
}

// syncAnnotation stores an annotation as OpenTSDB's syncToStorage: the start
// time is required; a request that sets nothing is no change (304); POST
// merges what was sent into what is stored, PUT replaces it.
func (s *notes) syncAnnotation(ctx context.Context, req *opentsdb.AnnotationRequest, tsuid []byte, overwrite bool) (*meta.Annotation, bool, error) {
	if req.StartTime < 1 {
		return nil, false, &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "The start timestamp has not been set"}
	}
	changed := isSet(req.Description) || isSet(req.Notes) || req.Custom != nil || req.EndTime != 0
	if !changed {
		return nil, false, nil
	}
	startMs := meta.TimestampMillis(req.StartTime)
	a := &meta.Annotation{TSUID: tsuid, StartTime: req.StartTime}
	if !overwrite {
		old, err := s.meta.GetAnnotation(ctx, tsuid, startMs)
		if err != nil {
			return nil, false, err
		}
		if old != nil {
			a = old
			a.StartTime = req.StartTime
		}
	}
	setIfSent(&a.Description, req.Description)
	setIfSent(&a.Notes, req.Notes)
	if req.Custom != nil {
		a.Custom = req.Custom
	}
	if req.EndTime != 0 {
		a.EndTime = req.EndTime
	}
	if err := s.meta.PutAnnotation(ctx, a); err != nil {
		return nil, false, err
	}
	return a, true, nil
}

func annotationsJSON(list []opentsdb.Annotation) otsRawJSON {
	b := []byte{'['}
	for i := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = list[i].AppendJSON(b)
	}
	return append(b, ']')
}

// rawJSON is JSON written as it is.
type otsRawJSON []byte

func (r otsRawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// handleAnnotationBulk is /api/annotation/bulk: POST and PUT store an array
// of annotations and return those stored; DELETE deletes the annotations of
// series (and the global ones) in a time range and says how many.
func (s *notes) handleAnnotationBulk(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := time.Now()
	body, ok := s.readJSONBody(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodDelete {
		var d *opentsdb.AnnotationBulkDelete
		var err error
		if len(strings.TrimSpace(string(body))) > 0 {
			d, err = opentsdb.ParseAnnotationBulkDeleteJSON(body, now, time.UTC)
		} else {
			d, err = opentsdb.ParseAnnotationBulkDeleteURI(r.URL.Query(), now, time.UTC)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var targets [][]byte
		for _, t := range d.TSUIDs {
			id, err := s.parseTSUID(t)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			targets = append(targets, id)
		}
		if d.Global {
			targets = append(targets, nil)
		}
		total := 0
		for _, t := range targets {
			n, err := s.meta.DeleteAnnotations(ctx, t, d.StartTime, d.EndTime)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			total += n
		}
		writeOTSRaw(w, http.StatusOK, d.AppendJSON(nil, total))
		return
	}
	reqs, err := opentsdb.ParseAnnotationsJSON(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(reqs) > s.cfg.MaxAnnotations {
		WriteError(w, http.StatusRequestEntityTooLarge, "Too many annotations in one request",
			"the limit is "+strconv.Itoa(s.cfg.MaxAnnotations))
		return
	}
	// Check them all before storing any.
	ids := make([][]byte, len(reqs))
	for i, req := range reqs {
		if ids[i], err = s.annotationTSUID(req.TSUID); err == nil && req.StartTime < 1 {
			err = &opentsdb.RequestError{Status: http.StatusBadRequest, Message: "The start timestamp has not been set",
				Details: "Annotation error: annotation " + strconv.Itoa(i) + " of the array"}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	out := make([]opentsdb.Annotation, 0, len(reqs))
	for i, req := range reqs {
		a, changed, err := s.syncAnnotation(ctx, req, ids[i], r.Method == http.MethodPut)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if changed {
			out = append(out, toOpenTSDBNote(a))
		}
	}
	writeOTSRaw(w, http.StatusOK, annotationsJSON(out))
}
