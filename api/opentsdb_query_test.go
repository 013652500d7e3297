package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/series"
)

// queryBenchSeries hosts, each in one of 4 regions, a gauge every 10 s
// over the hour before queryBenchEnd, in the head: the load generator's
// mix (loadtest/query.go) asks an hour of it.
const (
	queryBenchSeries = 417
	queryBenchEnd    = int64(1_767_229_200_000) // a whole hour
)

// fillQueryData appends the hour of points to ps's head.
func fillQueryData(tb testing.TB, ps *promServer, nSeries int, every int64) {
	tb.Helper()
	ls := make([]series.Labels, nSeries)
	for i := range ls {
		ls[i] = series.MakeLabels("cpu.usage", []series.Tag{
			{Key: "region", Value: fmt.Sprintf("r%d", i%4)},
			{Key: "host", Value: fmt.Sprintf("h%05d", i)},
		})
	}
	samples := make([]series.Sample, nSeries)
	errs := make([]error, nSeries)
	for t := queryBenchEnd - 3_600_000 + every; t <= queryBenchEnd; t += every {
		for i := range ls {
			v := chunk.Float(float64((i*7919+int(t/every))%10000) / 100)
			if i%3 == 0 {
				v = chunk.Int(int64((i + int(t/every)) % 1000))
			}
			samples[i] = series.Sample{Labels: ls[i], T: t, V: v}
		}
		if err := ps.head.Append(context.Background(), samples, errs); err != nil {
			tb.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// queryBody is an /api/query body over the data's hour with one sub-query.
func queryBody(sub string) []byte {
	return fmt.Appendf(nil, `{"start":%d,"end":%d,"queries":[%s]}`, queryBenchEnd-3_600_000, queryBenchEnd, sub)
}

// The /api/query reply is the same gzipped (when the client takes it) as
// not: small replies, and one of several megabytes that the handler
// writes in pieces.
func TestOpenTSDBQueryGzip(t *testing.T) {
	ps := newPromServer(t, nil)
	fillQueryData(t, ps, 40, 1000) // 3,600 points a series
	for _, sub := range []string{
		`{"aggregator":"none","metric":"cpu.usage","tags":{"host":"h00007"}}`,
		`{"aggregator":"sum","metric":"cpu.usage","tags":{"region":"*"},"downsample":"1m-avg"}`,
		`{"aggregator":"none","metric":"cpu.usage","downsample":"0all-max"}`,
		`{"aggregator":"none","metric":"cpu.usage"}`, // 144,000 points
	} {
		plain := ps.do("POST", "/api/query", nil, queryBody(sub))
		zipped := ps.do("POST", "/api/query", map[string]string{"Accept-Encoding": "gzip"}, queryBody(sub))
		if plain.code != 200 || zipped.code != 200 {
			t.Fatalf("%s: %d, %d: %s", sub, plain.code, zipped.code, plain.body)
		}
		if plain.header.Get("Content-Encoding") != "" || zipped.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: Content-Encoding %q and %q", sub, plain.header.Get("Content-Encoding"), zipped.header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain.body) {
			t.Fatalf("%s: the gzipped reply reads %d bytes, the plain one is %d", sub, len(got), len(plain.body))
		}
		if len(plain.body) < 100 || len(zipped.body) >= len(plain.body) {
			t.Fatalf("%s: %d bytes gzipped, %d plain", sub, len(zipped.body), len(plain.body))
		}
	}
}

// BenchmarkOpenTSDBQuery runs the load generator's kinds of /api/query
// sub-query (loadtest/query.go MakeQuery) through the whole handler, the
// reply gzipped as the load generator asks for it: an hour of 417 series
// at 10 s in the head. raw is one host's points; sum, every series in
// 1m-avg buckets summed by region; topk, each series' maximum (0all-max,
// 417 results). cpu-ns/op is the process's CPU per query.
func BenchmarkOpenTSDBQuery(b *testing.B) {
	ps := newPromServer(b, nil)
	fillQueryData(b, ps, queryBenchSeries, 10_000)
	for _, c := range []struct{ name, sub string }{
		{"raw", `{"aggregator":"none","metric":"cpu.usage","tags":{"host":"h00007"}}`},
		{"sum", `{"aggregator":"sum","metric":"cpu.usage","tags":{"region":"*"},"downsample":"1m-avg"}`},
		{"topk", `{"aggregator":"none","metric":"cpu.usage","downsample":"0all-max"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := queryBody(c.sub)
			hdr := map[string]string{"Accept-Encoding": "gzip", "Content-Type": "application/json"}
			cpu, _ := cputime.Process()
			b.ReportAllocs()
			for b.Loop() {
				if r := ps.do("POST", "/api/query", hdr, body); r.code != 200 {
					b.Fatalf("%d: %s", r.code, r.body)
				}
			}
			if end, ok := cputime.Process(); ok {
				b.ReportMetric(float64((end-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// Each result of a reply of many carries its own series' tags (the
// handler reuses one buffer for them from one result to the next).
func TestOpenTSDBQueryResultTags(t *testing.T) {
	ps := newPromServer(t, nil)
	fillQueryData(t, ps, 40, 60_000)
	r := ps.do("POST", "/api/query", nil, queryBody(`{"aggregator":"none","metric":"cpu.usage","downsample":"0all-max"}`))
	if r.code != 200 {
		t.Fatalf("%d: %s", r.code, r.body)
	}
	var got []struct {
		Tags map[string]string  `json:"tags"`
		DPS  map[string]float64 `json:"dps"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("%d results", len(got))
	}
	for i, res := range got {
		host := fmt.Sprintf("h%05d", i)
		if len(res.Tags) != 2 || res.Tags["host"] != host || res.Tags["region"] != fmt.Sprintf("r%d", i%4) || len(res.DPS) != 1 {
			t.Fatalf("result %d: tags %v, %d points; want host %s", i, res.Tags, len(res.DPS), host)
		}
	}
}
