package chunk

import (
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"hourglass/internal/cputime"
)

// benchData is the data the benchmarks run on: the three fixtures, plus a
// jittered scrape, which is what Prometheus' scrape loop really produces.
var benchData = []struct {
	name string
	pts  []Point
}{
	{"gauge", genGauge()},
	{"counter", genCounter()},
	{"constant", genConstant()},
	{"gauge-jitter", genGaugeJitter()},
	{"gauge-mixed", genGaugeMixed()},
	{"counter-float", genCounterFloat()},
}

// genCounterFloat: genCounter's counter as Prometheus sends it, whole
// numbers held in floats (a decimal chunk of scale 10^0).
func genCounterFloat() []Point {
	pts := genCounter()
	for i, p := range pts {
		pts[i].V = Float(float64(p.V.Int()))
	}
	return pts
}

// genGaugeJitter: the gauge's random walk sampled every 15 s for one hour
// (240 points), each timestamp late by 0..24 ms.
func genGaugeJitter() []Point {
	r := rng(0x3c6ef372)
	pts := make([]Point, 240)
	m := int64(5000)
	for i := range pts {
		pts[i] = Point{T: testBase + int64(i)*15000 + int64(r.intn(25)), V: Float(float64(m) / 100)}
		m += int64(r.intn(41)) - 20
	}
	return pts
}

// genGaugeMixed: a two-decimal gauge as OpenTSDB's /api/put and telnet
// deliver it, one hour at 10 s (360 points): the random walk of genGauge
// (its own seed), where a value that is whole prints as "42" and so
// arrives as the int 42. A walk in hundredths is whole about 1% of the
// time: here 5 of the 360 points are ints.
func genGaugeMixed() []Point {
	r := rng(0x9b05688c)
	pts := make([]Point, 360)
	m := int64(5000)
	for i := range pts {
		v := Float(float64(m) / 100)
		if m%100 == 0 {
			v = Int(m / 100)
		}
		pts[i] = Point{T: testBase + int64(i)*10000, V: v}
		m += int64(r.intn(41)) - 20
	}
	return pts
}

func allFloat(pts []Point) bool {
	for _, p := range pts {
		if p.V.IsInt() {
			return false
		}
	}
	return true
}

// benchEncodings lists "chosen" (what Append picks) and, for float data,
// "xor" (Gorilla XOR only, timestamps as usual), for ints and floats
// "mixed" (what Append picked before mixed-decimal), so the gain shows.
func benchEncodings(pts []Point) []encoding {
	switch {
	case allFloat(pts):
		return []encoding{0, encXOR}
	case !allInt(pts):
		return []encoding{0, encMixed}
	}
	return []encoding{0}
}

func allInt(pts []Point) bool {
	for _, p := range pts {
		if !p.V.IsInt() {
			return false
		}
	}
	return true
}

func encName(e encoding) string {
	if e == 0 {
		return "chosen"
	}
	return e.String() + "-only"
}

// cpuClock measures the process CPU time a benchmark loop uses.
type cpuClock struct {
	start time.Duration
	ok    bool
}

// startCPU is called just before the benchmark loop.
func startCPU() cpuClock {
	t, ok := cputime.Process()
	return cpuClock{t, ok}
}

// reportPerPoint reports, per point: wall-clock ns, CPU ns (see
// cputime.Process) and chunk bytes.
func reportPerPoint(b *testing.B, c cpuClock, points, chunkBytes int) {
	per := float64(b.N) * float64(points)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/point")
	if t, ok := cputime.Process(); ok && c.ok {
		b.ReportMetric(float64((t-c.start).Nanoseconds())/per, "cpu-ns/point")
	}
	if chunkBytes > 0 {
		b.ReportMetric(float64(chunkBytes)/float64(points), "B/point")
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, d := range benchData {
		for _, enc := range benchEncodings(d.pts) {
			b.Run(d.name+"/"+encName(enc), func(b *testing.B) {
				out, err := appendChunk(nil, testBase, d.pts, enc)
				if err != nil {
					b.Fatal(err)
				}
				n := len(out)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				clk := startCPU()
				for b.Loop() {
					out, _ = appendChunk(out[:0], testBase, d.pts, enc)
				}
				reportPerPoint(b, clk, len(d.pts), n)
			})
		}
	}
}

// BenchmarkEncodeNew is Append into a nil slice, as the flusher encodes
// each sealed chunk: the allocations of the result count.
func BenchmarkEncodeNew(b *testing.B) {
	// And a gauge at full float precision (XOR), as compare.sh -values
	// float writes it.
	full := genGaugeJitter()
	for i := range full {
		full[i].V = Float(full[i].V.Float() * 1.0000001)
	}
	data := append(benchData[:len(benchData):len(benchData)], struct {
		name string
		pts  []Point
	}{"gauge-full-float", full})
	for _, d := range data {
		b.Run(d.name, func(b *testing.B) {
			out, err := Append(nil, testBase, d.pts)
			if err != nil {
				b.Fatal(err)
			}
			n := len(out)
			b.ReportAllocs()
			clk := startCPU()
			for b.Loop() {
				out, _ = Append(nil, testBase, d.pts)
			}
			reportPerPoint(b, clk, len(d.pts), n)
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, d := range benchData {
		for _, enc := range benchEncodings(d.pts) {
			b.Run(d.name+"/"+encName(enc), func(b *testing.B) {
				c, err := appendChunk(nil, testBase, d.pts, enc)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(c)))
				b.ReportAllocs()
				var it Iterator
				var sum uint64
				clk := startCPU()
				for b.Loop() {
					it.Reset(c, testBase)
					for it.Next() {
						t, v := it.At()
						sum += uint64(t) + v.Bits()
					}
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
				reportPerPoint(b, clk, len(d.pts), len(c))
			})
		}
	}
}

// BenchmarkDecodeBlock is BenchmarkDecode (the chosen encodings) read by
// Block: a loop over slices instead of a Next and an At per point.
func BenchmarkDecodeBlock(b *testing.B) {
	for _, d := range benchData {
		b.Run(d.name, func(b *testing.B) {
			c, err := Append(nil, testBase, d.pts)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c)))
			b.ReportAllocs()
			var it Iterator
			var sum uint64
			clk := startCPU()
			for b.Loop() {
				it.Reset(c, testBase)
				for ok := it.Next(); ok; ok = it.Next() {
					blk := it.Block()
					for i, t := range blk.T {
						sum += uint64(t) + blk.Value(i).Bits()
					}
				}
			}
			if it.Err() != nil {
				b.Fatal(it.Err())
			}
			reportPerPoint(b, clk, len(d.pts), len(c))
		})
	}
}

// BenchmarkFirst measures finding a chunk's first timestamp: First reads
// the header; Next and At decode a batch of 64 points first.
func BenchmarkFirst(b *testing.B) {
	c, err := Append(nil, testBase, genGauge())
	if err != nil {
		b.Fatal(err)
	}
	var it Iterator
	var sum int64
	b.Run("First", func(b *testing.B) {
		clk := startCPU()
		for b.Loop() {
			it.Reset(c, testBase)
			sum += it.First()
		}
		reportCPUPerOp(b, clk)
	})
	b.Run("NextAt", func(b *testing.B) {
		clk := startCPU()
		for b.Loop() {
			it.Reset(c, testBase)
			it.Next()
			t, _ := it.At()
			sum += t
		}
		reportCPUPerOp(b, clk)
	})
}

// BenchmarkDecodeSlice measures Decode into a reused slice.
func BenchmarkDecodeSlice(b *testing.B) {
	for _, d := range benchData {
		b.Run(d.name, func(b *testing.B) {
			c, err := Append(nil, testBase, d.pts)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c)))
			b.ReportAllocs()
			dst := make([]Point, 0, len(d.pts))
			clk := startCPU()
			for b.Loop() {
				if dst, err = Decode(dst[:0], c, testBase); err != nil {
					b.Fatal(err)
				}
			}
			reportPerPoint(b, clk, len(d.pts), len(c))
		})
	}
}

// BenchmarkPrometheusXOR runs the same data through Prometheus'
// tsdb/chunkenc XOR chunk (floats only; ints are converted) as a yardstick.
func BenchmarkPrometheusXOR(b *testing.B) {
	for _, d := range benchData {
		build := func() *chunkenc.XORChunk {
			c := chunkenc.NewXORChunk()
			app, err := c.Appender()
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range d.pts {
				app.Append(0, p.T, p.V.Float())
			}
			return c
		}
		b.Run(d.name+"/encode", func(b *testing.B) {
			n := len(build().Bytes())
			b.SetBytes(int64(n))
			b.ReportAllocs()
			clk := startCPU()
			for b.Loop() {
				build()
			}
			reportPerPoint(b, clk, len(d.pts), n)
		})
		b.Run(d.name+"/decode", func(b *testing.B) {
			c := build()
			b.SetBytes(int64(len(c.Bytes())))
			b.ReportAllocs()
			var it chunkenc.Iterator
			var sum float64
			clk := startCPU()
			for b.Loop() {
				it = c.Iterator(it)
				for it.Next() != chunkenc.ValNone {
					t, v := it.At()
					sum += float64(t) + v
				}
			}
			reportPerPoint(b, clk, len(d.pts), len(c.Bytes()))
		})
	}
}

// cellKeyBytes is what one cell costs in the store beyond its value, for
// the keyed-B/point figure: a row key with four tags (1 salt + 3 metric +
// 4 hour + 4×(3+4) tag bytes = 36) plus the 6-byte qualifier (DESIGN.md,
// "The key layout"). An assumption, not a measurement: the store may
// compress keys.
const cellKeyBytes = 36 + 6

// BenchmarkChunkSize chooses DefaultMaxPoints: one hour of a 1 s two-decimal
// gauge (3600 points; 1 s so that the hour can fill chunks of every size
// tried) is cut into chunks of at most N points. For each N it reports the
// stored size per point (chunk bytes, and with cellKeyBytes per cell), the
// cost to decode the whole hour per point, the average cost of a read that
// starts at a random time (Reset and SeekTo within one chunk), and the head's
// memory for one open chunk of N raw points.
func BenchmarkChunkSize(b *testing.B) {
	r := rng(0x510e527f)
	hour := make([]Point, 3600)
	m := int64(5000)
	for i := range hour {
		hour[i] = Point{T: testBase + int64(i)*1000 + int64(r.intn(5)), V: Float(float64(m) / 100)}
		m += int64(r.intn(41)) - 20
	}
	for _, n := range []int{60, 120, 240, 480, 960, 1800, 3600} {
		var chunks [][]byte
		total := 0
		for i := 0; i < len(hour); i += n {
			c, err := Append(nil, testBase, hour[i:min(i+n, len(hour))])
			if err != nil {
				b.Fatal(err)
			}
			chunks = append(chunks, c)
			total += len(c)
		}
		sizes := func(b *testing.B) {
			b.ReportMetric(float64(total)/float64(len(hour)), "B/point")
			b.ReportMetric(float64(total+len(chunks)*cellKeyBytes)/float64(len(hour)), "keyed-B/point")
			b.ReportMetric(float64(n*int(unsafe.Sizeof(Point{}))), "head-B/series")
		}
		b.Run("decode/N="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			var it Iterator
			var sum int64
			clk := startCPU()
			for b.Loop() {
				for _, c := range chunks {
					it.Reset(c, testBase)
					for it.Next() {
						t, _ := it.At()
						sum += t
					}
				}
			}
			reportPerPoint(b, clk, len(hour), 0)
			sizes(b)
		})
		b.Run("seek/N="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			var it Iterator
			q := rng(1)
			clk := startCPU()
			for b.Loop() {
				i := q.intn(len(hour))
				it.Reset(chunks[i/n], testBase)
				if !it.SeekTo(hour[i].T) {
					b.Fatal("seek failed")
				}
			}
			reportCPUPerOp(b, clk)
		})
	}
}

// reportCPUPerOp reports the process CPU time per op (cputime.Process).
func reportCPUPerOp(b *testing.B, c cpuClock) {
	if t, ok := cputime.Process(); ok && c.ok {
		b.ReportMetric(float64((t-c.start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDecodeFast measures Decode of the head's frozen blocks
// (series/head_frozen.go): 32 points of a gauge as AppendFast writes them
// (Gorilla XOR), each block decoded into a reused slice through one
// Iterator, the blocks in turn, as a query's head snapshot reads them.
func BenchmarkDecodeFast(b *testing.B) {
	for _, d := range []int{0, 1, 5, 3} { // gauge, counter, counter-float, gauge-jitter
		d := benchData[d]
		b.Run(d.name, func(b *testing.B) {
			var blocks [][]byte
			for i := 0; i+32 <= len(d.pts); i += 32 {
				c, err := AppendFast(nil, testBase, d.pts[i:i+32])
				if err != nil {
					b.Fatal(err)
				}
				blocks = append(blocks, c)
			}
			b.ReportAllocs()
			dst := make([]Point, 0, 32*len(blocks))
			clk := startCPU()
			var err error
			var it Iterator
			for b.Loop() {
				dst = dst[:0]
				for _, c := range blocks {
					if dst, err = it.Decode(dst, c, testBase); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportPerPoint(b, clk, 32*len(blocks), 0)
		})
	}
}

// BenchmarkEncodeFast measures AppendFast writing the head's frozen blocks
// (series/head_frozen.go): 32 points at a time, the blocks in turn into one
// reused buffer, as the head freezes an open chunk's raw points.
func BenchmarkEncodeFast(b *testing.B) {
	for _, d := range []int{0, 1, 5, 3} { // gauge, counter, counter-float, gauge-jitter
		d := benchData[d]
		b.Run(d.name, func(b *testing.B) {
			n := len(d.pts) / 32 * 32
			var out []byte
			var err error
			for i := 0; i < n; i += 32 {
				if out, err = AppendFast(out, testBase, d.pts[i:i+32]); err != nil {
					b.Fatal(err)
				}
			}
			size := len(out)
			b.ReportAllocs()
			clk := startCPU()
			for b.Loop() {
				out = out[:0]
				for i := 0; i < n; i += 32 {
					out, _ = AppendFast(out, testBase, d.pts[i:i+32])
				}
			}
			reportPerPoint(b, clk, n, size)
		})
	}
}
