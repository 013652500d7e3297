package bigtable

import (
	"context"
	"encoding/binary"
	"testing"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/store"
)

// BenchmarkOpenChunkRewrite prices the design issue 14 did not take: every
// node writing its open chunks to Bigtable as they grow, a partial cell
// per series every few seconds under the qualifier the sealed chunk later
// replaces. One op is one round over 5,000 series (the load generator's
// series count): each series' open chunk of a 10 s series, between 1 and
// 360 points (its size at a uniformly random moment of its hour), written
// in one Write, as a node would every partial interval. It reports the
// cells per second the emulator takes, the bytes per cell sent and the
// client CPU per cell (docs/design.md, "Fresh reads across nodes").
func BenchmarkOpenChunkRewrite(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	const series = 5000
	muts := make([]store.Mutation, series)
	bytes := 0
	base := int64(benchHour) * 1000
	for i := range muts {
		n := 1 + i%360
		pts := make([]chunk.Point, n)
		for k := range pts {
			t := base + int64(k)*10_000
			if i%2 == 0 {
				pts[k] = chunk.Point{T: t, V: chunk.Int(int64(i)*1_000_000 + int64(k)*37)}
			} else {
				pts[k] = chunk.Point{T: t, V: chunk.Float(float64(i%1000+k%50) / 100)}
			}
		}
		v, err := chunk.Append(nil, base, pts)
		if err != nil {
			b.Fatal(err)
		}
		q := binary.BigEndian.AppendUint32(nil, 0)
		q = binary.BigEndian.AppendUint16(q, 1)
		muts[i] = store.Mutation{Row: benchRow(byte(i%20), 1, uint32(i), benchHour), Qualifier: q, Value: v}
		bytes += len(muts[i].Row) + len(q) + len(v)
	}
	b.SetBytes(int64(bytes))
	cpu0 := cputime.Used()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// 1,000 cells a call, as the flusher's batches.
		for k := 0; k < series; k += 1000 {
			if err := s.Write(ctx, store.TableData, muts[k:k+1000]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	report(b, cpu0, b.N*series)
	b.ReportMetric(float64(bytes)/series, "bytes/cell")
}
