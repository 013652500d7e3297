package model

import (
	"reflect"
	"testing"
)

func TestEntryDays(t *testing.T) {
	var e Entry
	if _, _, ok := e.DaySpan(); ok || e.HasDays(0, 100) {
		t.Fatal("an entry without days has a span")
	}
	for _, d := range []uint32{10, 12, 11, 20, 5, 10} {
		e.AddDay(d)
	}
	if e.AddDay(11) {
		t.Error("AddDay(11) again reported a new day")
	}
	if got, want := e.days, []dayRange{{5, 5}, {10, 12}, {20, 20}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("days %v, want %v", got, want)
	}
	if first, last, ok := e.DaySpan(); !ok || first != 5 || last != 20 {
		t.Errorf("DaySpan = %d, %d, %v; want 5, 20, true", first, last, ok)
	}
	for _, c := range []struct {
		first, last uint32
		want        bool
	}{{0, 4, false}, {0, 5, true}, {6, 9, false}, {12, 19, true}, {13, 19, false}, {21, 99, false}} {
		if got := e.HasDays(c.first, c.last); got != c.want {
			t.Errorf("HasDays(%d, %d) = %v, want %v", c.first, c.last, got, c.want)
		}
	}
	var dropped []uint32
	e.DropDaysBefore(11, func(d uint32) { dropped = append(dropped, d) })
	if want := []uint32{5, 10}; !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	if got, want := e.days, []dayRange{{11, 12}, {20, 20}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the drop, days %v, want %v", got, want)
	}
	e.DropDaysBefore(21, func(uint32) {})
	if _, _, ok := e.DaySpan(); ok {
		t.Errorf("days left after dropping all: %v", e.days)
	}
}

func TestLabels(t *testing.T) {
	l := MakeLabels("sys.cpu", []Tag{{Key: "host", Value: "a"}, {Key: "dc", Value: "lga"}})
	if !l.Valid() || l.Metric() != "sys.cpu" || l.NumTags() != 2 {
		t.Fatalf("labels %q: valid %v, metric %q, %d tags", l, l.Valid(), l.Metric(), l.NumTags())
	}
	if v, ok := l.Get("host"); !ok || v != "a" {
		t.Errorf("Get(host) = %q, %v", v, ok)
	}
	if _, ok := l.Get("rack"); ok {
		t.Error("Get(rack) found a tag the series lacks")
	}
	if got := l.String(); got != "sys.cpu{dc=lga,host=a}" {
		t.Errorf("String() = %q", got)
	}
	if Labels("\x05ab").Valid() {
		t.Error("a truncated encoding is valid")
	}
}

func TestKind(t *testing.T) {
	for _, k := range Kinds {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseKind("tags"); err == nil {
		t.Error("ParseKind(tags) accepted an unknown kind")
	}
	err := &NoSuchNameError{Kind: KindTagK, Name: "x"}
	if err.Error() != "No such name for 'tagk': 'x'" || err.Unwrap() != ErrNoSuchName {
		t.Errorf("NoSuchNameError: %q", err)
	}
}

func TestUIDHex(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{{nil, ""}, {[]byte{0, 0, 1}, "000001"}, {[]byte{0xab, 0x0f, 0xf0, 0x9c}, "AB0FF09C"}} {
		if got := UIDHex(c.in); got != c.want {
			t.Errorf("UIDHex(%x) = %q, want %q", c.in, got, c.want)
		}
	}
}
