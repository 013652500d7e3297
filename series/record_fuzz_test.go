package series

import (
	"bytes"
	"math"
	"testing"

	"hourglass/chunk"
)

// FuzzRecord decodes arbitrary bytes as a WAL record (it must never panic,
// nor hand on labels that are not valid) and round-trips the records the
// head writes.
func FuzzRecord(f *testing.F) {
	l1 := MakeLabels("sys.cpu", []Tag{{Key: "host", Value: "a"}})
	l2 := MakeLabels("sys.mem", nil)
	var rec []byte
	rec = appendSeriesDef(rec, 1, l1)
	rec = appendSamplesHeaderV1(rec, 2)
	rec = appendSampleV1(rec, 1, 1_700_000_000_000, chunk.Int(-3))
	rec = appendSampleV1(rec, 1, 10_000, chunk.Float(2.5))
	rec = appendDelete(rec, 1_700_000_000_000, 1_700_000_360_000, []Labels{l1, l2})
	f.Add(rec)
	rec = appendSeriesDef(nil, 2, l2)
	rec = appendSamplesHeader(rec, 6)
	var enc sampleEncoder
	rec = enc.append(rec, 1, 1_700_000_000_000, chunk.Int(-3))
	rec = enc.append(rec, 1, 1_700_000_010_000, chunk.Int(4))
	rec = enc.append(rec, 2, 1_700_000_000_000, chunk.Float(2.5))
	rec = enc.append(rec, 2, 1_700_000_010_000, chunk.Float(2.75))
	rec = enc.append(rec, 2, 1_700_000_020_000, chunk.Float(math.Pi))
	rec = enc.append(rec, 2, 1_700_000_030_000, chunk.Float(math.NaN()))
	f.Add(rec)
	f.Add([]byte{entryDelete, 0x80})
	f.Add([]byte{entryDelete, 2, 4, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []byte
		d := recordDecoder{
			onSeries: func(ref uint64, l Labels) error {
				if !l.Valid() {
					t.Fatalf("invalid labels %q passed on", string(l))
				}
				got = appendSeriesDef(got, ref, l)
				return nil
			},
			onSample: func(s walSample) error {
				got = appendSamplesHeader(got, 1)
				var enc sampleEncoder
				got = enc.append(got, s.ref, s.t, s.v)
				return nil
			},
			onDelete: func(start, end int64, ls []Labels) error {
				for _, l := range ls {
					if !l.Valid() {
						t.Fatalf("invalid labels %q passed on", string(l))
					}
				}
				got = appendDelete(got, start, end, ls)
				return nil
			},
		}
		if err := d.decode(b); err != nil {
			return
		}
		// What decoded, written again, decodes to the same entries.
		again := got
		got = nil
		if err := d.decode(again); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !bytes.Equal(got, again) {
			t.Fatalf("round trip changed the record:\n%x\n%x", again, got)
		}
	})
}

// FuzzSampleEncoder encodes a sequence of samples made from the input into
// one delta-coded entry and checks that it decodes to exactly those samples
// (every value bit for bit: NaN payloads, -0, ±Inf, ints at the limits,
// decimals and floats chained or not).
func FuzzSampleEncoder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Add(bytes.Repeat([]byte{1, 0x10, 2, 0x7f}, 20))
	f.Add(bytes.Repeat([]byte{3, 0xff, 0x81, 5, 9, 0}, 30))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []walSample
		var ref uint64 = 1
		var ts int64 = 1_700_000_000_000
		var last float64 = 12.5
		for len(b) >= 3 {
			op, x, y := b[0], b[1], b[2]
			b = b[3:]
			if op&1 != 0 {
				ref = uint64(x % 5) // 0 too
			}
			switch op >> 1 & 3 {
			case 0: // regular step
				ts += 10_000
			case 1:
				ts += int64(int8(x)) * 997
			case 2:
				ts = int64(uint64(x)<<56 | uint64(y)<<8) // far away, negative too
			}
			var v chunk.Value
			switch op >> 3 & 7 {
			case 0:
				v = chunk.Int(int64(int8(y)) * 1000)
			case 1:
				v = chunk.Int(int64(uint64(x)<<57 | uint64(y))) // near the limits
			case 2:
				last += float64(int8(y)) / 100
				v = chunk.Float(last) // a decimal, mostly
			case 3:
				last += float64(int8(y)) / 3
				v = chunk.Float(last) // a float near the previous
			case 4:
				v = chunk.FloatBits(uint64(x)<<56 | uint64(y)<<48 | uint64(op)) // NaN payloads, -0, ±Inf among them
			case 5:
				v = chunk.Float([]float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e300, 5e-324, 0.001}[y%8])
			default:
				v = chunk.Float(float64(int64(x)-128) * math.Pow(10, float64(int(y%40)-20)))
			}
			want = append(want, walSample{ref: ref, t: ts, v: v})
		}
		rec := appendSamplesHeader(nil, len(want))
		var enc sampleEncoder
		for _, s := range want {
			rec = enc.append(rec, s.ref, s.t, s.v)
		}
		var got []walSample
		d := recordDecoder{onSample: func(s walSample) error { got = append(got, s); return nil }}
		if err := d.decode(rec); err != nil {
			t.Fatalf("decoding what the encoder wrote: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d samples, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].ref != want[i].ref || got[i].t != want[i].t || !got[i].v.Identical(want[i].v) {
				t.Fatalf("sample %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
