package rollup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"hourglass/chunk"
	"hourglass/rowkey"
)

func testTSUID(l rowkey.Layout, metric uint64, pairs ...uint64) []byte {
	b := rowkey.AppendUID(nil, metric, l.MetricWidth)
	for i := 0; i+1 < len(pairs); i += 2 {
		b = rowkey.AppendUID(b, pairs[i], l.TagKWidth)
		b = rowkey.AppendUID(b, pairs[i+1], l.TagVWidth)
	}
	return b
}

const day0 = int64(1_700_006_400_000) // a UTC midnight (2023-11-15)

func TestRowKeyLayout(t *testing.T) {
	l := rowkey.DefaultLayout()
	ts := testTSUID(l, 0x010203, 1, 0xdeadbeef, 2, 7)
	at := day0 + 5*hourMs + 123
	row := AppendRowKey(nil, l, ts, hourMs, at)
	// salt | 3600 | metric | day | tags, byte for byte.
	want := []byte{l.Salt(ts), 0, 0, 0x0e, 0x10, 1, 2, 3}
	want = binary.BigEndian.AppendUint32(want, uint32(day0/1000))
	want = append(want, ts[3:]...)
	if !bytes.Equal(row, want) {
		t.Fatalf("row key %x, want %x", row, want)
	}
	if len(row) != 1+4+3+4+2*7 {
		t.Fatalf("row key of %d bytes", len(row))
	}
	k, err := ParseRowKey(l, nil, row)
	if err != nil {
		t.Fatal(err)
	}
	if k.Salt != l.Salt(ts) || k.Interval != hourMs || k.Day != day0 || !bytes.Equal(k.TSUID, ts) {
		t.Fatalf("parsed %+v", k)
	}
	for _, bad := range [][]byte{row[:len(row)-1], row[:5], nil} {
		if _, err := ParseRowKey(l, nil, bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseRowKey(%x) = %v, want ErrBadKey", bad, err)
		}
	}
	odd := append([]byte(nil), row...)
	odd[4] = 7 // an interval of 3591 s
	if _, err := ParseRowKey(l, nil, odd); !errors.Is(err, ErrBadKey) {
		t.Errorf("interval 3591 s parsed: %v", err)
	}
}

func TestQualifiers(t *testing.T) {
	q := AppendQualifier(nil, day0, day0+7*hourMs)
	if len(q) != QualifierLen {
		t.Fatalf("qualifier %x", q)
	}
	p, err := ParseQualifier(q)
	if err != nil || p.Agg != 0 || p.Offset != 7*hourMs {
		t.Fatalf("parsed %+v, %v", p, err)
	}
	e := AppendExternalQualifier(nil, AggMax, day0, day0+90*60_000)
	p, err = ParseQualifier(e)
	if err != nil || p.Agg != AggMax || p.Offset != 90*60_000 {
		t.Fatalf("parsed external %+v, %v", p, err)
	}
	// Computed cells sort before every external point of their row.
	if bytes.Compare(AppendQualifier(nil, day0, day0+23*hourMs), e) >= 0 {
		t.Fatal("a computed cell sorts after an external point")
	}
	for _, bad := range [][]byte{{0, 0, 0, 1}, {0, 1, 0x51, 0x80}, {0, 0, 0, 0, 0}, {9, 0, 0, 0, 0}, {1, 0, 1, 0x51, 0x80}, {1, 2, 3}} {
		if _, err := ParseQualifier(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseQualifier(%x) = %v, want ErrBadKey", bad, err)
		}
	}
}

func TestCellSpans(t *testing.T) {
	for _, c := range []struct{ iv, span int64 }{{60_000, hourMs}, {600_000, hourMs}, {hourMs, dayMs}, {6 * hourMs, dayMs}, {dayMs, dayMs}} {
		if got := CellSpan(c.iv); got != c.span {
			t.Errorf("CellSpan(%d) = %d, want %d", c.iv, got, c.span)
		}
	}
	if CellBase(day0+90*60_000, 600_000) != day0+hourMs || CellBase(day0+90*60_000, hourMs) != day0 {
		t.Fatal("CellBase")
	}
	if RowBase(-1) != -dayMs {
		t.Fatal("RowBase before the epoch")
	}
}

func TestMetricRangeHoldsItsRows(t *testing.T) {
	l := rowkey.DefaultLayout()
	a := testTSUID(l, 5, 1, 1)
	b := testTSUID(l, 5, 1, 2)
	other := testTSUID(l, 6, 1, 1)
	salt := l.Salt(a)
	lo, hi := MetricRange(l, salt, a[:3], hourMs, day0+hourMs, day0+2*dayMs+5)
	in := func(row []byte) bool { return bytes.Compare(row, lo) >= 0 && (hi == nil || bytes.Compare(row, hi) < 0) }
	for _, d := range []int64{day0, day0 + dayMs, day0 + 2*dayMs} {
		if !in(AppendRowKey(nil, l, a, hourMs, d)) {
			t.Errorf("day %d not in the range", d)
		}
		if l.Salt(b) == salt && !in(AppendRowKey(nil, l, b, hourMs, d)) {
			t.Errorf("series b at day %d not in the range", d)
		}
	}
	for _, row := range [][]byte{
		AppendRowKey(nil, l, a, hourMs, day0-1),
		AppendRowKey(nil, l, a, hourMs, day0+3*dayMs),
		AppendRowKey(nil, l, a, 600_000, day0+dayMs),
	} {
		if in(row) {
			t.Errorf("row %x is in the range", row)
		}
	}
	if l.Salt(other) == salt && in(AppendRowKey(nil, l, other, hourMs, day0)) {
		t.Error("another metric's row is in the range")
	}
	s, e := IntervalRange(salt, hourMs)
	if row := AppendRowKey(nil, l, other, hourMs, day0); l.Salt(other) == salt && (bytes.Compare(row, s) < 0 || bytes.Compare(row, e) >= 0) {
		t.Error("IntervalRange misses a row of its interval")
	}
}

func TestExternalValues(t *testing.T) {
	for _, v := range []chunk.Value{chunk.Int(0), chunk.Int(-1), chunk.Int(math.MaxInt64), chunk.Int(math.MinInt64),
		chunk.Float(1.5), chunk.Float(math.Copysign(0, -1)), chunk.Float(math.Inf(-1)), chunk.FloatBits(StaleNaNBits)} {
		b := AppendExternalValue(nil, v)
		got, err := ParseExternalValue(b)
		if err != nil || !got.Identical(v) {
			t.Errorf("%v: got %v, %v", v, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {2}, {0}, {0, 1, 2}, {1, 0, 0}, {0, 0x80}} {
		if _, err := ParseExternalValue(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseExternalValue(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
	for _, name := range []string{"SUM", "count", "Min", "max", "first", "LAST"} {
		a, err := ParseAggregator(name)
		if err != nil || !equalFold(a.String(), name) {
			t.Errorf("ParseAggregator(%q) = %v, %v", name, a, err)
		}
	}
	for _, name := range []string{"avg", "dev", "", "zimsum"} {
		if _, err := ParseAggregator(name); err == nil {
			t.Errorf("ParseAggregator(%q) accepted", name)
		}
	}
}

func equalFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// FuzzKeys: arbitrary bytes parse as a row key, a qualifier and an external
// value, or fail with the package's errors; whatever parses re-encodes to
// the same bytes (the value: to the same value).
func FuzzKeys(f *testing.F) {
	l := rowkey.DefaultLayout()
	ts := testTSUID(l, 9, 1, 2)
	f.Add(AppendRowKey(nil, l, ts, hourMs, day0), AppendQualifier(nil, day0, day0+hourMs), AppendExternalValue(nil, chunk.Int(-5)))
	f.Add(AppendRowKey(nil, l, ts[:3], 600_000, day0), AppendExternalQualifier(nil, AggSum, day0, day0+600_000), AppendExternalValue(nil, chunk.Float(2.5)))
	f.Add([]byte{0}, []byte{1, 2, 3, 4, 5}, []byte{0, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, row, qual, val []byte) {
		if k, err := ParseRowKey(l, nil, row); err == nil {
			again := AppendRowKey(nil, l, k.TSUID, k.Interval, k.Day)
			if again[0] != k.Salt {
				// a key whose salt is not the TSUID's: parsed, but no writer makes it
				again[0] = k.Salt
			}
			if !bytes.Equal(again, row) {
				t.Fatalf("row %x re-encodes as %x", row, again)
			}
		} else if !errors.Is(err, ErrBadKey) {
			t.Fatalf("row key error %v is not ErrBadKey", err)
		}
		if q, err := ParseQualifier(qual); err == nil {
			var again []byte
			if q.Agg == 0 {
				again = AppendQualifier(nil, day0, day0+q.Offset)
			} else {
				again = AppendExternalQualifier(nil, q.Agg, day0, day0+q.Offset)
			}
			if !bytes.Equal(again, qual) {
				t.Fatalf("qualifier %x re-encodes as %x", qual, again)
			}
		} else if !errors.Is(err, ErrBadKey) {
			t.Fatalf("qualifier error %v is not ErrBadKey", err)
		}
		if v, err := ParseExternalValue(val); err == nil {
			w, err := ParseExternalValue(AppendExternalValue(nil, v))
			if err != nil || !w.Identical(v) {
				t.Fatalf("value %x: %v re-reads as %v, %v", val, v, w, err)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("value error %v is not ErrCorrupt", err)
		}
	})
}
