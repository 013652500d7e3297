package chunk

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

const testBase = 1704067200000 // 2024-01-01T00:00:00Z

// rng is splitmix64: a tiny generator whose output never changes, so the
// test data and the fixtures built from it stay the same across Go releases.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a number in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func pointsAt(ts []int64, vs []Value) []Point {
	pts := make([]Point, len(ts))
	for i := range ts {
		pts[i] = Point{T: ts[i], V: vs[i]}
	}
	return pts
}

// regular returns n timestamps step ms apart from base+first.
func regular(n int, first, step int64) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = testBase + first + int64(i)*step
	}
	return ts
}

func floats(fs ...float64) []Value {
	vs := make([]Value, len(fs))
	for i, f := range fs {
		vs[i] = Float(f)
	}
	return vs
}

func ints(is ...int64) []Value {
	vs := make([]Value, len(is))
	for i, v := range is {
		vs[i] = Int(v)
	}
	return vs
}

func repeat(v Value, n int) []Value {
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = v
	}
	return vs
}

var staleNaN = FloatBits(0x7ff0000000000002) // Prometheus' staleness marker

// checkRoundTrip encodes pts, decodes them with Decode and with an
// Iterator, and fails unless both give back every point bit for bit. It
// returns the chunk.
func checkRoundTrip(t *testing.T, base int64, pts []Point) []byte {
	t.Helper()
	b, err := Append(nil, base, pts)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	got, err := Decode(nil, b, base)
	if err != nil {
		t.Fatalf("Decode: %v (chunk %x)", err, b)
	}
	checkSame(t, got, pts)

	var it Iterator
	if err := it.Reset(b, base); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if it.Len() != len(pts) {
		t.Fatalf("Len = %d, want %d", it.Len(), len(pts))
	}
	n := 0
	for it.Next() {
		ts, v := it.At()
		if n < len(pts) && (ts != pts[n].T || !v.Identical(pts[n].V)) {
			t.Fatalf("iterator point %d = %d %v (bits %#x int %v), want %d %v (bits %#x int %v)",
				n, ts, v, v.Bits(), v.IsInt(), pts[n].T, pts[n].V, pts[n].V.Bits(), pts[n].V.IsInt())
		}
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterator: %v", err)
	}
	if n != len(pts) {
		t.Fatalf("iterator gave %d points, want %d", n, len(pts))
	}
	if it.Next() {
		t.Fatalf("Next after the end returned true")
	}
	return b
}

func checkSame(t *testing.T, got, want []Point) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d points, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].T != want[i].T || !got[i].V.Identical(want[i].V) {
			t.Fatalf("point %d = %d %v (bits %#x int %v), want %d %v (bits %#x int %v)", i,
				got[i].T, got[i].V, got[i].V.Bits(), got[i].V.IsInt(),
				want[i].T, want[i].V, want[i].V.Bits(), want[i].V.IsInt())
		}
	}
}

func TestRoundTrip(t *testing.T) {
	r := rng(1)
	irregular := func(n int) []int64 {
		ts := make([]int64, n)
		cur := int64(testBase + r.intn(1000))
		for i := range ts {
			ts[i] = cur
			cur += 1 + int64(r.intn(5000))
		}
		return ts
	}
	randInts := func(n int) []Value {
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = Int(int64(r.next()))
		}
		return vs
	}
	randFloats := func(n int) []Value {
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = FloatBits(r.next())
		}
		return vs
	}
	walk := func(n, scale int) []Value {
		vs := make([]Value, n)
		m := int64(5000)
		for i := range vs {
			m += int64(r.intn(41) - 20)
			vs[i] = Float(float64(m) / pow10[scale])
		}
		return vs
	}
	maxTs := make([]int64, MaxPoints)
	for i := range maxTs {
		maxTs[i] = testBase + int64(i)*(HourMillis/MaxPoints)
	}
	maxTs[MaxPoints-1] = testBase + HourMillis - 1

	tests := []struct {
		name string
		pts  []Point
		enc  encoding // 0: do not check
	}{
		{"single int", pointsAt(regular(1, 0, 0), ints(42)), encConstInt},
		{"single float", pointsAt(regular(1, 0, 0), floats(0.5)), encConstDecimal},
		{"single at end of hour", pointsAt(regular(1, HourMillis-1, 0), floats(math.Pi)), encConstFloat},
		{"first at base and last at base+3599999", pointsAt([]int64{testBase, testBase + HourMillis - 1}, ints(1, 2)), encInt},
		{"two points", pointsAt(regular(2, 5, 10), floats(1.5, 2.25)), 0},
		{"nan payloads", pointsAt(regular(6, 0, 15000), []Value{
			Float(1), staleNaN, Float(math.NaN()), FloatBits(0xfff8000000000001), FloatBits(0x7ff0000000000001), Float(2),
		}), encXOR},
		{"infinities and zeros", pointsAt(regular(6, 0, 1000), floats(math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0, math.Inf(1))), encXOR},
		{"negative zero only", pointsAt(regular(3, 0, 1000), floats(math.Copysign(0, -1), 1, math.Copysign(0, -1))), encXOR},
		{"int extremes", pointsAt(regular(7, 0, 1), ints(math.MinInt64, math.MaxInt64, 0, math.MinInt64, -1, math.MaxInt64, math.MinInt64)), encInt},
		{"beyond 2^53", pointsAt(regular(4, 0, 1), ints(1<<53+1, 1<<53+3, 1<<62+1, -(1<<53+1))), encInt},
		{"const int", pointsAt(regular(100, 0, 10000), repeat(Int(7), 100)), encConstInt},
		{"const max int", pointsAt(regular(3, 0, 10000), repeat(Int(math.MaxInt64), 3)), encConstInt},
		{"const float", pointsAt(regular(100, 0, 10000), repeat(Float(1), 100)), encConstDecimal},
		{"const decimal", pointsAt(regular(100, 0, 10000), repeat(Float(-123.456), 100)), encConstDecimal},
		{"const long decimal", pointsAt(regular(3, 0, 10000), repeat(Float(123456789.0123456), 3)), encConstFloat},
		{"const pi", pointsAt(regular(100, 0, 10000), repeat(Float(math.Pi), 100)), encConstFloat},
		{"const negative zero", pointsAt(regular(10, 0, 10000), repeat(Float(math.Copysign(0, -1)), 10)), encConstFloat},
		{"const nan", pointsAt(regular(10, 0, 10000), repeat(staleNaN, 10)), encConstFloat},
		{"counter", pointsAt(regular(360, 0, 10000), func() []Value {
			vs := make([]Value, 360)
			c := int64(1 << 40)
			for i := range vs {
				c += int64(r.intn(200))
				vs[i] = Int(c)
			}
			return vs
		}()), encInt},
		{"decimal gauge", pointsAt(regular(360, 0, 10000), walk(360, 2)), encDecimal},
		{"decimal gauge, negative", pointsAt(regular(50, 0, 10000), floats(-1.5, -1.25, -0.75, 0, 0.5, -3.125, 1e-3, -12.34, 99.99, 0.1, 0.2, 0.3, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44)), encDecimal},
		{"whole floats", pointsAt(regular(5, 0, 10000), floats(1, 2, 3, 5, 8)), encDecimal},
		{"tiny decimals", pointsAt(regular(3, 0, 10000), floats(1e-20, 2e-20, 3e-22)), encDecimal},
		{"huge floats", pointsAt(regular(3, 0, 10000), floats(1e300, 2e300, -1e300)), encXOR},
		{"random floats", pointsAt(irregular(500), randFloats(500)), encXOR},
		{"random ints", pointsAt(irregular(500), randInts(500)), encInt},
		{"mixed", pointsAt(regular(6, 0, 1000), []Value{Int(1), Float(1.5), Int(math.MaxInt64), staleNaN, Int(-3), Float(math.Copysign(0, -1))}), encMixed},
		{"mixed starting with float", pointsAt(regular(3, 0, 1000), []Value{Float(math.Nextafter(1, 2)), Int(2), Float(2)}), encMixed},
		{"mixed decimal", pointsAt(regular(3, 0, 1000), []Value{Float(2), Int(2), Float(2.5)}), encMixedDecimal},
		{"ms irregular", pointsAt(irregular(700), walk(700, 3)), encDecimal},
		{"jittered scrape", pointsAt(func() []int64 {
			ts := make([]int64, 240)
			for i := range ts {
				ts[i] = testBase + int64(i)*15000 + int64(r.intn(20))
			}
			return ts
		}(), walk(240, 1)), encDecimal},
		{"max points", pointsAt(maxTs, randInts(MaxPoints)), encInt},
		{"max points const", pointsAt(maxTs, repeat(Float(0), MaxPoints)), encConstDecimal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := checkRoundTrip(t, testBase, tt.pts)
			if got := encoding(b[1]); tt.enc != 0 && got != tt.enc {
				t.Errorf("encoding = %s, want %s", got, tt.enc)
			}
		})
	}
}

// TestEncodings forces every encoding that fits onto the same points.
func TestEncodings(t *testing.T) {
	gauge := pointsAt(regular(6, 0, 10000), floats(1.25, 1.5, 1.5, 3, 100.01, -2))
	tests := []struct {
		name string
		pts  []Point
		enc  encoding
	}{
		{"xor on decimals", gauge, encXOR},
		{"mixed on floats", gauge, encMixed},
		{"decimal", gauge, encDecimal},
		{"mixed on ints", pointsAt(regular(3, 0, 1), ints(1, 2, 3)), encMixed},
		{"int on const", pointsAt(regular(3, 0, 1), ints(5, 5, 5)), encInt},
		{"decimal on const", pointsAt(regular(3, 0, 1), floats(5, 5, 5)), encDecimal},
		{"mixed-decimal on floats", gauge, encMixedDecimal},
		{"mixed-decimal on ints", pointsAt(regular(3, 0, 1), ints(math.MinInt64, 0, math.MaxInt64)), encMixedDecimal},
		{"mixed-decimal on const", pointsAt(regular(3, 0, 1), floats(5, 5, 5)), encMixedDecimal},
		{"mixed-decimal on mixed", pointsAt(regular(4, 0, 1), []Value{Int(-7), Float(-0.5), Int(1 << 59), Float(1e14)}), encMixedDecimal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := appendChunk(nil, testBase, tt.pts, tt.enc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(nil, b, testBase)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, got, tt.pts)
		})
	}
}

// TestChoosesSmallest: the encoding Append picks is never longer than any
// other that fits the points.
func TestChoosesSmallest(t *testing.T) {
	r := rng(3)
	sets := map[string][]Point{
		"ints alternating sign bit": pointsAt(regular(50, 0, 1000), func() []Value {
			vs := make([]Value, 50)
			for i := range vs {
				vs[i] = Int(int64(i%2) << 63)
			}
			return vs
		}()),
		"ints flipping low bits": pointsAt(regular(50, 0, 1000), func() []Value {
			vs := make([]Value, 50)
			for i := range vs {
				vs[i] = Int(int64(r.next()>>60) ^ math.MinInt64>>(i%2))
			}
			return vs
		}()),
		"long decimals": pointsAt(regular(50, 0, 1000), func() []Value {
			vs := make([]Value, 50)
			for i := range vs {
				vs[i] = Float(float64(r.next()>>12) / 1e15)
			}
			return vs
		}()),
		"decimals and a NaN": pointsAt(regular(4, 0, 1000), floats(1.5, math.NaN(), 2.5, 3.5)),
		"ints and floats alternating": pointsAt(regular(50, 0, 1000), func() []Value {
			vs := make([]Value, 50)
			for i := range vs {
				vs[i] = Float(float64(i) + 0.5)
				if i%2 == 1 {
					vs[i] = Int(int64(i))
				}
			}
			return vs
		}()),
		"ints with rare decimals": pointsAt(regular(50, 0, 1000), func() []Value {
			vs := make([]Value, 50)
			for i := range vs {
				vs[i] = Int(int64(r.intn(100)))
				if i%17 == 3 {
					vs[i] = Float(float64(r.intn(10000)) / 1000)
				}
			}
			return vs
		}()),
		"huge ints and decimals": pointsAt(regular(20, 0, 1000), func() []Value {
			vs := make([]Value, 20)
			for i := range vs {
				vs[i] = Int(int64(r.next()))
				if i%3 == 0 {
					vs[i] = Float(float64(i))
				}
			}
			return vs
		}()),
	}
	for _, fx := range fixtures {
		sets[fx.name] = fx.gen()
	}
	for _, d := range benchData {
		sets[d.name] = d.pts
	}
	for name, pts := range sets {
		t.Run(name, func(t *testing.T) {
			chosen, err := Append(nil, testBase, pts)
			if err != nil {
				t.Fatal(err)
			}
			for enc := encConstInt; enc <= encLast; enc++ {
				b, err := appendChunk(nil, testBase, pts, enc)
				if err != nil {
					continue // does not fit
				}
				if len(b) < len(chosen) {
					t.Errorf("%s takes %d bytes, less than the %d of the chosen %s", enc, len(b), len(chosen), encoding(chosen[1]))
				}
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	tests := []struct {
		name string
		base int64
		pts  []Point
	}{
		{"no points", testBase, nil},
		{"too many points", testBase, make([]Point, MaxPoints+1)},
		{"base not an hour", testBase + 1, pointsAt(regular(1, 1, 0), ints(1))},
		{"base overflows", math.MaxInt64 - math.MaxInt64%HourMillis, []Point{{T: math.MaxInt64, V: Int(1)}}},
		{"before base", testBase, []Point{{T: testBase - 1, V: Int(1)}}},
		{"at end of hour", testBase, []Point{{T: testBase + HourMillis, V: Int(1)}}},
		{"equal timestamps", testBase, pointsAt([]int64{testBase, testBase}, ints(1, 2))},
		{"decreasing timestamps", testBase, pointsAt([]int64{testBase + 5, testBase + 4}, ints(1, 2))},
		{"late point after the hour", testBase, pointsAt([]int64{testBase, testBase + HourMillis + 5}, ints(1, 2))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := Append(dst, tt.base, tt.pts)
			if !errors.Is(err, ErrInvalidPoints) {
				t.Fatalf("err = %v, want ErrInvalidPoints", err)
			}
			if string(got) != "keep" {
				t.Fatalf("dst changed to %q", got)
			}
		})
	}
}

func TestAppendAppends(t *testing.T) {
	pts := pointsAt(regular(3, 0, 10000), floats(1.5, 2.5, 3.5))
	b, err := Append([]byte("prefix"), testBase, pts)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "prefix" {
		t.Fatalf("prefix lost: %q", b)
	}
	got, err := Decode([]Point{{T: 1}}, b[6:], testBase)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, got[1:], pts)
	if got[0].T != 1 {
		t.Fatalf("Decode overwrote dst")
	}
}

func TestSeekTo(t *testing.T) {
	pts := pointsAt(regular(10, 1000, 10000), ints(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)) // T = base+1000, +11000, ...
	b, err := Append(nil, testBase, pts)
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		next bool  // call Next instead of SeekTo
		seek int64 // offset from base
		ok   bool
		want int64 // value at the point
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"before the first", []step{{seek: -5, ok: true, want: 0}}},
		{"at the first", []step{{seek: 1000, ok: true, want: 0}}},
		{"exact", []step{{seek: 31000, ok: true, want: 3}}},
		{"between", []step{{seek: 31001, ok: true, want: 4}}},
		{"at the last", []step{{seek: 91000, ok: true, want: 9}}},
		{"after the last", []step{{seek: 91001}, {next: true}}},
		{"past the hour", []step{{seek: HourMillis + 1}, {seek: 0}}},
		{"never backward", []step{{seek: 51000, ok: true, want: 5}, {seek: 0, ok: true, want: 5}, {next: true, ok: true, want: 6}}},
		{"same point twice", []step{{seek: 41000, ok: true, want: 4}, {seek: 41000, ok: true, want: 4}}},
		{"after next", []step{{next: true, ok: true, want: 0}, {next: true, ok: true, want: 1}, {seek: 11000, ok: true, want: 1}, {seek: 11001, ok: true, want: 2}}},
		{"after the end", []step{{seek: 91000, ok: true, want: 9}, {next: true}, {seek: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var it Iterator
			if err := it.Reset(b, testBase); err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				var ok bool
				if s.next {
					ok = it.Next()
				} else {
					ok = it.SeekTo(testBase + s.seek)
				}
				if ok != s.ok {
					t.Fatalf("step %d: got %v, want %v", i, ok, s.ok)
				}
				if ok {
					ts, v := it.At()
					if v.Int() != s.want || ts != pts[s.want].T {
						t.Fatalf("step %d: at %d %v, want point %d", i, ts, v, s.want)
					}
				}
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		})
	}
}

func TestIteratorZeroValue(t *testing.T) {
	var it Iterator
	if it.Next() || it.SeekTo(0) || it.Len() != 0 || it.Err() != nil {
		t.Fatal("zero Iterator is not empty")
	}
}

// sampleChunks returns one chunk of every encoding.
func sampleChunks(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, pts := range map[string][]Point{
		"const-int":   pointsAt(regular(20, 0, 10000), repeat(Int(-7), 20)),
		"const-float": pointsAt(regular(20, 0, 10000), repeat(staleNaN, 20)),
		"const-dec":   pointsAt(regular(20, 0, 10000), repeat(Float(2.5), 20)),
		"int":         pointsAt(regular(20, 3, 10007), ints(1, 5, 9, 14, 20, 27, 35, 44, 54, 65, 77, 90, 104, 119, 135, 152, 170, 189, 209, 230)),
		"int order 1": pointsAt([]int64{testBase + 1, testBase + 2}, ints(math.MaxInt64, math.MinInt64)),
		"decimal":     pointsAt(regular(6, 0, 15000), floats(1.25, 1.5, 1.5, 3, 100.01, -2)),
		"xor":         pointsAt(regular(6, 0, 15000), floats(1.25, math.Pi, math.Inf(1), 3, 100.01, -2)),
		"mixed":       pointsAt(regular(4, 0, 15000), []Value{Int(1), Float(math.E), Int(3), staleNaN}),
		"mixed-dec": pointsAt(regular(20, 0, 15000), []Value{Float(1.25), Float(1.5), Int(2), Float(1.75), Float(2.5), Float(-3), Float(-4.25),
			Float(-3.75), Float(-3.5), Float(-3.25), Float(-3.5), Float(-4.5), Int(-4), Float(-3.75), Float(-3.75), Float(-3), Float(-2.5), Float(-2.25), Float(-2), Float(-1.75)}),
		"mixed-dec, float list": pointsAt(regular(20, 0, 15000), []Value{Int(10), Int(11), Float(11.5), Int(12), Int(13), Int(14), Int(15), Int(16), Int(17), Int(18),
			Int(19), Int(20), Int(20), Int(20), Int(19), Int(18), Int(17), Int(16), Int(15), Float(1e-3)}),
		"mixed-dec, bitmap": pointsAt(regular(70, 0, 15000), func() []Value {
			vs := make([]Value, 70)
			for i := range vs {
				vs[i] = Float(float64(i) / 10)
				if i%2 == 0 {
					vs[i] = Int(int64(i))
				}
			}
			return vs
		}()),
		"mixed-dec, k 22": pointsAt(regular(3, 0, 15000), []Value{Float(1e-22), Int(0), Float(3e-22)}),
		"single":          pointsAt(regular(1, 77, 0), ints(1)),
	} {
		b, err := Append(nil, testBase, pts)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

func TestTruncated(t *testing.T) {
	for name, b := range sampleChunks(t) {
		t.Run(name, func(t *testing.T) {
			for n := range len(b) {
				_, err := Decode(nil, b[:n], testBase)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("prefix of %d of %d bytes: err = %v, want ErrCorrupt", n, len(b), err)
				}
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > n {
					t.Fatalf("prefix of %d bytes: bad corruption error %#v", n, err)
				}
			}
			if _, err := Decode(nil, append(b[:len(b):len(b)], 0), testBase); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("trailing byte: err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestCorruptHeader(t *testing.T) {
	good := sampleChunks(t)["int"]
	mod := func(i int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[i] = v
		return b
	}
	tests := []struct {
		name string
		b    []byte
		base int64
	}{
		{"empty", nil, testBase},
		{"bad version", mod(0, 9), testBase},
		{"encoding zero", mod(1, 0), testBase},
		{"unknown encoding", mod(1, 200), testBase},
		{"zero count", mod(2, 0), testBase},
		{"count too big", []byte{1, 3, 0x80, 0x80, 0x04}, testBase},
		{"bad descriptor", mod(3, 0xf0), testBase},
		{"base not an hour", good, testBase + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var it Iterator
			err := it.Reset(tt.b, tt.base)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if it.Next() || it.Err() != err {
				t.Fatalf("iterator not stopped by the error")
			}
		})
	}
	t.Run("reset clears the error", func(t *testing.T) {
		var it Iterator
		_ = it.Reset(nil, testBase)
		if err := it.Reset(good, testBase); err != nil || it.Err() != nil {
			t.Fatalf("Reset = %v, Err = %v", err, it.Err())
		}
	})
}

// constChunk builds by hand a const-int chunk whose timestamp sequence has
// one bucket of width 0 (every residual the same), for timestamp checks no
// encoder would ever need.
func constChunk(count int, desc byte, offset int64, x0, d1 uint64) []byte {
	b := []byte{formatVersion, byte(encConstInt)}
	b = binary.AppendUvarint(b, uint64(count))
	b = append(b, desc, 0)
	if desc&descOffset != 0 {
		b = binary.AppendVarint(b, offset)
	}
	b = binary.AppendUvarint(b, x0)
	if desc&descOrder2 != 0 && count >= 2 {
		b = binary.AppendUvarint(b, d1)
	}
	b = append(b, 0)                 // no residual bits
	return binary.AppendVarint(b, 7) // the value
}

func TestDecodeChecksTimestamps(t *testing.T) {
	const hour = HourMillis
	tests := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"regular", constChunk(360, descOrder2, 0, 0, 10000), true},
		{"regular, offset mode", constChunk(360, descOffset, 10000, 5, 0), true},
		{"last at the end of the hour", constChunk(2, descOrder2, 0, hour-2, 1), true},
		{"single at the end of the hour", constChunk(1, 0, 0, hour-1, 0), true},
		{"first outside the hour", constChunk(1, 0, 0, hour, 0), false},
		{"first far outside", constChunk(1, 0, 0, 1<<63, 0), false},
		{"zero step", constChunk(3, descOrder2, 0, 0, 0), false},
		{"zero step, order 1", constChunk(3, 0, 0, 0, 0), false},
		{"zero offset", constChunk(3, descOffset, 0, 0, 0), false},
		{"negative step", constChunk(3, descOffset, -5, 100, 0), false},
		{"step past the hour", constChunk(2, descOrder2, 0, 0, hour), false},
		{"step wrapping around", constChunk(3, descOrder2, 0, 10, 1<<63+1), false},
		{"runs out of the hour", constChunk(400, descOrder2, 0, 0, 10000), false},
		{"runs out in a later batch", constChunk(1000, descOrder2, 0, 0, 3700), false},
		{"shrinking steps", constChunk(100, descOrder2|descOffset, -1, 0, 50), false},
		{"growing steps", constChunk(100, descOrder2|descOffset, 1, 0, 50), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := Decode(nil, tt.b, testBase)
			if tt.ok {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				for i := range pts {
					if pts[i].T < testBase || pts[i].T >= testBase+hour || i > 0 && pts[i].T <= pts[i-1].T {
						t.Fatalf("bad timestamps decoded: point %d at %d", i, pts[i].T)
					}
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt (decoded %d points)", err, len(pts))
			}
		})
	}
}

func TestNoAllocs(t *testing.T) {
	r := rng(7)
	pts := make([]Point, 360)
	m := int64(5000)
	for i := range pts {
		m += int64(r.intn(41) - 20)
		pts[i] = Point{T: testBase + int64(i)*10000, V: Float(float64(m) / 100)}
	}
	mixed := append([]Point(nil), pts...)
	mixed[7].V = staleNaN
	mixed[8].V = Int(3)
	mixedDec := append([]Point(nil), pts...)
	mixedDec[7].V = Int(3)
	bitmap := append([]Point(nil), pts...)
	for i := 0; i < len(bitmap); i += 2 {
		bitmap[i].V = Int(int64(i))
	}
	for name, pts := range map[string][]Point{"decimal": pts, "mixed": mixed, "mixed-decimal": mixedDec, "mixed-decimal bitmap": bitmap} {
		t.Run(name, func(t *testing.T) {
			b, err := Append(nil, testBase, pts)
			if err != nil {
				t.Fatal(err)
			}
			var it Iterator
			if a := testing.AllocsPerRun(100, func() {
				if it.Reset(b, testBase) != nil {
					t.Fatal("reset")
				}
				for it.Next() {
					_, _ = it.At()
				}
				it.Reset(b, testBase)
				it.SeekTo(testBase + 1800000)
			}); a != 0 {
				t.Errorf("Reset+Next+Seek: %v allocs per run, want 0", a)
			}
			dst := make([]Point, 0, len(pts))
			if a := testing.AllocsPerRun(100, func() {
				if _, err := Decode(dst[:0], b, testBase); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("Decode: %v allocs per run, want 0", a)
			}
			out := make([]byte, 0, 2*len(b)+64)
			if a := testing.AllocsPerRun(100, func() {
				if _, err := Append(out[:0], testBase, pts); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("Append: %v allocs per run, want 0", a)
			}
		})
	}
}

func TestPlanBuckets(t *testing.T) {
	tests := []struct {
		name   string
		counts map[int]uint32
		n      uint8
		widths []uint8
		bits   uint64
	}{
		{"empty", nil, 1, []uint8{0}, 0},
		{"all zero", map[int]uint32{0: 100}, 1, []uint8{0}, 0},
		{"one width", map[int]uint32{5: 10, 3: 10}, 1, []uint8{5}, 100},
		{"mostly zero", map[int]uint32{0: 90, 7: 10}, 2, []uint8{0, 7}, 90 + 80},
		{"three", map[int]uint32{0: 100, 4: 50, 20: 2}, 3, []uint8{0, 4, 20}, 100 + 50*6 + 2*22},
		{"with 64", map[int]uint32{0: 100, 64: 1}, 2, []uint8{0, 64}, 100 + 65},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			for w, c := range tt.counts {
				h[w] = c
			}
			p := planBuckets(&h)
			if p.n != tt.n || string(p.widths[:p.n]) != string(tt.widths) || p.bits != tt.bits {
				t.Fatalf("plan = n %d widths %v bits %d, want n %d widths %v bits %d", p.n, p.widths[:p.n], p.bits, tt.n, tt.widths, tt.bits)
			}
		})
	}
}
