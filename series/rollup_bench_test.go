package series_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/loadtest"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// backfillBatches returns a day of the load generator's data (its default
// 10 s interval, 12 metrics per host: gauges, counters and constants), in
// time order, cut in batches of 5,000 points as a backfill sends them.
func backfillBatches(tb testing.TB, hosts int) (batches [][]series.Sample, points int) {
	tb.Helper()
	g, err := loadtest.NewGenerator(loadtest.GenConfig{Seed: 1, Series: hosts * len(loadtest.Metrics),
		Interval: 10 * time.Second, Start: time.UnixMilli(t0).UTC(), Steps: 8640})
	if err != nil {
		tb.Fatal(err)
	}
	labels := map[*loadtest.Series]series.Labels{}
	var cur []series.Sample
	g.Each(func(p loadtest.Point) {
		l, ok := labels[p.S]
		if !ok {
			var tags []series.Tag
			for _, t := range p.S.Tags {
				tags = append(tags, series.Tag{Key: t.Key, Value: t.Value})
			}
			l = series.MakeLabels(p.S.Metric, tags)
			labels[p.S] = l
		}
		v := chunk.Int(p.V.Int)
		if p.V.IsFloat {
			v = chunk.Float(p.V.Float)
		}
		cur = append(cur, series.Sample{Labels: l, T: p.T, V: v})
		if len(cur) == 5000 {
			batches = append(batches, cur)
			cur = nil
		}
		points++
	})
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, points
}

// BenchmarkRollupIngest is the cost of rollups on ingest: a backfill of one
// day of 120 load-generator series (1,036,800 points at 10 s) into a new
// data set, flushed to Pebble, with rollups off, 1h, and 10m,1h.
// cpu-ns/point is the process' CPU (every goroutine: WAL, head, flusher,
// rollups, Pebble) per point; rollup-cells/point the rollup cells written.
// After the last round it reports the data set's bytes on disk after a
// full compaction (disk-B: the rollups' share is the difference from
// rollups=off, the same data) and the bytes of the keys and values of the
// data and rollup tables before compression; raw-rows-read/op the raw rows
// the rollups read back (chunk=60 seals every hour in 6 chunks, as a
// full open chunk or -wal-max-bytes does). Run the modes interleaved,
// one round of the three per run:
//
//	go test -c -o /tmp/series.test ./series/
//	for i in 1 2 3; do /tmp/series.test -test.run '^$' -test.bench RollupIngest -test.benchtime 2x; done
func BenchmarkRollupIngest(b *testing.B) {
	batches, points := backfillBatches(b, 10)
	for _, mode := range []struct {
		name     string
		ivs      []time.Duration
		chunkMax int
	}{{"off", nil, 0}, {"1h", []time.Duration{time.Hour}, 0}, {"10m,1h", []time.Duration{10 * time.Minute, time.Hour}, 0},
		// Chunks sealed small: each hour of a series in 6 chunks.
		{"1h,chunk=60", []time.Duration{time.Hour}, 60},
		{"10m,1h,chunk=60", []time.Duration{10 * time.Minute, time.Hour}, 60}} {
		b.Run("rollups="+mode.name, func(b *testing.B) {
			var cpu time.Duration
			var st *pebble.Store
			var rawRows float64
			for b.Loop() {
				if st != nil {
					st.Close()
				}
				dir := b.TempDir()
				var err error
				st, err = pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				layout := rowkey.DefaultLayout()
				reg := prometheus.NewRegistry()
				c0 := cputime.Used()
				db, err := series.OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), series.Options{
					Layout: layout, Logger: quiet, Rollup: series.RollupOptions{Intervals: mode.ivs, CacheBytes: series.DefaultRollupOptions().CacheBytes},
					ChunkMaxPoints: mode.chunkMax, Registerer: reg,
					WAL: wal.Options{Dir: filepath.Join(dir, "wal"), Sync: wal.SyncInterval, Compress: true},
				})
				if err != nil {
					b.Fatal(err)
				}
				errs := make([]error, 5000)
				for _, batch := range batches {
					if err := db.Append(context.Background(), batch, errs[:len(batch)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				cpu += cputime.Used() - c0
				if len(mode.ivs) > 0 {
					rawRows += metricValue(b, reg, "hourglass_rollup_raw_rows_read_total")
				}
			}
			b.ReportMetric(rawRows/float64(b.N), "raw-rows-read/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*points), "cpu-ns/point")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
			if err := st.Compact(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.DiskUsage()), "disk-B")
			data, rollups := tableBytes(b, st)
			b.ReportMetric(float64(data), "data-KV-B")
			b.ReportMetric(float64(rollups), "rollup-KV-B")
			st.Close()
		})
	}
}

// tableBytes returns the bytes of the keys and values of the data and
// rollup tables, as the store hands them out (before compression).
func tableBytes(b *testing.B, st store.Store) (data, rollups int64) {
	b.Helper()
	for _, t := range []store.Table{store.TableData, store.TableRollup} {
		var n int64
		err := st.Scan(context.Background(), t, []store.KeyRange{{Start: []byte{0}}}, func(c store.Cell) bool {
			n += int64(len(c.Row) + len(c.Qualifier) + len(c.Value))
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
		if t == store.TableData {
			data = n
		} else {
			rollups = n
		}
	}
	return data, rollups
}
