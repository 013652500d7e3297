package api

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/ingest"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store/pebble"
	"hourglass/uid"
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
	dir := b.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	layout, err := rowkey.Record(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		b.Fatal(err)
	}
	head, err := series.Open(context.Background(), st, uid.New(st, layout, uid.Options{}), series.Options{
		Layout: layout, Logger: quiet, WAL: wal.Options{Dir: filepath.Join(dir, "wal"), Sync: wal.SyncInterval, Compress: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		head.Close()
		st.Close()
	})
	return New(Config{}, head, ingest.NewWriter(head, ingest.Limits{}), query.NewEngine(head, query.Limits{}), prometheus.NewRegistry(), quiet)
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

// appendTelnetBench appends the put lines of steps [step, step+tsdbBenchSteps).
func appendTelnetBench(dst []byte, step int) []byte {
	for k := step; k < step+tsdbBenchSteps; k++ {
		for s := range tsdbBenchSeries {
			dst = append(dst, "put "...)
			dst = append(dst, tsdbBenchNames[s].metric...)
			dst = append(dst, ' ')
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
func appendPutBench(dst []byte, step int) []byte {
	dst = append(dst, '[')
	for k := step; k < step+tsdbBenchSteps; k++ {
		for s := range tsdbBenchSeries {
			if len(dst) > 1 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"metric":"`...)
			dst = append(dst, tsdbBenchNames[s].metric...)
			dst = append(dst, `","timestamp":`...)
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

func reportPerPoint(b *testing.B, points int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(points), "ns/point")
}

// BenchmarkOpenTSDBPut is /api/put with a 10,000-point body through the
// handler.
func BenchmarkOpenTSDBPut(b *testing.B) {
	s := newTSDBBenchServer(b)
	h := s.Handler()
	ps := &promServer{t: b, srv: s, h: h}
	body := appendPutBench(nil, 0)
	if r := ps.do("POST", "/api/put", nil, body); r.code != 204 { // creates the series
		b.Fatalf("%d %s", r.code, r.body)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		body = appendPutBench(body[:0], (i+1)*tsdbBenchSteps)
		b.StartTimer()
		if r := ps.do("POST", "/api/put", nil, body); r.code != 204 {
			b.Fatalf("%d %s", r.code, r.body)
		}
	}
	reportPerPoint(b, b.N*tsdbBenchPoints)
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
		if _, err := c.Write(append(lines, "version\n"...)); err != nil {
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
	lines := appendTelnetBench(nil, 0)
	send(lines) // creates the series
	b.SetBytes(int64(len(lines)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lines = appendTelnetBench(lines[:0], (i+1)*tsdbBenchSteps)
		b.StartTimer()
		send(lines)
	}
	reportPerPoint(b, b.N*tsdbBenchPoints)
}
