package series

import (
	"context"
	"encoding/binary"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/loadtest"
	"hourglass/rowkey"
	"hourglass/store/pebble"
)

// BenchmarkRollupWrite is the flusher's rollup work alone, what
// BenchmarkRollupIngest's rollups add, without the ingest around it (whose
// noise on a shared machine is larger than the rollups): the settled hours
// of one day of 120 load-generator series at 10 s (1,036,800 points), an
// hour of every series per flush as a backfill's flushes write them, each
// row's buckets computed (hourBuckets) and written (rollupWriter.write:
// the day cells from the cache, the store write) into a new Pebble store.
// cpu-ns/point is the process' CPU per point, Pebble's background work
// included:
//
//	go test -c -o /tmp/series.test ./series/
//	/tmp/series.test -test.run '^$' -test.bench RollupWrite -test.benchtime 5x
func BenchmarkRollupWrite(b *testing.B) {
	g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 1, Series: 120,
		Interval: 10 * time.Second, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Steps: 8640})
	if err != nil {
		b.Fatal(err)
	}
	layout := rowkey.DefaultLayout()
	type row struct {
		tsuid []byte
		hour  int64
		pts   []chunk.Point
	}
	idx := map[*loadtest.Series]int{}
	var byHour [][]row // [hour of the day][series]
	points := 0
	g.Each(func(p loadtest.Point) {
		i, ok := idx[p.S]
		if !ok {
			i = len(idx)
			idx[p.S] = i
		}
		h := int((p.T / rowkey.HourMs) % 24)
		for len(byHour) <= h {
			byHour = append(byHour, nil)
		}
		for len(byHour[h]) <= i {
			byHour[h] = append(byHour[h], row{})
		}
		r := &byHour[h][i]
		if r.tsuid == nil {
			// metric (3 bytes) and five tag pairs (3 + 4), unique per series
			r.tsuid = binary.BigEndian.AppendUint32(make([]byte, 1, 3+5*7), uint32(i)<<8)[:3+5*7]
			r.hour = p.T - p.T%rowkey.HourMs
		}
		v := chunk.Int(p.V.Int)
		if p.V.IsFloat {
			v = chunk.Float(p.V.Float)
		}
		r.pts = append(r.pts, chunk.Point{T: p.T, V: v})
		points++
	})
	log := slog.New(slog.DiscardHandler)
	for _, mode := range []struct {
		name string
		ivs  []time.Duration
	}{{"1h", []time.Duration{time.Hour}}, {"10m,1h", []time.Duration{10 * time.Minute, time.Hour}}} {
		b.Run("rollups="+mode.name, func(b *testing.B) {
			var cpu time.Duration
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				st, err := pebble.Open(filepath.Join(b.TempDir(), "store"), pebble.Options{Logger: log})
				if err != nil {
					b.Fatal(err)
				}
				w := newRollupWriter(st, layout, RollupOptions{Intervals: mode.ivs, CacheBytes: DefaultRollupOptions().CacheBytes}, log, nil)
				b.StartTimer()
				c0 := cputime.Used()
				for _, rows := range byHour {
					rr := make([]rollupRow, len(rows))
					for i, r := range rows {
						rr[i] = rollupRow{tsuid: r.tsuid, hour: r.hour, complete: true, buckets: w.hourBuckets(r.pts)}
					}
					if err := w.write(ctx, rr); err != nil {
						b.Fatal(err)
					}
				}
				cpu += cputime.Used() - c0
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*points), "cpu-ns/point")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
		})
	}
}
