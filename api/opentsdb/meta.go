package opentsdb

import (
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"hourglass/chunk"
)

// UID types as OpenTSDB writes them in UIDMeta.
const (
	UIDTypeMetric = "METRIC"
	UIDTypeTagK   = "TAGK"
	UIDTypeTagV   = "TAGV"
)

// ParseUIDType is OpenTSDB's UniqueId.stringToUniqueIdType: metric or
// metrics, tagk, tagv, in any case. It returns UIDTypeMetric, UIDTypeTagK or
// UIDTypeTagV, or the *RequestError "Invalid type requested: x".
func ParseUIDType(s string) (string, error) {
	switch strings.ToLower(s) {
	case "metric", "metrics":
		return UIDTypeMetric, nil
	case "tagk":
		return UIDTypeTagK, nil
	case "tagv":
		return UIDTypeTagV, nil
	}
	return "", badRequest("Invalid type requested: " + s)
}

// optString is a string field that may be absent.
type optString = *string

// UIDMetaRequest is the body (or query string) of a POST, PUT or DELETE on
// /api/uid/uidmeta. Pointer fields are nil when not sent.
type UIDMetaRequest struct {
	UID         string // hex, as sent
	Type        string // UIDTypeMetric, UIDTypeTagK or UIDTypeTagV
	DisplayName optString
	Description optString
	Notes       optString
	Created     *int64
	Custom      map[string]string // nil when not sent (or null)
}

type uidMetaWire struct {
	UID         flexString             `json:"uid"`
	Type        flexString             `json:"type"`
	DisplayName *flexString            `json:"displayName"`
	Description *flexString            `json:"description"`
	Notes       *flexString            `json:"notes"`
	Created     *flexInt64             `json:"created"`
	Custom      map[string]*flexString `json:"custom"`
}

func optStr(f *flexString) optString {
	if f == nil || !f.set {
		return nil
	}
	s := f.s
	return &s
}

func optInt(f *flexInt64) *int64 {
	if f == nil || !f.set {
		return nil
	}
	v := f.v
	return &v
}

func customMap(m map[string]*flexString) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = v.s
		} else {
			out[k] = ""
		}
	}
	return out
}

// ParseUIDMetaJSON parses a UIDMeta body: {"uid","type","displayName",
// "description","notes","created","custom"} (name is ignored: it comes from
// the UID table). Errors are *RequestError: "Missing UID", "Missing type",
// "Invalid type requested: x", or the JSON errors of the other endpoints.
func ParseUIDMetaJSON(body []byte) (*UIDMetaRequest, error) {
	var w uidMetaWire
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	r := &UIDMetaRequest{UID: w.UID.s, DisplayName: optStr(w.DisplayName), Description: optStr(w.Description),
		Notes: optStr(w.Notes), Created: optInt(w.Created), Custom: customMap(w.Custom)}
	return r, r.check(w.Type.s)
}

// ParseUIDMetaURI parses the query-string form: uid and type (required),
// display_name, description, notes. Errors: "Missing parameter
// <code>uid</code>", "Missing parameter <code>type</code>", "Invalid type
// requested: x".
func ParseUIDMetaURI(q url.Values) (*UIDMetaRequest, error) {
	id, err := requiredValue(q, "uid")
	if err != nil {
		return nil, err
	}
	t, err := requiredValue(q, "type")
	if err != nil {
		return nil, err
	}
	r := &UIDMetaRequest{UID: id, DisplayName: qsOpt(q, "display_name"), Description: qsOpt(q, "description"), Notes: qsOpt(q, "notes")}
	return r, r.check(t)
}

func (r *UIDMetaRequest) check(typ string) error {
	if r.UID == "" {
		return badRequest("Missing UID")
	}
	if typ == "" {
		return badRequest("Missing type")
	}
	t, err := ParseUIDType(typ)
	r.Type = t
	return err
}

func qsOpt(q url.Values, name string) optString {
	v, ok := lastValue(q, name)
	if !ok {
		return nil
	}
	return &v
}

// TSMetaRequest is the body (or query string) of a POST, PUT or DELETE on
// /api/uid/tsmeta. Pointer fields are nil when not sent. TSUID may be empty
// when the series is named by ?m= instead.
type TSMetaRequest struct {
	TSUID       string
	DisplayName optString
	Description optString
	Notes       optString
	Units       optString
	DataType    optString
	Created     *int64
	Retention   *int64
	Max, Min    *float64
	Custom      map[string]string
}

type tsMetaWire struct {
	TSUID       flexString             `json:"tsuid"`
	DisplayName *flexString            `json:"displayName"`
	Description *flexString            `json:"description"`
	Notes       *flexString            `json:"notes"`
	Units       *flexString            `json:"units"`
	DataType    *flexString            `json:"dataType"`
	Created     *flexInt64             `json:"created"`
	Retention   *flexInt64             `json:"retention"`
	Max         *flexFloat             `json:"max"`
	Min         *flexFloat             `json:"min"`
	Custom      map[string]*flexString `json:"custom"`
}

func optFloat(f *flexFloat) *float64 {
	if f == nil {
		return nil
	}
	v := float64(*f)
	return &v
}

// ParseTSMetaJSON parses a TSMeta body: {"tsuid","displayName",
// "description","notes","units","dataType","created","retention","max",
// "min","custom"} (the metric, tags, lastReceived and totalDatapoints are
// ignored: they are not the user's to set).
func ParseTSMetaJSON(body []byte) (*TSMetaRequest, error) {
	var w tsMetaWire
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	return &TSMetaRequest{TSUID: w.TSUID.s, DisplayName: optStr(w.DisplayName), Description: optStr(w.Description),
		Notes: optStr(w.Notes), Units: optStr(w.Units), DataType: optStr(w.DataType), Created: optInt(w.Created),
		Retention: optInt(w.Retention), Max: optFloat(w.Max), Min: optFloat(w.Min), Custom: customMap(w.Custom)}, nil
}

// ParseTSMetaURI parses the query-string form, as OpenTSDB's parseTSMetaQS:
// tsuid, display_name, description, notes, units, data_type, retention, max,
// min. Errors: "Unable to parse 'retention' value", "Unable to parse 'max'
// value", "Unable to parse 'min' value".
func ParseTSMetaURI(q url.Values) (*TSMetaRequest, error) {
	r := &TSMetaRequest{DisplayName: qsOpt(q, "display_name"), Description: qsOpt(q, "description"),
		Notes: qsOpt(q, "notes"), Units: qsOpt(q, "units"), DataType: qsOpt(q, "data_type")}
	r.TSUID, _ = lastValue(q, "tsuid")
	if v, _ := lastValue(q, "retention"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, badRequest("Unable to parse 'retention' value")
		}
		r.Retention = &n
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"max", &r.Max}, {"min", &r.Min}} {
		if v, _ := lastValue(q, f.name); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, badRequest("Unable to parse '" + f.name + "' value")
			}
			*f.dst = &x
		}
	}
	return r, nil
}

// ParseMetricTags parses "metric{k=v,...}" (exact pairs, at least a
// metric), as OpenTSDB's Tags.parseWithMetric for tsmeta's ?m=.
func ParseMetricTags(s string) (string, []Tag, error) {
	if s == "" {
		return "", nil, badRequest("The query string was empty")
	}
	metric, tags, msg := parseMetricTags(s)
	if msg != "" {
		return "", nil, badRequest(msg)
	}
	if metric == "" {
		return "", nil, badRequest("Missing metric in: " + s)
	}
	return metric, tags, nil
}

// RenameRequest is an /api/uid/rename request: rename the Type name Name to NewName.
type RenameRequest struct {
	Type    string // UIDTypeMetric, UIDTypeTagK or UIDTypeTagV
	Name    string
	NewName string
}

// ParseRenameJSON parses {"metric"|"tagk"|"tagv": old, "name": new}.
func ParseRenameJSON(body []byte) (*RenameRequest, error) {
	var w map[string]*flexString
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for k, v := range w {
		if v != nil && v.s != "" {
			m[k] = v.s
		}
	}
	return newRename(m)
}

// ParseRenameURI parses metric=|tagk=|tagv= and name=.
func ParseRenameURI(q url.Values) (*RenameRequest, error) {
	m := map[string]string{}
	for _, k := range []string{"metric", "tagk", "tagv", "name"} {
		if v, _ := lastValue(q, k); v != "" {
			m[k] = v
		}
	}
	return newRename(m)
}

// newRename is UniqueIdRpc.handleRename's check: one of metric, tagk, tagv
// and name, else "Missing necessary values to rename UID".
func newRename(m map[string]string) (*RenameRequest, error) {
	r := &RenameRequest{NewName: m["name"]}
	n := 0
	for _, k := range []string{"metric", "tagk", "tagv"} {
		if v, ok := m[k]; ok {
			r.Type, _ = ParseUIDType(k)
			r.Name = v
			n++
		}
	}
	if n != 1 || r.NewName == "" {
		return nil, badRequest("Missing necessary values to rename UID")
	}
	return r, nil
}

// AnnotationRequest is an annotation as sent to /api/annotation: TSUID empty
// for a global one, StartTime 0 when not sent, EndTime 0 for none. Optional
// fields are nil when not sent.
type AnnotationRequest struct {
	TSUID       string
	StartTime   int64
	EndTime     int64
	Description optString
	Notes       optString
	Custom      map[string]string
}

type annotationWire struct {
	TSUID       flexString             `json:"tsuid"`
	StartTime   flexInt64              `json:"startTime"`
	EndTime     flexInt64              `json:"endTime"`
	Description *flexString            `json:"description"`
	Notes       *flexString            `json:"notes"`
	Custom      map[string]*flexString `json:"custom"`
}

func (w *annotationWire) request() *AnnotationRequest {
	return &AnnotationRequest{TSUID: w.TSUID.s, StartTime: w.StartTime.v, EndTime: w.EndTime.v,
		Description: optStr(w.Description), Notes: optStr(w.Notes), Custom: customMap(w.Custom)}
}

// ParseAnnotationJSON parses one annotation body, {"tsuid","startTime",
// "endTime","description","notes","custom"}.
func ParseAnnotationJSON(body []byte) (*AnnotationRequest, error) {
	var w annotationWire
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	return w.request(), nil
}

// ParseAnnotationsJSON parses the array body of /api/annotation/bulk.
func ParseAnnotationsJSON(body []byte) ([]*AnnotationRequest, error) {
	var ws []annotationWire
	if err := decodeJSON(body, &ws); err != nil {
		return nil, err
	}
	out := make([]*AnnotationRequest, len(ws))
	for i := range ws {
		out[i] = ws[i].request()
	}
	return out, nil
}

// ParseAnnotationURI parses the query-string form, as OpenTSDB's
// AnnotationRpc.parseQS: tsuid, start_time and end_time (query times,
// ParseTime; stored in seconds), description, notes. A missing or
// non-positive start is "Missing start time".
func ParseAnnotationURI(q url.Values, now time.Time, loc *time.Location) (*AnnotationRequest, error) {
	r := &AnnotationRequest{Description: qsOpt(q, "description"), Notes: qsOpt(q, "notes")}
	r.TSUID, _ = lastValue(q, "tsuid")
	start, _ := lastValue(q, "start_time")
	if start == "" {
		return nil, badRequest("Missing start time")
	}
	ms, err := ParseTime(start, now, loc)
	if err != nil {
		return nil, err
	}
	if r.StartTime = ms / 1000; r.StartTime < 1 {
		return nil, badRequest("Missing start time")
	}
	if end, _ := lastValue(q, "end_time"); end != "" {
		ms, err := ParseTime(end, now, loc)
		if err != nil {
			return nil, err
		}
		r.EndTime = ms / 1000
	}
	return r, nil
}

// AnnotationBulkDelete is a DELETE on /api/annotation/bulk: the annotations
// of the TSUIDs (and the global ones when Global) that start in
// [StartTime, EndTime], both in ms (EndTime 0: now).
type AnnotationBulkDelete struct {
	TSUIDs    []string
	Global    bool
	StartTime int64
	EndTime   int64
	// StartText and EndText are the times as sent, echoed in the reply.
	StartText, EndText string
}

// ParseAnnotationBulkDeleteJSON parses {"tsuids":[..],"global":bool,
// "startTime","endTime"} (times as /api/query takes them). Errors: "Missing
// the start time value", "Missing the TSUIDs or global annotations flag".
func ParseAnnotationBulkDeleteJSON(body []byte, now time.Time, loc *time.Location) (*AnnotationBulkDelete, error) {
	var w struct {
		TSUIDs    []flexString `json:"tsuids"`
		Global    flexBool     `json:"global"`
		StartTime flexString   `json:"startTime"`
		EndTime   flexString   `json:"endTime"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	d := &AnnotationBulkDelete{Global: bool(w.Global), StartText: w.StartTime.s, EndText: w.EndTime.s}
	for _, t := range w.TSUIDs {
		d.TSUIDs = append(d.TSUIDs, strings.TrimSpace(t.s))
	}
	return d, d.finish(now, loc)
}

// ParseAnnotationBulkDeleteURI parses start_time (required), end_time,
// tsuids (comma-separated) and global (presence).
func ParseAnnotationBulkDeleteURI(q url.Values, now time.Time, loc *time.Location) (*AnnotationBulkDelete, error) {
	start, err := requiredValue(q, "start_time")
	if err != nil {
		return nil, err
	}
	d := &AnnotationBulkDelete{Global: HasFlag(q, "global"), StartText: start}
	d.EndText, _ = lastValue(q, "end_time")
	if v, _ := lastValue(q, "tsuids"); v != "" {
		for _, t := range strings.Split(v, ",") {
			d.TSUIDs = append(d.TSUIDs, strings.TrimSpace(t))
		}
	}
	return d, d.finish(now, loc)
}

func (d *AnnotationBulkDelete) finish(now time.Time, loc *time.Location) error {
	if d.StartText == "" {
		return badRequest("Missing the start time value")
	}
	if !d.Global && len(d.TSUIDs) == 0 {
		return badRequest("Missing the TSUIDs or global annotations flag")
	}
	var err error
	if d.StartTime, err = ParseTime(d.StartText, now, loc); err != nil {
		return err
	}
	if d.EndText == "" {
		d.EndTime = now.UnixMilli()
	} else if d.EndTime, err = ParseTime(d.EndText, now, loc); err != nil {
		return err
	}
	return nil
}

// AppendJSON appends the reply to a bulk delete: the request echoed with
// the number deleted.
func (d *AnnotationBulkDelete) AppendJSON(dst []byte, deleted int) []byte {
	tsuids := d.TSUIDs
	if tsuids == nil {
		tsuids = []string{}
	}
	t, _ := json.Marshal(tsuids)
	dst = append(dst, `{"tsuids":`...)
	dst = append(dst, t...)
	dst = append(dst, `,"global":`...)
	dst = strconv.AppendBool(dst, d.Global)
	dst = append(dst, `,"startTime":`...)
	dst = strconv.AppendInt(dst, d.StartTime, 10)
	dst = append(dst, `,"endTime":`...)
	dst = strconv.AppendInt(dst, d.EndTime, 10)
	dst = append(dst, `,"totalDeleted":`...)
	dst = strconv.AppendInt(dst, int64(deleted), 10)
	return append(dst, '}')
}

// UIDMeta is a UID's metadata as OpenTSDB serializes it.
type UIDMeta struct {
	UID         string            `json:"uid"`
	Type        string            `json:"type"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Notes       string            `json:"notes"`
	Created     int64             `json:"created"`
	Custom      map[string]string `json:"custom"`
	DisplayName string            `json:"displayName"`
}

// TSMeta is a series' metadata as OpenTSDB serializes it.
type TSMeta struct {
	TSUID           string            `json:"tsuid"`
	Metric          *UIDMeta          `json:"metric"`
	Tags            []*UIDMeta        `json:"tags"`
	Description     string            `json:"description"`
	Notes           string            `json:"notes"`
	Created         int64             `json:"created"`
	Units           string            `json:"units"`
	Retention       int64             `json:"retention"`
	Max             JSONFloat         `json:"max"`
	Min             JSONFloat         `json:"min"`
	Custom          map[string]string `json:"custom"`
	DisplayName     string            `json:"displayName"`
	DataType        string            `json:"dataType"`
	LastReceived    int64             `json:"lastReceived"`
	TotalDatapoints int64             `json:"totalDatapoints"`
}

// JSONFloat is a float64 written as Jackson writes a double: NaN as "NaN".
type JSONFloat float64

// MarshalJSON implements json.Marshaler.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return AppendValue(nil, chunk.Float(v), false), nil
	}
	return appendFloat(nil, v), nil
}
