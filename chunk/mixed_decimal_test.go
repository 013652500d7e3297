package chunk

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// TestMixedDecimal: chunks holding ints and floats. Each must round-trip
// bit for bit (kind included) with the encoding Append picks and, where
// it fits, with mixed-decimal forced; it fits exactly when every float is a
// decimal at one scale k and every int's v·10^k is an int64.
func TestMixedDecimal(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		vs   []Value
		enc  encoding // what Append picks
		fits bool     // mixed-decimal can be forced
		k    int      // its scale, when it fits
	}{
		{"one int", []Value{Float(1.25), Int(2), Float(2.5)}, encMixedDecimal, true, 2},
		{"starts with an int", []Value{Int(50), Float(50.01), Float(49.99)}, encMixedDecimal, true, 2},
		{"ends with an int", []Value{Float(49.5), Float(49.9), Int(50)}, encMixedDecimal, true, 1},
		{"alternating", []Value{Float(0.5), Int(1), Float(1.5), Int(2), Float(2.5), Int(3), Float(3.5), Int(4)}, encMixedDecimal, true, 1},
		{"negative", []Value{Float(-1.25), Int(-3), Float(-0.5), Int(-1), Float(-12.75)}, encMixedDecimal, true, 2},
		{"zeros", []Value{Int(0), Float(0), Int(0), Float(0)}, encMixedDecimal, true, 0},
		{"whole floats and ints", []Value{Float(1), Int(1), Float(2), Int(2)}, encMixedDecimal, true, 0},
		{"int at the top edge, k 2", []Value{Float(0.01), Int(math.MaxInt64 / 100), Float(0.02)}, 0, true, 2},
		{"int at the bottom edge, k 2", []Value{Float(0.01), Int(math.MinInt64 / 100), Float(0.02)}, 0, true, 2},
		{"int past the top edge, k 2", []Value{Float(0.01), Int(math.MaxInt64/100 + 1), Float(0.02)}, encMixed, false, 0},
		{"int past the bottom edge, k 2", []Value{Float(0.01), Int(math.MinInt64/100 - 1), Float(0.02)}, encMixed, false, 0},
		{"int extremes, k 0", []Value{Float(1), Int(math.MinInt64), Int(math.MaxInt64), Float(-1)}, 0, true, 0},
		{"ints beyond 2^53", []Value{Float(2), Int(1<<53 + 1), Float(3), Int(-(1<<62 + 1))}, 0, true, 0},
		{"k 18, int at the edge", []Value{Float(1e-18), Int(9), Float(2e-18)}, 0, true, 18},
		{"k 18, int past the edge", []Value{Float(1e-18), Int(10), Float(2e-18)}, encMixed, false, 0},
		{"k 22, int 0", []Value{Float(1e-22), Int(0), Float(3e-22)}, encMixedDecimal, true, 22},
		{"k 20, int 1", []Value{Float(1e-20), Int(1)}, encMixed, false, 0},
		{"negative zero float stays a float", []Value{Float(negZero), Int(0), Float(1.5)}, encMixed, false, 0},
		{"negative zero after ints", []Value{Int(0), Int(1), Float(negZero)}, encMixed, false, 0},
		{"nan", []Value{Float(1.5), Int(2), staleNaN}, encMixed, false, 0},
		{"infinity", []Value{Float(1.5), Int(2), Float(math.Inf(-1))}, encMixed, false, 0},
		{"not a decimal", []Value{Float(math.Nextafter(1, 2)), Int(2)}, encMixed, false, 0},
		{"huge float", []Value{Float(1e300), Int(2)}, encMixed, false, 0},
		{"ints only", []Value{Int(1), Int(5), Int(-9)}, encInt, true, 0},
		{"decimals only", []Value{Float(1.5), Float(2.25)}, encDecimal, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts := pointsAt(regular(len(tt.vs), 0, 10000), tt.vs)
			b := checkRoundTrip(t, testBase, pts)
			if got := encoding(b[1]); tt.enc != 0 && got != tt.enc {
				t.Errorf("encoding = %s, want %s", got, tt.enc)
			}
			f, err := appendChunk(nil, testBase, pts, encMixedDecimal)
			if !tt.fits {
				if !errors.Is(err, ErrInvalidPoints) {
					t.Fatalf("forced mixed-decimal: err = %v, want ErrInvalidPoints", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("forced mixed-decimal: %v", err)
			}
			got, err := Decode(nil, f, testBase)
			if err != nil {
				t.Fatalf("forced mixed-decimal: %v (chunk %x)", err, f)
			}
			checkSame(t, got, pts)
			var it Iterator
			if err := it.Reset(f, testBase); err != nil {
				t.Fatal(err)
			}
			if it.scale != pow10[tt.k] {
				t.Errorf("scale = %g, want 1e%d", it.scale, tt.k)
			}
		})
	}
}

// TestMixedDecimalGauge: a two-decimal gauge whose whole values arrive as
// ints is written as mixed-decimal, about as small as the same gauge all
// in floats, and far smaller than mixed.
func TestMixedDecimalGauge(t *testing.T) {
	pts := genGaugeMixed()
	b := checkRoundTrip(t, testBase, pts)
	if got := encoding(b[1]); got != encMixedDecimal {
		t.Fatalf("encoding = %s, want %s", got, encMixedDecimal)
	}
	floats := make([]Point, len(pts))
	for i, p := range pts {
		floats[i] = Point{T: p.T, V: Float(p.V.Float())}
	}
	fb, err := Append(nil, testBase, floats)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := appendChunk(nil, testBase, pts, encMixed)
	if err != nil {
		t.Fatal(err)
	}
	// The kind map of the 5 ints costs 8 bytes: the form, the length and
	// the 5 gaps, one of them two bytes long.
	if len(b) > len(fb)+8 || 5*len(b) > len(mb) {
		t.Errorf("mixed-decimal takes %d bytes; all floats %d, mixed %d", len(b), len(fb), len(mb))
	}
	t.Logf("%d points: mixed-decimal %d bytes (%.3f/point), all floats %s %d, mixed %d",
		len(pts), len(b), float64(len(b))/float64(len(pts)), encoding(fb[1]), len(fb), len(mb))
}

// TestMixedDecimalKindForms: the encoder writes the shortest kind map, and
// each form decodes.
func TestMixedDecimalKindForms(t *testing.T) {
	chunks := sampleChunks(t)
	for name, form := range map[string]uint8{
		"mixed-dec":             kindIntList,
		"mixed-dec, float list": kindFloatList,
		"mixed-dec, bitmap":     kindBitmap,
		"mixed-dec, k 22":       kindIntList,
	} {
		t.Run(name, func(t *testing.T) {
			b := chunks[name]
			if encoding(b[1]) != encMixedDecimal {
				t.Fatalf("encoding = %s, want %s", encoding(b[1]), encMixedDecimal)
			}
			var it Iterator
			if err := it.Reset(b, testBase); err != nil {
				t.Fatal(err)
			}
			if it.kform != form {
				t.Errorf("kind map form = %d, want %d", it.kform, form)
			}
		})
	}
}

// mixedDecChunk builds a mixed-decimal chunk by hand: count points 1 s
// apart from the base, scale k, the kind map form and bytes, and mantissas
// x0, x0+step, x0+2·step, ... (one offset-mode bucket of width 0).
func mixedDecChunk(count int, k, form byte, kmap []byte, x0, step int64) []byte {
	b := []byte{formatVersion, byte(encMixedDecimal)}
	b = binary.AppendUvarint(b, uint64(count))
	b = append(b, descOrder2, 0, 0)   // timestamps: order 2, one bucket of width 0, x0 = 0
	b = binary.AppendUvarint(b, 1000) // x1 - x0 (count ≥ 2)
	b = append(b, 0)                  // no residual bits
	b = append(b, k, form)
	b = binary.AppendUvarint(b, uint64(len(kmap)))
	b = append(b, kmap...)
	b = append(b, descOffset, 0)
	b = binary.AppendVarint(b, step)
	return binary.AppendVarint(b, x0)
}

func TestMixedDecimalCorrupt(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want []Value // nil: corrupt
	}{
		{"int list", mixedDecChunk(4, 2, kindIntList, []byte{1}, 100, 100), []Value{Float(1), Int(2), Float(3), Float(4)}},
		{"float list", mixedDecChunk(4, 1, kindFloatList, []byte{0, 1}, 10, -10), []Value{Float(1), Int(0), Float(-1), Int(-2)}},
		{"bitmap", mixedDecChunk(4, 0, kindBitmap, []byte{0b1001_0000}, -2, 1), []Value{Int(-2), Float(-1), Float(0), Int(1)}},
		{"empty int list", mixedDecChunk(2, 3, kindIntList, nil, 1, 1), []Value{Float(0.001), Float(0.002)}},
		{"k 22, int 0", mixedDecChunk(2, 22, kindIntList, []byte{1}, 1, -1), []Value{Float(1e-22), Int(0)}},
		{"bad scale", mixedDecChunk(2, 23, kindIntList, []byte{1}, 1, 1), nil},
		{"bad form", mixedDecChunk(2, 0, 3, []byte{1}, 1, 1), nil},
		{"kind map length missing", mixedDecChunk(2, 0, kindIntList, nil, 1, 1)[:11], nil},
		{"kind map past the end", func() []byte {
			b := mixedDecChunk(2, 0, kindIntList, nil, 1, 1)
			b[11] = 50
			return b
		}(), nil},
		{"huge kind map length", func() []byte {
			b := mixedDecChunk(2, 0, kindIntList, nil, 1, 1)
			return append(b[:11:11], append(binary.AppendUvarint(nil, 1<<62), b[12:]...)...)
		}(), nil},
		{"bitmap too short", mixedDecChunk(9, 0, kindBitmap, []byte{0xff}, 1, 1), nil},
		{"bitmap too long", mixedDecChunk(4, 0, kindBitmap, []byte{0xf0, 0}, 1, 1), nil},
		{"bitmap padding", mixedDecChunk(4, 0, kindBitmap, []byte{0b1001_0001}, 1, 1), nil},
		{"first listed past the end", mixedDecChunk(4, 0, kindIntList, []byte{4}, 1, 1), nil},
		{"next listed past the end", mixedDecChunk(4, 0, kindIntList, []byte{1, 2}, 1, 1), nil},
		{"listed past the end in a later batch", mixedDecChunk(100, 0, kindFloatList, []byte{70, 29}, 1, 1), nil},
		{"huge gap", mixedDecChunk(4, 0, kindIntList, binary.AppendUvarint(nil, math.MaxUint64), 1, 1), nil},
		{"truncated gap", mixedDecChunk(4, 0, kindIntList, []byte{0x80}, 1, 1), nil},
		{"truncated gap after one", mixedDecChunk(100, 0, kindIntList, []byte{80, 0x80}, 1, 1), nil},
		{"int not a multiple of 10^k", mixedDecChunk(2, 2, kindIntList, []byte{0}, 150, 1), nil},
		{"int not 0 beyond 10^18", mixedDecChunk(2, 19, kindIntList, []byte{1}, 1, 1), nil},
		{"int mantissa in a later batch", mixedDecChunk(100, 1, kindIntList, []byte{90}, 11, 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := Decode(nil, tt.b, testBase)
			if tt.want == nil {
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > len(tt.b) {
					t.Fatalf("err = %v, want a *CorruptionError within the chunk (decoded %d points)", err, len(pts))
				}
				t.Log(err)
				var it Iterator
				if it.Reset(tt.b, testBase) == nil {
					for it.Next() {
					}
					if !errors.Is(it.Err(), ErrCorrupt) {
						t.Fatalf("iterator: err = %v, want ErrCorrupt", it.Err())
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			checkSame(t, pts, pointsAt(regular(len(tt.want), 0, 1000), tt.want))
		})
	}
}

// TestFloatsToInts: where floatsToInts turns a float back into an int, the
// int is the mantissa's, exactly; where it cannot prove that (a mantissa
// of 2^50 or more, one not a multiple of 10^k), it reports false.
func TestFloatsToInts(t *testing.T) {
	r := rng(17)
	for k := 0; k <= maxScale; k++ {
		scale := pow10[k]
		var ip int64
		if k < len(ipow10) {
			ip = ipow10[k]
		}
		for range 2000 {
			m := int64(r.intn(1 << 30))
			switch r.intn(4) {
			case 0:
				m = int64(r.next() >> uint(1+r.intn(62)))
			case 1:
				if ip != 0 {
					m = m / ip * ip
				}
			}
			if r.intn(2) == 0 {
				m = -m
			}
			vs := []int64{int64(math.Float64bits(float64(m) / scale))}
			ok := floatsToInts(vs, 1, scale, ip)
			want := []int64{m}
			wantOK := (&Iterator{scale: scale, iscale: ip}).mixedValues(want, 1)
			if ok && (!wantOK || vs[0] != want[0]) {
				t.Fatalf("k=%d m=%d: floatsToInts gave %d, mixedValues %d (ok %v)", k, m, vs[0], want[0], wantOK)
			}
			if !ok && wantOK && m > -1<<49 && m < 1<<49 {
				t.Fatalf("k=%d m=%d: floatsToInts refused a small mantissa mixedValues takes", k, m)
			}
		}
	}
}

// TestMixedDecimalFewLargeInts: a mixed-decimal chunk whose few ints have
// mantissas past 2^50 decodes exactly (the batch is decoded again the long
// way).
func TestMixedDecimalFewLargeInts(t *testing.T) {
	pts := make([]Point, 200)
	for i := range pts {
		pts[i] = Point{T: testBase + int64(i)*1000, V: Float(float64(i) / 4)}
		if i%50 == 7 {
			pts[i].V = Int(1<<52 + int64(i))
		}
	}
	b, err := appendChunk(nil, testBase, pts, encMixedDecimal)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(nil, b, testBase)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, got, pts)
}
