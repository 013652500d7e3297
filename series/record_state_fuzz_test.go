package series

import (
	"bytes"
	"math"
	"testing"

	"hourglass/chunk"
)

// FuzzStateSamples encodes samples made from the input as series-state
// entries (0x07), several records in a segment and several segments, the
// states carried from record to record as the head carries them, and checks
// that one decoder, told of each new segment, returns exactly those samples
// (every value bit for bit: NaN payloads, -0, ±Inf, ints at the limits,
// decimals and floats chained or not). Arbitrary bytes must not panic it.
func FuzzStateSamples(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Add(bytes.Repeat([]byte{1, 0x10, 2, 0x7f}, 20))
	f.Add(bytes.Repeat([]byte{3, 0xff, 0x81, 5, 9, 0}, 30))
	f.Add(bytes.Repeat([]byte{0x40, 1, 2, 0x11, 3, 4, 0x80, 5, 6, 0x19, 7, 8}, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Arbitrary bytes as a record: an error or samples, never a panic.
		var junk recordDecoder
		junk.onSample = func(walSample) error { return nil }
		_ = junk.decode(append([]byte{entryStateSamples}, b...))
		_ = junk.decode(append([]byte{entryStateSamples}, b...))

		type rec struct {
			seg  int
			want []walSample
		}
		var recs []rec
		seg := 1
		var cur []walSample
		var ref uint64 = 1
		var ts int64 = 1_700_000_000_000
		var last float64 = 12.5
		for len(b) >= 3 {
			op, x, y := b[0], b[1], b[2]
			b = b[3:]
			if op&0x40 != 0 || op&0x80 != 0 { // end the record; 0x80: and the segment
				recs = append(recs, rec{seg, cur})
				cur = nil
				if op&0x80 != 0 {
					seg++
				}
			}
			if op&1 != 0 {
				ref = uint64(x%5) + 1
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
			cur = append(cur, walSample{ref: ref, t: ts, v: v})
		}
		recs = append(recs, rec{seg, cur})

		states := map[uint64]*walState{}
		var d recordDecoder
		var got []walSample
		d.onSample = func(s walSample) error { got = append(got, s); return nil }
		prevSeg := 0
		for i, r := range recs {
			buf := appendStateSamplesHeader(nil, len(r.want))
			var enc stateEncoder
			for _, s := range r.want {
				st := states[s.ref]
				if st == nil {
					st = &walState{}
					states[s.ref] = st
				}
				buf = enc.append(buf, st, r.seg, s.ref, s.t, s.v)
			}
			if r.seg != prevSeg {
				d.newSegment()
				prevSeg = r.seg
			}
			got = got[:0]
			if err := d.decode(buf); err != nil {
				t.Fatalf("record %d (segment %d): decoding what the encoder wrote: %v", i, r.seg, err)
			}
			if len(got) != len(r.want) {
				t.Fatalf("record %d: got %d samples, want %d", i, len(got), len(r.want))
			}
			for j := range r.want {
				if got[j].ref != r.want[j].ref || got[j].t != r.want[j].t || !got[j].v.Identical(r.want[j].v) {
					t.Fatalf("record %d sample %d: got %+v, want %+v", i, j, got[j], r.want[j])
				}
			}
		}
	})
}
