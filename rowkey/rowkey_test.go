package rowkey

import (
	"bytes"
	"errors"
	"testing"
)

func tsuid(l Layout, metric uint64, pairs ...uint64) []byte {
	b := AppendUID(nil, metric, l.MetricWidth)
	for i := 0; i+1 < len(pairs); i += 2 {
		b = AppendUID(b, pairs[i], l.TagKWidth)
		b = AppendUID(b, pairs[i+1], l.TagVWidth)
	}
	return b
}

// TestKeySizes freezes the widths of DESIGN.md's key layout.
func TestKeySizes(t *testing.T) {
	l := DefaultLayout()
	cases := []struct {
		name  string
		pairs int
		want  int
	}{
		{"no tags", 0, 1 + 3 + 4},
		{"one tag", 1, 1 + 3 + 4 + 7},
		{"eight tags", 8, 1 + 3 + 4 + 8*7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pairs []uint64
			for i := 0; i < c.pairs; i++ {
				pairs = append(pairs, uint64(i+1), uint64(i+100))
			}
			row := l.AppendRowKey(nil, tsuid(l, 1, pairs...), 0)
			if len(row) != c.want {
				t.Fatalf("row key is %d bytes, want %d", len(row), c.want)
			}
		})
	}
	if q := AppendQualifier(nil, 1, 2); len(q) != QualifierLen || QualifierLen != 6 {
		t.Fatalf("qualifier is %d bytes, want 6", len(q))
	}
}

func TestRowKeyRoundTrip(t *testing.T) {
	l := DefaultLayout()
	id := tsuid(l, 0x010203, 1, 0xdeadbeef, 2, 7)
	hour := int64(1_700_000_000_000) - int64(1_700_000_000_000)%HourMs
	row := l.AppendRowKey(nil, id, hour)
	want := []byte{l.Salt(id), 1, 2, 3}
	want = append(want, byte(hour/1000>>24), byte(hour/1000>>16), byte(hour/1000>>8), byte(hour/1000))
	want = append(want, id[3:]...)
	if !bytes.Equal(row, want) {
		t.Fatalf("row = %x, want %x", row, want)
	}
	salt, h, got, err := l.ParseRowKey(nil, row)
	if err != nil || salt != l.Salt(id) || h != hour || !bytes.Equal(got, id) {
		t.Fatalf("ParseRowKey = %d %d %x %v", salt, h, got, err)
	}
	if !l.RowTSUIDEqual(row, id) {
		t.Fatal("RowTSUIDEqual is false for its own series")
	}
	if l.RowTSUIDEqual(row, tsuid(l, 0x010203, 1, 0xdeadbeee, 2, 7)) {
		t.Fatal("RowTSUIDEqual is true for another series")
	}
	for _, bad := range [][]byte{nil, row[:7], row[:len(row)-1]} {
		if _, _, _, err := l.ParseRowKey(nil, bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseRowKey(%x) err = %v, want ErrBadKey", bad, err)
		}
	}
}

// TestSaltIsStable freezes the salt function: it is part of the on-disk format.
func TestSaltIsStable(t *testing.T) {
	l := DefaultLayout()
	cases := []struct {
		id   []byte
		want byte
	}{
		{tsuid(l, 1), 16},
		{tsuid(l, 1, 1, 1), 8},
		{tsuid(l, 42, 3, 99, 5, 1000), 9},
	}
	for _, c := range cases {
		got := l.Salt(c.id)
		if got >= byte(l.SaltBuckets) {
			t.Fatalf("salt %d out of %d buckets", got, l.SaltBuckets)
		}
		if got != c.want {
			t.Errorf("Salt(%x) = %d, want %d (the salt function changed: that breaks every data set)", c.id, got, c.want)
		}
	}
}

func TestSaltSpreads(t *testing.T) {
	l := DefaultLayout()
	counts := make([]int, l.SaltBuckets)
	for host := uint64(0); host < 2000; host++ {
		counts[l.Salt(tsuid(l, 7, 1, host))]++
	}
	for b, n := range counts {
		if n < 50 || n > 150 {
			t.Errorf("bucket %d got %d of 2000 series; the salt does not spread", b, n)
		}
	}
}

func TestMetricRangeCoversHours(t *testing.T) {
	l := DefaultLayout()
	metric := AppendUID(nil, 9, 3)
	h0 := int64(100) * HourMs
	start, end := l.MetricRange(3, metric, h0, h0+2*HourMs)
	in := func(row []byte) bool {
		return bytes.Compare(row, start) >= 0 && (end == nil || bytes.Compare(row, end) < 0)
	}
	id := tsuid(l, 9, 0xffffff, 0xffffffff)
	for _, c := range []struct {
		hour int64
		want bool
	}{{h0 - HourMs, false}, {h0, true}, {h0 + HourMs, true}, {h0 + 2*HourMs, true}, {h0 + 3*HourMs, false}} {
		row := []byte{3}
		row = append(row, metric...)
		row = append(row, l.AppendRowKey(nil, id, c.hour)[4:]...)
		if got := in(row); got != c.want {
			t.Errorf("hour %d in range = %v, want %v", c.hour/HourMs, got, c.want)
		}
	}
}

// TestMetricRangeToTheEnd: a range whose end hour is past what a row key
// holds runs to the first key after the metric's prefix, as
// store.PrefixEnd would give.
func TestMetricRangeToTheEnd(t *testing.T) {
	l := DefaultLayout()
	for _, c := range []struct {
		metric []byte
		want   []byte
	}{
		{[]byte{0, 0, 9}, []byte{3, 0, 0, 10}},
		{[]byte{0, 0xff, 0xff}, []byte{3, 1}},
	} {
		_, end := l.MetricRange(3, c.metric, 0, int64(1<<33)*1000)
		if !bytes.Equal(end, c.want) {
			t.Errorf("metric %x: end %x, want %x", c.metric, end, c.want)
		}
	}
	if _, end := l.MetricRange(0xff, []byte{0xff, 0xff, 0xff}, 0, int64(1<<33)*1000); end != nil {
		t.Errorf("all 0xff: end %x, want nil (the end of the table)", end)
	}
}

func TestQualifier(t *testing.T) {
	q := AppendQualifier(nil, 3599999, 0xbeef)
	off, w, err := ParseQualifier(q)
	if err != nil || off != 3599999 || w != 0xbeef {
		t.Fatalf("ParseQualifier = %d %x %v", off, w, err)
	}
	if _, _, err := ParseQualifier(AppendQualifier(nil, 3600000, 0)); !errors.Is(err, ErrBadKey) {
		t.Fatalf("offset past the hour: err = %v", err)
	}
	if _, _, err := ParseQualifier(q[:5]); !errors.Is(err, ErrBadKey) {
		t.Fatalf("short qualifier: err = %v", err)
	}
}

func TestHourOf(t *testing.T) {
	for _, c := range []struct{ t, want int64 }{
		{0, 0}, {HourMs - 1, 0}, {HourMs, HourMs}, {-1, -HourMs}, {1_700_000_123_456, 1_700_000_123_456 - 1_700_000_123_456%HourMs},
	} {
		if got := HourOf(c.t); got != c.want {
			t.Errorf("HourOf(%d) = %d, want %d", c.t, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, l := range []Layout{
		{SaltBuckets: 0, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4},
		{SaltBuckets: 257, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4},
		{SaltBuckets: 20, MetricWidth: 0, TagKWidth: 3, TagVWidth: 4},
		{SaltBuckets: 20, MetricWidth: 3, TagKWidth: 9, TagVWidth: 4},
	} {
		if l.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", l)
		}
	}
	if err := DefaultLayout().Validate(); err != nil {
		t.Fatal(err)
	}
	if MaxUID(3) != 16777215 || MaxUID(8) != 1<<64-1 || UIDValue(AppendUID(nil, 0xabcdef, 3)) != 0xabcdef {
		t.Fatal("UID helpers are wrong")
	}
}

func BenchmarkAppendRowKey(b *testing.B) {
	l := DefaultLayout()
	id := tsuid(l, 42, 1, 2, 3, 4, 5, 6, 7, 8)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = l.AppendRowKey(buf[:0], id, int64(i)*HourMs)
	}
}

func BenchmarkParseRowKey(b *testing.B) {
	l := DefaultLayout()
	row := l.AppendRowKey(nil, tsuid(l, 42, 1, 2, 3, 4, 5, 6, 7, 8), 1000*HourMs)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		_, _, buf, _ = l.ParseRowKey(buf[:0], row)
	}
}
