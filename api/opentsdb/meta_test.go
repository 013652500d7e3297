package opentsdb

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseUIDType(t *testing.T) {
	for in, want := range map[string]string{"metric": UIDTypeMetric, "METRICS": UIDTypeMetric, "tagk": UIDTypeTagK, "TagV": UIDTypeTagV} {
		if got, err := ParseUIDType(in); err != nil || got != want {
			t.Errorf("ParseUIDType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseUIDType("tags")
	wantErr(t, err, "Invalid type requested: tags", "")
}

func TestUIDMetaRequests(t *testing.T) {
	r, err := ParseUIDMetaJSON([]byte(`{"uid":"00002A","type":"metric","description":"d","notes":"","custom":{"a":"b","n":null},"created":12}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.UID != "00002A" || r.Type != UIDTypeMetric || *r.Description != "d" || *r.Notes != "" || r.DisplayName != nil ||
		*r.Created != 12 || r.Custom["a"] != "b" || r.Custom["n"] != "" {
		t.Fatalf("%+v", r)
	}
	_, err = ParseUIDMetaJSON([]byte(`{"type":"metric"}`))
	wantErr(t, err, "Missing UID", "")
	_, err = ParseUIDMetaJSON([]byte(`{"uid":"01"}`))
	wantErr(t, err, "Missing type", "")
	_, err = ParseUIDMetaJSON([]byte(`{"uid":"01","type":"x"}`))
	wantErr(t, err, "Invalid type requested: x", "")
	_, err = ParseUIDMetaJSON(nil)
	wantErr(t, err, "Missing message content", "Supply valid JSON formatted data in the body of your request")

	r, err = ParseUIDMetaURI(qs(t, "uid=01&type=tagk&display_name=x"))
	if err != nil || r.Type != UIDTypeTagK || *r.DisplayName != "x" || r.Description != nil {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = ParseUIDMetaURI(qs(t, "type=tagk"))
	wantErr(t, err, "Missing parameter <code>uid</code>", "")
	_, err = ParseUIDMetaURI(qs(t, "uid=01"))
	wantErr(t, err, "Missing parameter <code>type</code>", "")
}

func TestTSMetaRequests(t *testing.T) {
	r, err := ParseTSMetaJSON([]byte(`{"tsuid":"000001000001000001","units":"ms","max":"NaN","min":1.5,"retention":"7","custom":{"k":"v"},"metric":{"uid":"x"},"totalDatapoints":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.TSUID != "000001000001000001" || *r.Units != "ms" || !math.IsNaN(*r.Max) || *r.Min != 1.5 || *r.Retention != 7 || r.Custom["k"] != "v" || r.DataType != nil {
		t.Fatalf("%+v", r)
	}
	_, err = ParseTSMetaJSON([]byte(`{"max":"lots"}`))
	if re, ok := err.(*RequestError); !ok || re.Message != "Unable to parse the given JSON" {
		t.Fatalf("bad max: %v", err)
	}
	r, err = ParseTSMetaURI(qs(t, "tsuid=01&units=s&data_type=counter&retention=3&max=9&min=-1"))
	if err != nil || *r.Units != "s" || *r.DataType != "counter" || *r.Retention != 3 || *r.Max != 9 || *r.Min != -1 {
		t.Fatalf("%+v %v", r, err)
	}
	for qsv, msg := range map[string]string{
		"retention=x": "Unable to parse 'retention' value",
		"max=x":       "Unable to parse 'max' value",
		"min=x":       "Unable to parse 'min' value",
	} {
		_, err := ParseTSMetaURI(qs(t, qsv))
		wantErr(t, err, msg, "")
	}
	m, tags, err := ParseMetricTags("sys.cpu{host=a,dc=b}")
	if err != nil || m != "sys.cpu" || len(tags) != 2 || tags[1] != (Tag{"dc", "b"}) {
		t.Fatalf("%q %v %v", m, tags, err)
	}
	_, _, err = ParseMetricTags("")
	wantErr(t, err, "The query string was empty", "")
	_, _, err = ParseMetricTags("{host=a}")
	wantErr(t, err, "Missing metric in: {host=a}", "")
	_, _, err = ParseMetricTags("m{host=}")
	wantErr(t, err, "When parsing tag 'host=': invalid tag: host=", "")
}

func TestRenameRequests(t *testing.T) {
	r, err := ParseRenameURI(qs(t, "tagv=a&name=b"))
	if err != nil || *r != (RenameRequest{Type: UIDTypeTagV, Name: "a", NewName: "b"}) {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = ParseRenameJSON([]byte(`{"metric":"a","name":"b"}`))
	if err != nil || *r != (RenameRequest{Type: UIDTypeMetric, Name: "a", NewName: "b"}) {
		t.Fatalf("%+v %v", r, err)
	}
	for _, body := range []string{`{"metric":"a"}`, `{"name":"b"}`, `{"metric":"a","tagk":"c","name":"b"}`, `{"metric":"","name":"b"}`} {
		_, err := ParseRenameJSON([]byte(body))
		wantErr(t, err, "Missing necessary values to rename UID", "")
	}
}

func TestAnnotationRequests(t *testing.T) {
	now := time.Unix(1700000000, 0)
	a, err := ParseAnnotationJSON([]byte(`{"tsuid":"0102","startTime":1699999000,"endTime":"1699999999","description":"d","custom":{"x":"y"}}`))
	if err != nil || a.TSUID != "0102" || a.StartTime != 1699999000 || a.EndTime != 1699999999 || *a.Description != "d" || a.Notes != nil || a.Custom["x"] != "y" {
		t.Fatalf("%+v %v", a, err)
	}
	list, err := ParseAnnotationsJSON([]byte(`[{"startTime":1},{"startTime":2,"notes":"n"}]`))
	if err != nil || len(list) != 2 || *list[1].Notes != "n" {
		t.Fatalf("%+v %v", list, err)
	}
	_, err = ParseAnnotationsJSON([]byte(`{"startTime":1}`))
	if re, ok := err.(*RequestError); !ok || re.Message != "Unable to parse the given JSON" {
		t.Fatalf("object for bulk: %v", err)
	}
	a, err = ParseAnnotationURI(qs(t, "tsuid=01&start_time=1h-ago&end_time=1699999999500&notes=n"), now, nil)
	if err != nil || a.StartTime != 1700000000-3600 || a.EndTime != 1699999999 || *a.Notes != "n" {
		t.Fatalf("%+v %v", a, err)
	}
	_, err = ParseAnnotationURI(qs(t, "tsuid=01"), now, nil)
	wantErr(t, err, "Missing start time", "")
	_, err = ParseAnnotationURI(qs(t, "start_time=bad"), now, nil)
	if err == nil {
		t.Fatal("a bad start time parsed")
	}

	d, err := ParseAnnotationBulkDeleteJSON([]byte(`{"tsuids":["01"," 02 "],"startTime":"1699999000","endTime":1699999999}`), now, nil)
	if err != nil || len(d.TSUIDs) != 2 || d.TSUIDs[1] != "02" || d.StartTime != 1699999000000 || d.EndTime != 1699999999000 || d.Global {
		t.Fatalf("%+v %v", d, err)
	}
	if got := string(d.AppendJSON(nil, 3)); got != `{"tsuids":["01","02"],"global":false,"startTime":1699999000000,"endTime":1699999999000,"totalDeleted":3}` {
		t.Fatalf("reply %s", got)
	}
	d, err = ParseAnnotationBulkDeleteURI(qs(t, "start_time=1h-ago&global"), now, nil)
	if err != nil || !d.Global || d.EndTime != now.UnixMilli() {
		t.Fatalf("%+v %v", d, err)
	}
	_, err = ParseAnnotationBulkDeleteURI(qs(t, "global"), now, nil)
	wantErr(t, err, "Missing parameter <code>start_time</code>", "")
	_, err = ParseAnnotationBulkDeleteJSON([]byte(`{"global":true}`), now, nil)
	wantErr(t, err, "Missing the start time value", "")
	_, err = ParseAnnotationBulkDeleteJSON([]byte(`{"startTime":5}`), now, nil)
	wantErr(t, err, "Missing the TSUIDs or global annotations flag", "")
}

func TestMetaJSON(t *testing.T) {
	b, err := json.Marshal(TSMeta{TSUID: "01", Max: JSONFloat(math.NaN()), Min: 2, Tags: []*UIDMeta{}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"max":"NaN"`) || !strings.Contains(s, `"min":2.0`) || !strings.Contains(s, `"metric":null`) {
		t.Fatalf("%s", s)
	}
}

// FuzzMetaRequests: the metadata parsers never panic, and what they accept
// is consistent.
func FuzzMetaRequests(f *testing.F) {
	for _, s := range []string{`{"uid":"01","type":"metric","custom":{"a":"b"}}`, `{"tsuid":"01","max":"NaN"}`,
		`[{"startTime":1}]`, `{"metric":"a","name":"b"}`, `{"tsuids":["01"],"startTime":"1h-ago"}`, `{`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseUIDMetaJSON(b); err == nil && (r.UID == "" || r.Type == "") {
			t.Fatalf("accepted a UIDMeta without uid or type: %+v", r)
		}
		_, _ = ParseTSMetaJSON(b)
		_, _ = ParseAnnotationJSON(b)
		_, _ = ParseAnnotationsJSON(b)
		if r, err := ParseRenameJSON(b); err == nil && (r.Name == "" || r.NewName == "" || r.Type == "") {
			t.Fatalf("accepted a rename without names: %+v", r)
		}
		if d, err := ParseAnnotationBulkDeleteJSON(b, now, nil); err == nil && !d.Global && len(d.TSUIDs) == 0 {
			t.Fatalf("accepted a bulk delete of nothing: %+v", d)
		}
	})
}
