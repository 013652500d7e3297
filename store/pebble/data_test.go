package pebble

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"hourglass/store"
)

// Test data shaped like hourglass's data table (DESIGN.md, "The key
// layout"): 50-byte row keys
//
//	salt[1] | metric UID[3] | base hour[4] | 6 × (tagk UID[3] | tagv UID[4])
//
// that share long prefixes, 6-byte qualifiers (offset ms[4] | writer[2]) and
// values that look like Gorilla-encoded chunks of 120 points: counters that
// compress to ~100 bytes, gauges to ~300–400.

const (
	saltBuckets   = 20
	pointsPerCell = 120
	scrapeMillis  = 15_000
)

type series struct {
	salt   byte
	metric uint32
	tags   [6][2]uint32 // tagk, tagv UIDs
	gauge  bool
}

// makeSeries returns metrics × perMetric series with small UIDs, as a young
// hourglass assigns them (so the keys hold many 0x00 bytes to escape).
func makeSeries(rng *rand.Rand, metrics, perMetric int) []series {
	var out []series
	for m := 0; m < metrics; m++ {
		for i := 0; i < perMetric; i++ {
			s := series{metric: uint32(m + 1), gauge: m%2 == 1}
			for k := range s.tags {
				s.tags[k] = [2]uint32{uint32(k + 1), uint32(1 + (i>>(2*k))%97 + k*100)}
			}
			s.tags[5][1] = uint32(1000 + i) // one tag unique per series
			s.salt = byte(rng.IntN(saltBuckets))
			out = append(out, s)
		}
	}
	return out
}

func (s *series) appendRow(dst []byte, hour uint32) []byte {
	dst = append(dst, s.salt)
	dst = append(dst, byte(s.metric>>16), byte(s.metric>>8), byte(s.metric))
	dst = binary.BigEndian.AppendUint32(dst, hour)
	for _, kv := range s.tags {
		dst = append(dst, byte(kv[0]>>16), byte(kv[0]>>8), byte(kv[0]))
		dst = binary.BigEndian.AppendUint32(dst, kv[1])
	}
	return dst
}

func appendQualifier(dst []byte, offsetMillis uint32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, offsetMillis)
	return append(dst, 0, 0) // writer id 0
}

// bitWriter is just enough of a Gorilla encoder to make realistic bytes.
type bitWriter struct {
	b    []byte
	used uint8 // bits used in the last byte
}

func (w *bitWriter) write(v uint64, n int) {
	for n > 0 {
		if w.used == 0 || w.used == 8 {
			w.b = append(w.b, 0)
			w.used = 0
		}
		free := int(8 - w.used)
		take := min(free, n)
		chunk := byte(v>>(n-take)) & byte(1<<take-1)
		w.b[len(w.b)-1] |= chunk << (free - take)
		w.used += uint8(take)
		n -= take
	}
}

// appendChunk appends a chunk-like value for one cell of a series.
func appendChunk(dst []byte, rng *rand.Rand, gauge bool) []byte {
	w := bitWriter{b: dst[len(dst):]}
	w.write(1, 8)                      // version
	w.write(uint64(pointsPerCell), 16) // header: count
	w.write(uint64(rng.Uint32()), 32)  // first timestamp offset
	prevDelta := int64(scrapeMillis)
	var prevBits uint64
	v := math.Round(1e6 + rng.Float64()*1e6)
	var ctr int64
	for i := 0; i < pointsPerCell; i++ {
		// Timestamps: scrape jitter now and then.
		delta := int64(scrapeMillis)
		if rng.IntN(10) == 0 {
			delta += int64(rng.IntN(200) - 100)
		}
		if dod := delta - prevDelta; dod == 0 {
			w.write(0, 1)
		} else {
			w.write(0b10, 2)
			w.write(uint64((dod<<1)^(dod>>63)), 9)
		}
		prevDelta = delta
		if gauge {
			// A gauge of whole numbers (bytes, say) that holds still
			// now and then and wanders otherwise: XOR encoding.
			if rng.IntN(10) < 7 {
				v = math.Round(v + rng.NormFloat64()*200)
			}
			b := math.Float64bits(v)
			x := b ^ prevBits
			prevBits = b
			if x == 0 {
				w.write(0, 1)
				continue
			}
			lead, trail := bits.LeadingZeros64(x), bits.TrailingZeros64(x)
			lead = min(lead, 31)
			sig := 64 - lead - trail
			w.write(0b11, 2)
			w.write(uint64(lead), 5)
			w.write(uint64(sig-1), 6)
			w.write(x>>trail, sig)
		} else {
			// A counter going up by a varying rate: zig-zag delta of delta.
			inc := int64(rng.IntN(20))
			dod := inc - ctr
			ctr = inc
			z := uint64((dod << 1) ^ (dod >> 63))
			switch {
			case z == 0:
				w.write(0, 1)
			case z < 1<<6:
				w.write(0b10, 2)
				w.write(z, 6)
			default:
				w.write(0b11, 2)
				w.write(z, 16)
			}
		}
	}
	return append(dst, w.b...)
}

// dataset is the cells of some hours of some series, in write order: hour
// by hour, and within an hour in series order (not key order), as the head
// seals chunks.
type dataset struct {
	cells []store.Mutation
	rows  [][]byte // distinct rows, sorted
	bytes int      // row + qualifier + value bytes
}

func makeDataset(seed uint64, metrics, perMetric, hours, cellsPerRow int) *dataset {
	rng := rand.New(rand.NewPCG(seed, 42))
	ss := makeSeries(rng, metrics, perMetric)
	d := &dataset{}
	const baseHour = 1_767_225_600 // 2026-01-01T00:00:00Z
	for h := 0; h < hours; h++ {
		hour := uint32(baseHour + 3600*h)
		for c := 0; c < cellsPerRow; c++ {
			for i := range ss {
				row := ss[i].appendRow(nil, hour)
				if c == 0 {
					d.rows = append(d.rows, row)
				}
				q := appendQualifier(nil, uint32(c*pointsPerCell*scrapeMillis))
				v := appendChunk(nil, rng, ss[i].gauge)
				d.cells = append(d.cells, store.Mutation{Row: row, Qualifier: q, Value: v})
				d.bytes += len(row) + len(q) + len(v)
			}
		}
	}
	slices.SortFunc(d.rows, bytes.Compare)
	return d
}
