package opentsdb

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
)

// throughput reports n items per wall second and per CPU second;
// start is cputime.Process's value before the loop.
func throughput(b *testing.B, n int, unit string, start time.Duration) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), unit+"/s")
	if end, ok := cputime.Process(); ok && end > start {
		b.ReportMetric(float64(n)/(end-start).Seconds(), unit+"/cpu-s")
	}
}

// putBody returns an /api/put body of n points shaped like tcollector's or a
// load generator's: 50 series of 4 tags, integer and float values, second
// timestamps.
func putBody(n int) []byte {
	b := []byte{'['}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		s := i % 50
		b = append(b, `{"metric":"sys.cpu.`...)
		b = strconv.AppendInt(b, int64(s%5), 10)
		b = append(b, `","timestamp":`...)
		b = strconv.AppendInt(b, 1767225600+int64(i/50), 10)
		b = append(b, `,"value":`...)
		if i%2 == 0 {
			b = strconv.AppendInt(b, int64(i*7919%100000), 10)
		} else {
			b = strconv.AppendFloat(b, float64(i)*0.37, 'f', -1, 64)
		}
		b = append(b, `,"tags":{"host":"web`...)
		b = strconv.AppendInt(b, int64(s), 10)
		b = append(b, `","dc":"lga","env":"prod","cpu":"`...)
		b = strconv.AppendInt(b, int64(s%8), 10)
		b = append(b, `"}}`...)
	}
	return append(b, ']')
}

func BenchmarkParsePut(b *testing.B) {
	const n = 5000
	body := putBody(n)
	var d PutDecoder
	var sum int64
	fn := func(i int, dp *DataPoint, err error) error {
		if err != nil {
			b.Fatal(err)
		}
		sum += dp.Timestamp
		return nil
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu, _ := cputime.Process()
	for b.Loop() {
		if err := d.Decode(body, fn); err != nil {
			b.Fatal(err)
		}
	}
	throughput(b, n*b.N, "points", cpu)
	b.ReportMetric(float64(len(body))/n, "bytes/point")
}

func BenchmarkParsePutLine(b *testing.B) {
	lines := [][]byte{
		[]byte("put sys.cpu.user 1767225600 42 host=web01 dc=lga env=prod cpu=0\n"),
		[]byte("put sys.cpu.user 1767225601 42.5 host=web02 dc=lga env=prod cpu=1\n"),
		[]byte("put sys.if.bytes.out 1767225600123 1.3E3 host=web01 interface=eth0\r\n"),
	}
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	var p LineParser
	var dp DataPoint
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu, _ := cputime.Process()
	for b.Loop() {
		for _, l := range lines {
			if err := p.Parse(l, &dp); err != nil {
				b.Fatal(err)
			}
		}
	}
	throughput(b, len(lines)*b.N, "points", cpu)
}

func BenchmarkAppendResult(b *testing.B) {
	const series, points = 100, 1000
	results := make([]QueryResult, series)
	pts := make([][]chunk.Point, series)
	for s := range series {
		results[s] = QueryResult{
			Metric:        "sys.cpu.user",
			Tags:          []Tag{{"host", "web" + strconv.Itoa(s)}, {"dc", "lga"}},
			AggregateTags: []string{"cpu"},
		}
		pts[s] = make([]chunk.Point, points)
		for i := range points {
			v := chunk.Float(float64(i*s) * 0.37)
			if i%3 == 0 {
				v = chunk.Int(int64(i * s))
			}
			pts[s][i] = chunk.Point{T: 1767225600000 + int64(i)*60000, V: v}
		}
	}
	for _, bc := range []struct {
		name string
		f    ResultFormat
	}{{"object", ResultFormat{}}, {"arrays", ResultFormat{Arrays: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			var buf []byte
			cpu, _ := cputime.Process()
			for b.Loop() {
				buf = append(buf[:0], '[')
				for s := range series {
					if s > 0 {
						buf = append(buf, ',')
					}
					buf = AppendResult(buf, &results[s], pts[s], bc.f)
				}
				buf = append(buf, ']')
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			throughput(b, series*points*b.N, "points", cpu)
		})
	}
}

// BenchmarkParsePutEncodingJSON is the reference PutDecoder is measured
// against: the same body through encoding/json's reflection, into the
// shape OpenTSDB's IncomingDataPoint has, without any validation.
func BenchmarkParsePutEncodingJSON(b *testing.B) {
	const n = 5000
	body := putBody(n)
	type incoming struct {
		Metric    string            `json:"metric"`
		Timestamp int64             `json:"timestamp"`
		Value     json.Number       `json:"value"`
		Tags      map[string]string `json:"tags"`
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu, _ := cputime.Process()
	for b.Loop() {
		var dps []incoming
		if err := json.Unmarshal(body, &dps); err != nil {
			b.Fatal(err)
		}
	}
	throughput(b, n*b.N, "points", cpu)
}

// BenchmarkLineParserLoad is telnet put lines as the load generator sends
// them (hourglass-loadtest write -dialect telnet -workers 4 -batch 5000):
// one connection's 1,250 series (12 metrics a host, five tags), four steps
// of 10 s in step order, gauges with two decimals and integer counters,
// each line first dispatched by Command and its series' ref attached once,
// as the telnet handler does. Every series is known after the first pass.
// cpu-ns/line is the process's CPU time.
func BenchmarkLineParserLoad(b *testing.B) {
	benchLineParserLoad(b, 1250, "eu-west", "api")
}

// BenchmarkLineParserLoad5000 is BenchmarkLineParserLoad with the load
// generator's 5,000 series on one connection (-workers 1), its tags as long
// as the generator's (region eu-west-1, service checkout): what a
// connection's cache of series must hold.
func BenchmarkLineParserLoad5000(b *testing.B) { benchLineParserLoad(b, 5000, "eu-west-1", "checkout") }

func benchLineParserLoad(b *testing.B, series int, region, service string) {
	metrics := []string{"sys_cpu_user_percent", "sys_cpu_system_percent", "sys_load_1m", "mem_used_percent",
		"disk_used_percent", "net_latency_ms", "net_bytes_in_total", "net_bytes_out_total",
		"http_requests_total", "disk_io_ops_total", "mem_total_bytes", "cpu_cores"}
	const steps = 4
	var lines [][]byte
	for k := range steps {
		for s := range series {
			h, m := s/len(metrics), s%len(metrics)
			l := []byte("put " + metrics[m] + " ")
			l = strconv.AppendInt(l, 1767225600+int64(k)*10, 10)
			l = append(l, ' ')
			if m < 6 { // a gauge with two decimals
				l = strconv.AppendFloat(l, float64((s*7919+k*31)%10000)/100, 'f', -1, 64)
			} else { // a counter
				l = strconv.AppendInt(l, int64(s)*1048576+int64(k)*524288, 10)
			}
			l = append(l, " dc="+region+"-"...)
			l = append(l, byte('a'+h%3))
			l = append(l, " host=host-"...)
			l = append(l, fmt.Sprintf("%06d", h)...)
			l = append(l, fmt.Sprintf(" rack=%s-%c-r%02d", region, 'a'+h%3, h%20)...)
			l = append(l, " region="+region+" service="+service...)
			lines = append(lines, l)
		}
	}
	// ParseKnown is what the handler calls; Parse, which copies a known
	// series' tags too, what it called before.
	for _, known := range []bool{true, false} {
		name := "ParseKnown"
		if !known {
			name = "Parse"
		}
		b.Run(name, func(b *testing.B) {
			var p LineParser
			var dp DataPoint
			var sum int64
			parse := func() {
				for _, l := range lines {
					if Command(l) != CmdPut {
						b.Fatalf("%q", l)
					}
					var ref any
					var err error
					if known {
						ref, err = p.ParseKnown(l, &dp)
					} else {
						err = p.Parse(l, &dp)
						ref = p.Ref()
					}
					if err != nil {
						b.Fatal(err)
					}
					if ref == nil {
						p.SetRef(&sum)
					}
					sum += dp.Timestamp
				}
			}
			parse()
			b.ReportAllocs()
			cpu := cputime.Used()
			for b.Loop() {
				parse()
			}
			n := len(lines) * b.N
			b.ReportMetric(float64((cputime.Used()-cpu).Nanoseconds())/float64(n), "cpu-ns/line")
		})
	}
}
