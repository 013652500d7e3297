package api

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/internal/cputime"
	"hourglass/internal/dbtest"
	"hourglass/series"
	"hourglass/series/wal"
)

// The OpenTSDB write benchmarks send 10,000 points over 1,000 series (10
// metrics × 100 hosts, four tags each, as the load generator's) per
// iteration, each iteration the next 10 steps of 10 s, through the whole
// write path: decoding, validation, ingest.Batch, the WAL (-wal-fsync
// interval) and the head over Pebble. The series are created before the
// timing starts.
const (
	tsdbBenchSeries = 1000
	tsdbBenchSteps  = 10
	tsdbBenchPoints = tsdbBenchSeries * tsdbBenchSteps
	tsdbBenchT0     = int64(1_767_225_600) // seconds
)

// newTSDBBenchServer is a server over a Pebble store with the WAL fsynced
// on an interval, as -wal-fsync=interval runs it.
func newTSDBBenchServer(b *testing.B) *Server {
	b.Helper()
	e := dbtest.Open(b, b.TempDir(), func(o *series.Options) {
		o.WAL.Sync, o.WAL.Compress = wal.SyncInterval, true
	}, nil)
	b.Cleanup(func() { e.Close() })
	return newServerOver(Config{}, e.DB, e.Index, e.Store, e.UIDs, e.Layout, prometheus.NewRegistry(), dbtest.Quiet)
}

// tsdbBenchNames holds each series' metric and tags, in the wire order.
var tsdbBenchNames = func() (out [tsdbBenchSeries]struct {
	metric string
	tags   [4][2]string
}) {
	for s := range out {
		h := s % 100
		out[s].metric = "sys.metric." + strconv.Itoa(s/100)
		out[s].tags = [4][2]string{
			{"host", fmt.Sprintf("host-%04d", h)},
			{"region", fmt.Sprintf("region-%d", h%4)},
			{"dc", fmt.Sprintf("dc-%d", h%12)},
			{"service", fmt.Sprintf("svc-%d", h%8)},
		}
	}
	return out
}()

func tsdbBenchValue(dst []byte, s, step int) []byte {
	if s%2 == 0 {
		return strconv.AppendInt(dst, int64((s*7919+step)%100000), 10)
	}
	return strconv.AppendFloat(dst, float64(s+step)*0.37, 'f', 2, 64)
}

// stamps are the places of a request's timestamps, for the next
// iteration's to be written over them: every one has 10 digits.
type stamps struct {
	at   []int // offset of each timestamp
	step []int // its step within the request
}

// rewrite gives the request the timestamps of steps [step, step+tsdbBenchSteps).
func (s *stamps) rewrite(req []byte, step int) {
	var tmp [20]byte
	for j, at := range s.at {
		copy(req[at:at+10], strconv.AppendInt(tmp[:0], tsdbBenchT0+int64(step+s.step[j])*10, 10))
	}
}

// appendTelnetBench appends the put lines of steps [step, step+tsdbBenchSteps).
func appendTelnetBench(dst []byte, step int, st *stamps) []byte {
	for k := step; k < step+tsdbBenchSteps; k++ {
		for s := range tsdbBenchSeries {
			dst = append(dst, "put "...)
			dst = append(dst, tsdbBenchNames[s].metric...)
			dst = append(dst, ' ')
			st.at, st.step = append(st.at, len(dst)), append(st.step, k-step)
			dst = strconv.AppendInt(dst, tsdbBenchT0+int64(k)*10, 10)
			dst = append(dst, ' ')
			dst = tsdbBenchValue(dst, s, k)
			for _, t := range tsdbBenchNames[s].tags {
				dst = append(dst, ' ')
				dst = append(dst, t[0]...)
				dst = append(dst, '=')
				dst = append(dst, t[1]...)
			}
			dst = append(dst, '\n')
		}
	}
	return dst
}

// appendPutBench appends the /api/put body of steps [step, step+tsdbBenchSteps).
func appendPutBench(dst []byte, step int, st *stamps) []byte {
	dst = append(dst, '[')
	for k := step; k < step+tsdbBenchSteps; k++ {
		for s := range tsdbBenchSeries {
			if len(dst) > 1 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"metric":"`...)
			dst = append(dst, tsdbBenchNames[s].metric...)
			dst = append(dst, `","timestamp":`...)
			st.at, st.step = append(st.at, len(dst)), append(st.step, k-step)
			dst = strconv.AppendInt(dst, tsdbBenchT0+int64(k)*10, 10)
			dst = append(dst, `,"value":`...)
			dst = tsdbBenchValue(dst, s, k)
			dst = append(dst, `,"tags":{`...)
			for j, t := range tsdbBenchNames[s].tags {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, '"')
				dst = append(dst, t[0]...)
				dst = append(dst, `":"`...)
				dst = append(dst, t[1]...)
				dst = append(dst, '"')
			}
			dst = append(dst, "}}"...)
		}
	}
	return append(dst, ']')
}

// reportPerPoint reports wall time and the process's CPU time (the server's
// goroutines, the background flusher's included) per point; cpu is
// processCPU's value before the loop.
func reportPerPoint(b *testing.B, points int, cpu time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(points), "ns/point")
	if end, ok := cputime.Process(); ok && end > cpu {
		b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(points), "cpu-ns/point")
	}
}

// BenchmarkOpenTSDBPut is /api/put with a 10,000-point body through the
// handler.
func BenchmarkOpenTSDBPut(b *testing.B) {
	s := newTSDBBenchServer(b)
	h := s.Handler()
	ps := &promServer{t: b, srv: s, h: h}
	var st stamps
	body := appendPutBench(nil, 0, &st)
	if r := ps.do("POST", "/api/put", nil, body); r.code != 204 { // creates the series
		b.Fatalf("%d %s", r.code, r.body)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu, _ := cputime.Process()
	for i := 0; b.Loop(); i++ {
		st.rewrite(body, (i+1)*tsdbBenchSteps)
		if r := ps.do("POST", "/api/put", nil, body); r.code != 204 {
			b.Fatalf("%d %s", r.code, r.body)
		}
	}
	reportPerPoint(b, b.N*tsdbBenchPoints, cpu)
}

// BenchmarkOpenTSDBTelnet is 10,000 put lines on one telnet connection over
// loopback, then "version", whose reply says the batch is stored.
func BenchmarkOpenTSDBTelnet(b *testing.B) {
	s := newTSDBBenchServer(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.serveTelnet(c, bufio.NewReaderSize(c, 64<<10))
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(lines []byte) {
		if _, err := c.Write(lines); err != nil {
			b.Fatal(err)
		}
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(l, "put:") {
				b.Fatalf("error line: %s", l)
			}
			if strings.HasPrefix(l, "Built with") {
				return
			}
		}
	}
	var st stamps
	lines := append(appendTelnetBench(nil, 0, &st), "version\n"...)
	send(lines) // creates the series
	b.SetBytes(int64(len(lines)))
	b.ReportAllocs()
	cpu, _ := cputime.Process()
	for i := 0; b.Loop(); i++ {
		st.rewrite(lines, (i+1)*tsdbBenchSteps)
		send(lines)
	}
	reportPerPoint(b, b.N*tsdbBenchPoints, cpu)
}
