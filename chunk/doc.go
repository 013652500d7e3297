// Package chunk is the cell codec: it turns the points of one series within
// one hour into the bytes of one cell value (a chunk), and back. It knows
// bytes and points, nothing about rows, files or the network. The byte
// layout is in docs/format/chunk.md.
//
// # The idea
//
// A chunk is a small header (format version, value encoding, point count),
// a timestamp section and a value section.
//
// Timestamps are offsets from the row's base hour, stored as a first
// offset, a first delta and then delta-of-delta residuals (or plain delta
// residuals, when the encoder finds them shorter). Every residual is mapped
// to an unsigned number, zig-zag or, for one-sided residuals such as a
// counter's increments, minus the chunk's smallest residual (frame of
// reference), and written as a short prefix code naming one of up to four
// bit widths, followed by that many bits. Unlike Gorilla's fixed buckets,
// the widths are chosen per chunk, by an exact dynamic program over the
// histogram of residual widths. A regularly scraped series has only zero
// residuals: one bucket of width zero, and its timestamps cost no bits per
// point at all.
//
// Values are stored in whichever of these encodings is smallest for the
// chunk:
//
//   - const: every point has the same value (kind and bits); it is stored
//     once, as an int, a float, or a short decimal (the float 1 of
//     Prometheus' up takes two bytes), and decoding costs nothing per point.
//   - int: every value is an integer; a residual sequence like the
//     timestamps', over the int64 values with wrapping arithmetic, so every
//     int64 (MinInt64, MaxInt64, beyond 2^53) comes back exact.
//   - decimal: every value is a float that is an integer m divided by 10^k
//     for one scale k of the chunk, bit for bit: float64(m)/10^k reproduces
//     the value's exact bits. Most real gauges are short decimals (12.34) or
//     whole numbers held in floats (Prometheus counters); their mantissas
//     compress like integers, several times better than their XOR bits.
//   - xor: Gorilla's XOR encoding (Pelkonen et al., VLDB 2015) as
//     Prometheus writes it, for any floats: NaN payloads, ±Inf and -0 keep
//     their bits.
//   - mixed-decimal: ints and floats in one chunk where every float is a
//     decimal m/10^k at one scale k and every int v has v·10^k within an
//     int64: a kind map (the ints or the floats listed, or a bitmap) and one
//     residual sequence over every point's mantissa. A two-decimal gauge sent
//     as OpenTSDB text, where a whole value arrives as an int, takes about
//     what it takes as floats only.
//   - mixed: any ints and floats in one chunk (NaN, ±Inf, -0, long floats,
//     huge ints): a kind bit per point, then the XOR encoding of the raw 64
//     bits.
//
// The encoder measures the candidates exactly (decimal against xor, int
// against mixed, mixed-decimal against mixed, both residual orders, both
// mappings, every bucket layout, every kind map form) and writes the
// smallest. Append is a pure function, safe for concurrent use.
//
// # Decoding
//
// An Iterator reads the chunk in place, 64 points at a time into buffers of
// its own, with 64-bit buffered bit reads and an eight-entry table for the
// prefix codes. The common sequences, one bucket and order 1 (a gauge's
// steps, a counter's increments, jittered timestamps), decode in loops of
// their own, one per mapping, that take the residuals a refill holds (56/w)
// without a check for bits each; a decimal of scale 10^0 (whole numbers in
// floats, Prometheus' counters) is converted without a division. Next and
// At then only step through the buffers, and Block
// hands out the rest of a buffered batch as slices, for a caller that loops
// over points without a call per point. First reads a chunk's first
// timestamp from its header, decoding nothing. It allocates nothing, per
// point or per Reset. Corrupt or truncated input ends the iteration with a
// *CorruptionError (errors.Is(err, ErrCorrupt)); it never panics.
// Decoded timestamps are checked to be increasing and inside the hour, so a
// reader can rely on them.
package chunk
