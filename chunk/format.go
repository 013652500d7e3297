package chunk

import "math/bits"

// The format; docs/format/chunk.md has the byte diagram.

const (
	// MaxPoints is the most points one chunk may hold: a hard bound of the
	// format, checked by the encoder and the decoder.
	MaxPoints = 65535

	// DefaultMaxPoints is the default chunk-max-points: the head seals a
	// series' open chunk when it holds this many points (or its hour ends).
	// Chosen by BenchmarkChunkSize; docs/format/chunk.md says why.
	DefaultMaxPoints = 480

	// HourMillis is the span of one row: a chunk's timestamps lie in
	// [base, base+HourMillis).
	HourMillis = 3600 * 1000

	formatVersion = 1
)

// encoding names how a chunk's values are stored; it is the header's
// second byte. The numbers are part of the format: never renumber them.
type encoding uint8

const (
	encConstInt     encoding = 1 // one int value for every point: zig-zag varint
	encConstFloat   encoding = 2 // one float value for every point: 8 bytes
	encConstDecimal encoding = 3 // one float m/10^k for every point: k, then m as a zig-zag varint
	encInt          encoding = 4 // ints: a residual sequence (delta or delta of delta)
	encDecimal      encoding = 5 // floats m/10^k: k, then m as a residual sequence
	encXOR          encoding = 6 // floats: Gorilla XOR
	encMixed        encoding = 7 // ints and floats: kind bit + Gorilla XOR of the raw bits
	encMixedDecimal encoding = 8 // ints and floats m/10^k: k, a kind map, then m as a residual sequence
	encLast                  = encMixedDecimal
)

func (e encoding) String() string {
	switch e {
	case encConstInt:
		return "const-int"
	case encConstFloat:
		return "const-float"
	case encConstDecimal:
		return "const-decimal"
	case encInt:
		return "int"
	case encDecimal:
		return "decimal"
	case encXOR:
		return "xor"
	case encMixed:
		return "mixed"
	case encMixedDecimal:
		return "mixed-decimal"
	}
	return "unknown"
}

// maxScale is the largest decimal scale k: 10^k is exact in a float64 up to 10^22.
const maxScale = 22

var pow10 = [maxScale + 1]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// ipow10 holds 10^k as an int64 where it fits: an int v of a mixed-decimal
// chunk is stored as the mantissa v·10^k. Beyond k = 18 only v = 0 fits.
var ipow10 = [19]int64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
}

// The kind map of a mixed-decimal chunk says which points are ints. Its
// form byte names one of three layouts; the encoder writes the shortest.
const (
	kindBitmap    = 0 // one bit per point, 1 for an int, most significant first
	kindIntList   = 1 // the points listed are ints, the others floats
	kindFloatList = 2 // the points listed are floats, the others ints
)

// A residual sequence stores integers x0, x1, ... as x0 (a varint), for
// order 2 also x1-x0 (a varint), then one residual per remaining integer:
// the delta (order 1) or the delta of delta (order 2). Each residual r is
// mapped to an unsigned u, either zig-zag (small magnitudes of either sign
// give small u) or, in offset mode, u = r - offset for a per-sequence
// offset, the smallest residual (frame of reference: a counter's deltas
// 50..150 become 0..100). u is written as a prefix code naming one of up to
// four bit widths (buckets) followed by that many bits. The encoder picks
// the order, the mapping and the widths for each chunk to make the
// sequence as short as possible.
//
// The descriptor byte: bits 0-1 hold the bucket count minus one, bit 2 the
// order minus one, bit 3 the offset mode; bits 4-7 are zero. Then one byte
// per bucket: its width, 0..64, strictly increasing; then in offset mode
// the offset, a zig-zag varint.
const (
	descBuckets = 0x03
	descOrder2  = 0x04
	descOffset  = 0x08
	descMask    = descBuckets | descOrder2 | descOffset
)

// Prefix codes of the buckets, by bucket count, most significant bit first:
// 1 bucket: no prefix; 2: 0 1; 3: 0 10 11; 4: 0 10 110 111.
var (
	prefixLen  = [5][4]uint8{1: {0}, 2: {1, 1}, 3: {1, 2, 2}, 4: {1, 2, 3, 3}}
	prefixBits = [5][4]uint8{1: {0}, 2: {0, 1}, 3: {0, 2, 3}, 4: {0, 2, 6, 7}}

	// bucketOfPrefix names the bucket whose code starts the next three bits.
	bucketOfPrefix = [5][8]uint8{
		1: {0, 0, 0, 0, 0, 0, 0, 0},
		2: {0, 0, 0, 0, 1, 1, 1, 1},
		3: {0, 0, 0, 0, 1, 1, 2, 2},
		4: {0, 0, 0, 0, 1, 1, 2, 3},
	}
)

func zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

// width is the number of bits a zig-zag encoded residual needs.
func width(u uint64) uint8 { return uint8(bits.Len64(u)) }
