package pebble

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"

	"hourglass/chunk"
	"hourglass/store"
)

// Test data shaped like hourglass's data table (DESIGN.md, "The key
// layout"): 50-byte row keys
//
//	salt[1] | metric UID[3] | base hour[4] | 6 × (tagk UID[3] | tagv UID[4])
//
// that share long prefixes, 6-byte qualifiers (offset ms[4] | writer[2]) and
// values that are real chunks (chunk.Append) of a 15 s scrape: half the
// series integer counters, half two-decimal gauges.

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

// appendValue appends the chunk of one cell of a series: the points of
// [from, to) of the hour at base, encoded by the real codec.
func appendValue(dst []byte, rng *rand.Rand, gauge bool, base int64, from, to int, state *float64) []byte {
	pts := make([]chunk.Point, 0, to-from)
	for i := from; i < to; i++ {
		ts := base + int64(i)*scrapeMillis
		if rng.IntN(10) == 0 {
			ts += int64(rng.IntN(200)) // scrape jitter
		}
		var v chunk.Value
		if gauge {
			// A gauge with two decimals, wandering (a temperature, a load).
			*state = math.Round((*state+rng.NormFloat64()*3)*100) / 100
			v = chunk.Float(*state)
		} else {
			// A counter going up at a varying rate.
			*state += float64(rng.IntN(20))
			v = chunk.Int(int64(*state))
		}
		pts = append(pts, chunk.Point{T: ts, V: v})
	}
	out, err := chunk.Append(dst, base, pts)
	if err != nil {
		panic(err)
	}
	return out
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
	state := make([]float64, len(ss))
	for i := range state {
		state[i] = math.Round(rng.Float64() * 1e4)
	}
	d := &dataset{}
	const baseHour = 1_767_225_600 // 2026-01-01T00:00:00Z
	perHour := int(chunk.HourMillis / scrapeMillis)
	for h := 0; h < hours; h++ {
		hour := uint32(baseHour + 3600*h)
		base := int64(hour) * 1000
		for c := 0; c < cellsPerRow; c++ {
			from, to := c*perHour/cellsPerRow, (c+1)*perHour/cellsPerRow
			for i := range ss {
				row := ss[i].appendRow(nil, hour)
				if c == 0 {
					d.rows = append(d.rows, row)
				}
				q := appendQualifier(nil, uint32(from*scrapeMillis))
				v := appendValue(nil, rng, ss[i].gauge, base, from, to, &state[i])
				d.cells = append(d.cells, store.Mutation{Row: row, Qualifier: q, Value: v})
				d.bytes += len(row) + len(q) + len(v)
			}
		}
	}
	slices.SortFunc(d.rows, bytes.Compare)
	return d
}
