package series

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"hourglass/chunk"
	"hourglass/rowkey"
)

// FuzzPacked round-trips the late chunks' packed blocks (late.go): every
// point of the hour, float bits (NaN payloads, ±Inf, -0 included) and
// integers, comes back identical and in order; a point outside the hour
// is refused with dst unchanged; any bytes decode without a panic, or
// are refused when not whole points.
func FuzzPacked(f *testing.F) {
	seed := func(ts []uint32, vs []uint64, ints []bool) []byte {
		var b []byte
		for i := range ts {
			b = binary.LittleEndian.AppendUint32(b, ts[i])
			b = binary.LittleEndian.AppendUint64(b, vs[i])
			b = append(b, map[bool]byte{false: 0, true: 1}[ints[i]])
		}
		return b
	}
	f.Add(int64(0), seed([]uint32{0, 1, 3_599_999}, []uint64{math.Float64bits(math.NaN()), math.Float64bits(math.Inf(-1)), 1 << 63}, []bool{false, false, false}))
	f.Add(int64(-3), seed([]uint32{5, 4_000_000}, []uint64{math.MaxUint64, 7}, []bool{true, true}))
	f.Add(int64(1_700_000_000_000/rowkey.HourMs), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, hourN int64, data []byte) {
		hour := (hourN % (1 << 30)) * rowkey.HourMs
		var pts []chunk.Point
		inHour := true
		for b := data; len(b) >= 13; b = b[13:] {
			off := int64(binary.LittleEndian.Uint32(b))
			bits := binary.LittleEndian.Uint64(b[4:])
			v := chunk.FloatBits(bits)
			if b[12]&1 == 1 {
				v = chunk.Int(int64(bits))
			}
			inHour = inHour && off < rowkey.HourMs
			pts = append(pts, chunk.Point{T: hour + off, V: v})
		}
		prefix := []byte{9, 9}
		enc, err := appendPacked(slices.Clone(prefix), hour, pts)
		if !inHour {
			if err == nil || !slices.Equal(enc, prefix) {
				t.Fatalf("a point outside the hour: err %v, dst %x", err, enc)
			}
		} else {
			if err != nil {
				t.Fatalf("appendPacked: %v", err)
			}
			if len(enc) != len(prefix)+packedSize*len(pts) {
				t.Fatalf("%d points in %d bytes", len(pts), len(enc)-len(prefix))
			}
			got, err := decodePacked([]chunk.Point{{T: 1}}, enc[len(prefix):], hour)
			if err != nil {
				t.Fatalf("decodePacked: %v", err)
			}
			if !slices.EqualFunc(got[1:], pts, func(a, b chunk.Point) bool { return a.T == b.T && a.V.Identical(b.V) }) || got[0].T != 1 {
				t.Fatalf("round trip differs: %v, want %v", got[1:], pts)
			}
		}
		got, err := decodePacked(nil, data, hour)
		if len(data)%packedSize != 0 {
			if err == nil {
				t.Fatalf("%d bytes decoded without an error", len(data))
			}
		} else if err != nil || len(got) != len(data)/packedSize {
			t.Fatalf("%d bytes: %d points, err %v", len(data), len(got), err)
		}
	})
}
