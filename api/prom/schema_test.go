package prom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The Label schema's shortcut in check accepts and rejects exactly what
// the field-by-field lookup does, with the same errors.
func TestLabelCheckShortcut(t *testing.T) {
	generic := &schema{labelSchema.name, labelSchema.fields} // not labelSchema: the long way
	cases := [][]byte{
		nil,
		rawLabel("__name__", "up"),
		append(rawLabel("a", "b"), 0x1a, 1, 'x'), // an unknown string field
		append(rawLabel("a", "b"), 0x18, 5),      // an unknown varint field
		{0x0a, 5, 'a'},                           // truncated
		{0x02, 1, 'a'},                           // field 0
		{0x08, 1},                                // field 1 as a varint
		{0x82, 0x01, 1, 'a'},                     // a two-byte key (field 16)
		{0x0a, 0x80},                             // a truncated length
		append([]byte{0x0a, 0x80, 0x01}, make([]byte, 128)...), // a two-byte length
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(4))<<3 | byte(r.IntN(8)) // small keys and lengths
			if r.IntN(3) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		got, want := fmt.Sprint(labelSchema.check(b, 7)), fmt.Sprint(generic.check(b, 7))
		if got != want {
			t.Fatalf("% x: %s, the long way %s", b, got, want)
		}
	}
}

// The TimeSeries schemas' shortcuts in check (Samples in the shape
// sampleFast reads, 1.0 Labels whose fields labelField takes, 2.0's
// labels_refs and Metadata of short varints) accept and
// reject exactly what the field-by-field lookup does, with the same errors:
// well-formed series, and series with a byte changed, cut short or with
// bytes added.
func TestCheckShortcuts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sample := func() []byte {
		var s []byte
		if r.IntN(4) != 0 {
			s = appendFixed64Field(s, 1, r.Uint64())
		}
		if r.IntN(4) != 0 {
			s = appendVarintField(s, 2, r.Uint64()>>r.IntN(64))
		}
		if r.IntN(8) == 0 {
			s = appendVarintField(s, 3, r.Uint64()>>r.IntN(64)) // 2.0's start timestamp; unknown to 1.0
		}
		return s
	}
	var cases [][]byte
	for range 3000 {
		var b []byte
		for range r.IntN(6) {
			switch r.IntN(6) {
			case 0:
				b = appendBytesField(b, 1, rawLabel(strings.Repeat("n", r.IntN(3)), strings.Repeat("v", r.IntN(200))))
			case 1:
				b = appendBytesField(b, 1, []byte{byte(r.IntN(3)) + 1})
			case 2: // 2.0's labels_refs: references of one to six bytes
				var refs []byte
				for range r.IntN(12) {
					refs = binary.AppendUvarint(refs, r.Uint64()>>(64-r.IntN(40)))
				}
				b = appendBytesField(b, 1, refs)
			case 3: // 2.0's Metadata: its fields, and others
				var md []byte
				for range r.IntN(4) {
					md = appendVarintField(md, []int{1, 3, 4, 2}[r.IntN(4)], r.Uint64()>>(64-r.IntN(40)))
				}
				b = appendBytesField(b, 5, md)
			default:
				b = appendBytesField(b, 2, sample())
			}
		}
		switch r.IntN(4) {
		case 0:
			if len(b) > 0 {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
		case 1:
			b = b[:r.IntN(len(b)+1)]
		case 2:
			b = append(b, byte(r.IntN(256)), byte(r.IntN(256)))
		}
		cases = append(cases, b)
	}
	for _, s := range []*schema{timeSeriesV1Schema, timeSeriesV2Schema} {
		generic := &schema{s.name, s.fields} // not s: the long way
		for _, b := range cases {
			got, want := fmt.Sprint(s.check(b, 7)), fmt.Sprint(generic.check(b, 7))
			if got != want {
				t.Fatalf("%s % x: %s, the long way %s", s.name, b, got, want)
			}
		}
	}
}

// FuzzCheckShortcuts holds the TimeSeries schemas' shortcuts to the long
// way on any bytes: the same answer and the same error.
func FuzzCheckShortcuts(f *testing.F) {
	f.Add([]byte{0x0a, 0x04, 0x00, 0x01, 0x82, 0x01, 0x12, 0x00, 0x2a, 0x02, 0x08, 0x02})
	f.Add([]byte{0x0a, 0x03, 0x80, 0x80, 0x01, 0x2a, 0x04, 0x18, 0x81, 0x01, 0x20})
	f.Add([]byte{0x2a, 0x03, 0x10, 0x01, 0x08, 0x0a, 0x06, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x00})
	f.Add(appendBytesField(nil, 1, rawLabel("__name__", "up")))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range []*schema{timeSeriesV1Schema, timeSeriesV2Schema} {
			generic := &schema{s.name, s.fields} // not s: the long way
			got, want := fmt.Sprint(s.check(b, 7)), fmt.Sprint(generic.check(b, 7))
			if got != want {
				t.Fatalf("%s % x: %s, the long way %s", s.name, b, got, want)
			}
		}
	})
}

// sampleFast reads what the general walk reads, and only what the check
// accepts.
func FuzzSampleFast(f *testing.F) {
	f.Add(appendVarintField(appendFixed64Field(nil, 1, math.Float64bits(1.5)), 2, 1767225600000))
	f.Add(appendVarintField(nil, 2, math.MaxUint64))
	f.Add(appendFixed64Field(nil, 1, 1))
	f.Add([]byte{})
	f.Add([]byte{0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, v, ok := sampleFast(b)
		if !ok {
			return
		}
		if err := sampleV1Schema.check(b, 0); err != nil {
			t.Fatalf("sampleFast read % x, which the check refuses: %v", b, err)
		}
		if wt, wv := parseSample(b); wt != ts || wv != v {
			t.Fatalf("% x: sampleFast %d %x, parseSample %d %x", b, ts, v, wt, wv)
		}
	})
}

// uvarintSlow reads what a byte-at-a-time read reads: every length,
// truncated varints, overlong ones, whatever follows within the capacity.
func TestUvarintSlow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		n := r.IntN(12)
		b := make([]byte, n, n+r.IntN(10))
		for i := range b {
			b[i] = byte(r.IntN(256)) | 0x80
		}
		if n > 0 && r.IntN(4) != 0 {
			b[r.IntN(n)] &= 0x7f // an end somewhere
		}
		full := b[:cap(b)]
		for i := n; i < cap(b); i++ {
			full[i] = byte(r.IntN(256))
		}
		off := 0
		if n > 0 {
			off = r.IntN(n)
		}
		gv, gn := uvarintSlow(b, off)
		wv, wn := uvarintLoop(b, off)
		if gv != wv || gn != wn {
			t.Fatalf("% x (cap %d) at %d: %d, %d; a byte at a time %d, %d", b, cap(b), off, gv, gn, wv, wn)
		}
		if x, k := binary.Uvarint(b[off:]); k > 0 && (x != wv || off+k != wn) {
			t.Fatalf("% x at %d: %d, %d; encoding/binary %d, %d", b, off, wv, wn, x, off+k)
		}
	}
}
