package series_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/series"
)

// TestRollupsOfAnHourInManyChunks writes two hours of random points (ints,
// floats, NaNs, staleness markers, ints near 2^53) in chunks of 16 points,
// each flushed before the next, then late points among them and
// overwrites, and checks every stored bucket against rollup.Compute over
// the raw points bit for bit (float sums included). With 1h rollups the
// later chunks of an hour continue the buckets written (the counter says
// some did): the 1h one from the day cell cache, the 10m and 1m ones from
// their hour cells read back; with 1h and the cache off they read the row
// back.
func TestRollupsOfAnHourInManyChunks(t *testing.T) {
	for _, c := range []struct {
		ivs       []time.Duration
		cache     int64
		continues bool
	}{
		{[]time.Duration{time.Hour}, 1 << 20, true},
		{[]time.Duration{time.Hour}, 0, false},
		{rollupIntervals, 1 << 20, true},
		{[]time.Duration{10 * time.Minute, time.Minute}, 0, true},
	} {
		t.Run(fmt.Sprint(c.ivs, " cache=", c.cache), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			e := openEnv(t, t.TempDir(), func(o *series.Options) {
				o.Rollup = series.RollupOptions{Intervals: c.ivs, CacheBytes: c.cache}
				o.ChunkMaxPoints = 16
				o.Registerer = reg
			})
			defer e.close()
			ctx := context.Background()
			r := rand.New(rand.NewPCG(5, 6))
			m := model{}
			add := func(ss []series.Sample) {
				for _, s := range ss {
					m.put(s)
				}
				e.append(ss...)
				if err := e.head.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			const hosts = 4
			// In order: 2 hours at 30 s, a flush every 40 points per host.
			for step := 0; step < 240; step += 40 {
				var ss []series.Sample
				for p := step; p < step+40; p++ {
					for h := range hosts {
						ss = append(ss, series.Sample{Labels: host(h), T: t0 + int64(p)*30_000 + int64(h), V: randomValue(r)})
					}
				}
				add(ss)
			}
			checkRollupsAt(t, e.st, e.index, e.opts.Layout, m, c.ivs)
			// Late points: between the ones written, and overwrites.
			var late []series.Sample
			for range 20 {
				h, p := r.IntN(hosts), r.IntN(240)
				late = append(late, series.Sample{Labels: host(h), T: t0 + int64(p)*30_000 + int64(h) + int64(r.IntN(2))*7_000, V: randomValue(r)})
			}
			add(late)
			checkRollupsAt(t, e.st, e.index, e.opts.Layout, m, c.ivs)
			continued := metricValue(t, reg, "hourglass_rollup_hours_continued_total")
			if (continued > 0) != c.continues {
				t.Errorf("%v hours continued", continued)
			}
			t.Logf("%v hours continued, %v raw rows read", continued, metricValue(t, reg, "hourglass_rollup_raw_rows_read_total"))
		})
	}
}

// randomValue is an int, a decimal, a long float, a NaN, a staleness
// marker or an int near 2^53 (whose buckets cannot be continued).
func randomValue(r *rand.Rand) chunk.Value {
	switch k := r.IntN(20); {
	case k < 8:
		return chunk.Int(r.Int64N(1000))
	case k < 14:
		return chunk.Float(float64(r.Int64N(10000)) / 100)
	case k < 17:
		return chunk.Float(r.NormFloat64() * 1e6)
	case k == 17:
		return chunk.Float(math.NaN())
	case k == 18:
		return chunk.Float(math.Float64frombits(rollup.StaleNaNBits))
	case r.IntN(20) == 0:
		return chunk.Int(1<<53 - r.Int64N(5))
	default:
		return chunk.Int(-r.Int64N(100))
	}
}
