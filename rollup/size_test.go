package rollup

import (
	"fmt"
	"testing"

	"hourglass/chunk"
	"hourglass/loadtest"
	"hourglass/rowkey"
)

// Key sizes of the layout proposed in docs/format/rollup.md, for the load
// generator's series (five tags) under rowkey.DefaultLayout.
const (
	loadTags      = 5
	rawKeyLen     = 1 + 3 + 4 + loadTags*7     // salt | metric | hour | tags
	rawQualLen    = rowkey.QualifierLen        // offset ms | writer
	rollupKeyLen  = 1 + 4 + 3 + 4 + loadTags*7 // salt | interval s | metric | row base s | tags
	rollupQualLen = 4                          // cell base offset in the row, s
)

// sizes encodes a day of load-generator data as raw chunks (one cell per
// series-hour, the fewest the flusher writes) and as rollup cells laid out
// (a cell per hour below 1h intervals, per day from 1h)
// as docs/format/rollup.md proposes, and returns the bytes of each: cell
// values only, and values plus row key and qualifier (before Pebble's
// prefix sharing and compression).
func sizes(t testing.TB, kinds []loadtest.Kind, series [][]chunk.Point, kind loadtest.Kind, iv int64) (rawV, rawKV, rolV, rolKV, buckets int) {
	for i, pts := range series {
		if kinds[i] != kind {
			continue
		}
		for lo := 0; lo < len(pts); {
			hour := rowkey.HourOf(pts[lo].T)
			hi := lo
			for hi < len(pts) && pts[hi].T < hour+rowkey.HourMs {
				hi++
			}
			c, err := chunk.Append(nil, hour, pts[lo:hi])
			if err != nil {
				t.Fatal(err)
			}
			rawV += len(c)
			rawKV += len(c) + rawKeyLen + rawQualLen
			lo = hi
		}
		// A cell holds an hour's buckets (interval < 1h) or a day's, as
		// the flusher writes them (CellSpan).
		span := CellSpan(iv)
		for lo := 0; lo < len(pts); {
			base := BucketStart(pts[lo].T, span)
			hi := lo
			for hi < len(pts) && pts[hi].T < base+span {
				hi++
			}
			bs, err := Compute(nil, pts[lo:hi], iv)
			if err != nil {
				t.Fatal(err)
			}
			cell, err := AppendCell(nil, base, iv, bs)
			if err != nil {
				t.Fatal(err)
			}
			rolV += len(cell)
			rolKV += len(cell) + rollupKeyLen + rollupQualLen
			buckets += len(bs)
			lo = hi
		}
	}
	return
}

// TestRollupSize reports what rollups of the load generator's data cost
// against its raw chunks (docs/format/rollup.md quotes this output):
//
//	go test ./rollup/ -run TestRollupSize -v
//
// It asserts that every interval's rollups are smaller than the raw data,
// and that 1h rollups keep to issue 13's 10 % of the raw bytes.
func TestRollupSize(t *testing.T) {
	kinds, series := loadSeries(t, 10)
	for _, iv := range []int64{600_000, 3_600_000} {
		var trV, trKV, toV, toKV int
		for _, kind := range []loadtest.Kind{loadtest.Gauge, loadtest.Counter, loadtest.Constant} {
			rawV, rawKV, rolV, rolKV, n := sizes(t, kinds, series, kind, iv)
			t.Log(fmt.Sprintf("%-8s %3dm: raw %7d B (%6d with keys), rollup %6d B (%6d with keys), %5.1f B/bucket: %5.1f%% of raw values, %5.1f%% with keys",
				kind, iv/60_000, rawV, rawKV, rolV, rolKV, float64(rolV)/float64(n), 100*float64(rolV)/float64(rawV), 100*float64(rolKV)/float64(rawKV)))
			trV, trKV, toV, toKV = trV+rawV, trKV+rawKV, toV+rolV, toKV+rolKV
		}
		t.Log(fmt.Sprintf("all      %3dm: %5.1f%% of raw values, %5.1f%% with keys", iv/60_000, 100*float64(toV)/float64(trV), 100*float64(toKV)/float64(trKV)))
		if toV >= trV || (iv >= 3_600_000 && 10*toV > trV) {
			t.Errorf("%d ms rollups take %d bytes, the raw chunks %d", iv, toV, trV)
		}
	}
}
