package meta

import (
	"context"
	"math"
	"testing"

	"hourglass/store/pebble"
)

func open(t *testing.T) *Store {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st)
}

func TestAnnotations(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	a1 := []byte{0, 0, 1, 0, 0, 1, 0, 0, 0, 1}
	a2 := []byte{0, 0, 1, 0, 0, 1, 0, 0, 0, 2}
	// No series annotation yet: the shortcut answers without reading.
	if got, err := s.SeriesAnnotations(ctx, [][]byte{a1}, 0, math.MaxInt64, 0); err != nil || got != nil {
		t.Fatalf("SeriesAnnotations before any: %v %v", got, err)
	}
	notes := []Annotation{
		{TSUID: a1, StartTime: 1000, Description: "one"},
		{TSUID: a1, StartTime: 2000000000000, EndTime: 2000000001000, Description: "ms"},
		{TSUID: a2, StartTime: 1500, Description: "two", Custom: map[string]string{"k": "v"}},
		{StartTime: 1200, Description: "global"},
	}
	for i := range notes {
		if err := s.PutAnnotation(ctx, &notes[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetAnnotation(ctx, a2, 1500000)
	if err != nil || got == nil || got.Description != "two" || got.Custom["k"] != "v" || string(got.TSUID) != string(a2) {
		t.Fatalf("GetAnnotation: %+v %v", got, err)
	}
	if got, err := s.GetAnnotation(ctx, a2, 1500001); err != nil || got != nil {
		t.Fatalf("GetAnnotation of a missing one: %+v %v", got, err)
	}
	list, err := s.SeriesAnnotations(ctx, [][]byte{a2, a1, a1}, 0, 1600000, 0)
	if err != nil || len(list) != 2 || list[0].Description != "one" || list[1].Description != "two" {
		t.Fatalf("SeriesAnnotations: %+v %v", list, err)
	}
	list, err = s.Annotations(ctx, [][]byte{nil}, 1200000, 1200000, 0)
	if err != nil || len(list) != 1 || list[0].Description != "global" || len(list[0].TSUID) != 0 {
		t.Fatalf("global Annotations: %+v %v", list, err)
	}
	n, err := s.DeleteAnnotations(ctx, a1, 0, math.MaxInt64)
	if err != nil || n != 2 {
		t.Fatalf("DeleteAnnotations: %d %v", n, err)
	}
	if ok, err := s.DeleteAnnotation(ctx, a2, 1500000); !ok || err != nil {
		t.Fatalf("DeleteAnnotation: %v %v", ok, err)
	}
	if ok, err := s.DeleteAnnotation(ctx, a2, 1500000); ok || err != nil {
		t.Fatalf("DeleteAnnotation twice: %v %v", ok, err)
	}
	list, _ = s.Annotations(ctx, [][]byte{a1, a2, nil}, 0, math.MaxInt64, 0)
	if len(list) != 1 || list[0].Description != "global" {
		t.Fatalf("left: %+v", list)
	}
	if err := s.PutAnnotation(ctx, &Annotation{TSUID: a1}); err == nil {
		t.Fatal("an annotation without a start was stored")
	}
}

func TestUIDAndTSMeta(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	uid := []byte{0, 0, 7}
	if m, ok, err := s.GetUIDMeta(ctx, 0, uid); ok || err != nil || m.Description != "" {
		t.Fatalf("empty: %+v %v %v", m, ok, err)
	}
	if err := s.PutUIDMeta(ctx, 0, uid, UIDMeta{Description: "d", Custom: map[string]string{"a": "b"}}); err != nil {
		t.Fatal(err)
	}
	if m, ok, err := s.GetUIDMeta(ctx, 0, uid); !ok || err != nil || m.Description != "d" || m.Custom["a"] != "b" {
		t.Fatalf("stored: %+v %v %v", m, ok, err)
	}
	if _, ok, _ := s.GetUIDMeta(ctx, 1, uid); ok {
		t.Fatal("tagk meta shares the metric's")
	}
	if err := s.DeleteUIDMeta(ctx, 0, uid); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetUIDMeta(ctx, 0, uid); ok {
		t.Fatal("deleted meta still there")
	}
	ts := []byte{0, 0, 7, 0, 0, 1, 0, 0, 0, 1}
	m, ok, err := s.GetTSMeta(ctx, ts)
	if ok || err != nil || !math.IsNaN(float64(m.Max)) {
		t.Fatalf("empty ts meta: %+v %v %v", m, ok, err)
	}
	m.Units, m.Max = "bytes", 42.5
	if err := s.PutTSMeta(ctx, ts, m); err != nil {
		t.Fatal(err)
	}
	m2, ok, err := s.GetTSMeta(ctx, ts)
	if !ok || err != nil || m2.Units != "bytes" || m2.Max != 42.5 || !math.IsNaN(float64(m2.Min)) {
		t.Fatalf("ts meta: %+v %v %v", m2, ok, err)
	}
}
