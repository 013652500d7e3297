package bigtable

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/cputime"
	"hourglass/store"
)

// The benchmarks run on the emulator. By default it runs in this process,
// so the CPU figures count the client and the emulator together. To count
// the client alone, run the emulator as its own process and name it:
//
//	go run cloud.google.com/go/bigtable/cmd/emulator -port 9035 &
//	HOURGLASS_BENCH_EMULATOR=localhost:9035 go test ./store/bigtable -run '^$' -bench . -benchtime 2s
//
// (only the benchmarks then: the other tests need the in-process emulator
// to inject faults). client-cpu-ns/cell is this process's CPU time
// (getrusage) per cell. Wall-clock figures measure the emulator, not
// Bigtable: a real MutateRows or ReadRows takes a few milliseconds more.

// Data shaped like the data table: 50-byte row keys (salt, metric, hour,
// six tag pairs), 6-byte qualifiers, values that are real chunks of 120
// points of a 15 s scrape (docs/format/store.md uses the same shape).

const benchHour = uint32(1_767_225_600) // 2026-01-01T00:00Z

func benchRow(salt byte, metric, series uint32, hour uint32) []byte {
	row := make([]byte, 0, 50)
	row = append(row, salt, byte(metric>>16), byte(metric>>8), byte(metric))
	row = binary.BigEndian.AppendUint32(row, hour)
	for k := uint32(0); k < 6; k++ {
		row = append(row, 0, 0, byte(k+1))
		v := 1 + (series>>(2*k))%97 + k*100
		if k == 5 {
			v = 1000 + series
		}
		row = binary.BigEndian.AppendUint32(row, v)
	}
	return row
}

func benchValue(b testing.TB, series uint32, hour uint32) []byte {
	base := int64(hour) * 1000
	pts := make([]chunk.Point, 120)
	for i := range pts {
		t := base + int64(i)*15_000
		if series%2 == 0 {
			pts[i] = chunk.Point{T: t, V: chunk.Int(int64(series)*1_000_000 + int64(i)*37)}
		} else {
			pts[i] = chunk.Point{T: t, V: chunk.Float(float64(int64(series)%1000+int64(i)%50) / 100)}
		}
	}
	v, err := chunk.Append(nil, base, pts)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// benchCells returns n cells of one hour, spread over 20 salt buckets.
func benchCells(b testing.TB, n int, hour uint32) []store.Mutation {
	muts := make([]store.Mutation, n)
	for i := range muts {
		s := uint32(i)
		q := binary.BigEndian.AppendUint32(nil, 0)
		q = binary.BigEndian.AppendUint16(q, 1)
		muts[i] = store.Mutation{Row: benchRow(byte(i%20), 1, s, hour), Qualifier: q, Value: benchValue(b, s, hour)}
	}
	return muts
}

func benchStore(b *testing.B) *Store {
	return openTest(b, Options{TablePrefix: newPrefix()})
}

func report(b *testing.B, cpu0 time.Duration, cells int) {
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
	b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/float64(cells), "client-cpu-ns/cell")
}

// BenchmarkWrite writes batches of 1,000 cells (~320 KB), one Write each,
// every batch into new rows, as the flusher does.
func BenchmarkWrite(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	batches := make([][]store.Mutation, 8)
	bytes := 0
	for i := range batches {
		batches[i] = benchCells(b, 1000, benchHour+uint32(i)*3600)
	}
	for _, m := range batches[0] {
		bytes += len(m.Row) + len(m.Qualifier) + len(m.Value)
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	cpu0 := cputime.Used()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Write(ctx, store.TableData, batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report(b, cpu0, b.N*1000)
}

// BenchmarkScan reads one salt bucket's rows of one metric and hour: one
// range, 1,000 cells.
func BenchmarkScan(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	var muts []store.Mutation
	for _, m := range benchCells(b, 20_000, benchHour) {
		if m.Row[0] == 3 {
			muts = append(muts, m)
		}
	}
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		b.Fatal(err)
	}
	r := store.PrefixRange(benchRow(3, 1, 0, benchHour)[:8])
	b.ReportAllocs()
	cpu0 := cputime.Used()
	b.ResetTimer()
	cells := 0
	for i := 0; i < b.N; i++ {
		if err := s.Scan(ctx, store.TableData, []store.KeyRange{r}, func(store.Cell) bool { cells++; return true }); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if cells != b.N*len(muts) {
		b.Fatalf("scanned %d cells, want %d", cells, b.N*len(muts))
	}
	report(b, cpu0, cells)
}

// BenchmarkScanRows reads 1,000 exact rows in one call, as the query
// engine does for the series a filter selected.
func BenchmarkScanRows(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	muts := benchCells(b, 4000, benchHour)
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		b.Fatal(err)
	}
	var ranges []store.KeyRange
	for _, m := range muts {
		if m.Row[0] == 0 || m.Row[0] == 1 || m.Row[0] == 2 || m.Row[0] == 3 || m.Row[0] == 4 {
			ranges = append(ranges, store.RowRange(m.Row))
		}
	}
	sortRanges(ranges)
	b.ReportAllocs()
	cpu0 := cputime.Used()
	b.ResetTimer()
	cells := 0
	for i := 0; i < b.N; i++ {
		if err := s.Scan(ctx, store.TableData, ranges, func(store.Cell) bool { cells++; return true }); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if cells != b.N*len(ranges) {
		b.Fatalf("scanned %d cells, want %d", cells, b.N*len(ranges))
	}
	report(b, cpu0, cells)
}

func sortRanges(rs []store.KeyRange) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && string(rs[j].Start) < string(rs[j-1].Start); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func BenchmarkReadRow(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	muts := benchCells(b, 1000, benchHour)
	if err := s.Write(ctx, store.TableData, muts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cells, err := s.ReadRow(ctx, store.TableData, muts[i%len(muts)].Row)
		if err != nil || len(cells) != 1 {
			b.Fatalf("ReadRow = %d cells, %v", len(cells), err)
		}
	}
}

func BenchmarkIncrement(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Increment(ctx, store.TableUID, []byte("c\x00"), []byte("n"), 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutIfAbsent(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		row := fmt.Appendf(nil, "f\x02name%d", i)
		if ok, _, err := s.PutIfAbsent(ctx, store.TableUID, row, []byte("i"), []byte{0, 0, 0, 1}); err != nil || !ok {
			b.Fatalf("PutIfAbsent = %v, %v", ok, err)
		}
	}
}
