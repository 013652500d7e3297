package pebble

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"hourglass/internal/cputime"
	"hourglass/store"
)

// The benchmarks run on a disk-backed store in b.TempDir, with Pebble's
// real fsyncs. Run them with
//
//	go test ./store/pebble -run '^$' -bench . -benchtime 2s
//
// and BenchmarkCompression (slow, -benchtime 1x) to compare codecs.

const batchSize = 1000

func benchOptions() Options {
	o := testOptions()
	o.CacheSize = 256 << 20
	o.MemTableSize = 64 << 20
	return o
}

// load writes d in batches of batchSize.
func load(tb testing.TB, s *Store, d *dataset) {
	tb.Helper()
	for i := 0; i < len(d.cells); i += batchSize {
		if err := s.Write(context.Background(), store.TableData, d.cells[i:min(i+batchSize, len(d.cells))]); err != nil {
			tb.Fatal(err)
		}
	}
}

// loaded returns a store holding d, flushed and compacted, so reads go
// through SSTables and the block cache as they do on a long-running server.
func loaded(b *testing.B, d *dataset, opts Options) *Store {
	b.Helper()
	s := openTest(b, b.TempDir(), opts)
	load(b, s, d)
	if err := s.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

func reportCells(b *testing.B, cells int, unit string) {
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), unit+"/s")
}

// BenchmarkWrite writes batches of 1000 cells, each batch synced. Every
// pass over the data set moves it to later hours, so every cell is new.
func BenchmarkWrite(b *testing.B) {
	d := makeDataset(1, 100, 100, 2, 1) // 20,000 cells
	s := openTest(b, b.TempDir(), benchOptions())
	ctx := context.Background()
	b.SetBytes(int64(d.bytes / len(d.cells) * batchSize))
	b.ReportAllocs()
	b.ResetTimer()
	pos := 0
	for i := 0; i < b.N; i++ {
		if pos+batchSize > len(d.cells) {
			pos = 0
			for _, m := range d.cells {
				binary.BigEndian.PutUint32(m.Row[4:], binary.BigEndian.Uint32(m.Row[4:])+2*3600)
			}
		}
		if err := s.Write(ctx, store.TableData, d.cells[pos:pos+batchSize]); err != nil {
			b.Fatal(err)
		}
		pos += batchSize
	}
	reportCells(b, b.N*batchSize, "cells")
}

// BenchmarkWriteParallel writes batches of 1000 cells from 4 goroutines,
// which share fsyncs (Pebble's group commit).
func BenchmarkWriteParallel(b *testing.B) {
	d := makeDataset(2, 100, 100, 2, 1)
	s := openTest(b, b.TempDir(), benchOptions())
	ctx := context.Background()
	b.SetBytes(int64(d.bytes / len(d.cells) * batchSize))
	b.ReportAllocs()
	b.SetParallelism(2) // 2 × GOMAXPROCS goroutines
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// Each batch writes fresh cells: its own hour, shifted per batch.
			n := next.Add(1)
			pos := int(n) * batchSize % len(d.cells)
			pos -= pos % batchSize
			muts := make([]store.Mutation, batchSize)
			copy(muts, d.cells[pos:pos+batchSize])
			for j := range muts {
				row := append([]byte(nil), muts[j].Row...)
				binary.BigEndian.PutUint32(row[4:], binary.BigEndian.Uint32(row[4:])+uint32(n)*3600)
				muts[j].Row = row
			}
			if err := s.Write(ctx, store.TableData, muts); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportCells(b, b.N*batchSize, "cells")
}

// BenchmarkScan scans one salt bucket of the data table: a range of ~4,000
// cells out of 80,000, cache warm.
func BenchmarkScan(b *testing.B) {
	d := makeDataset(3, 100, 100, 4, 2)
	s := loaded(b, d, benchOptions())
	ctx := context.Background()
	cells := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		salt := byte(i % saltBuckets)
		err := s.Scan(ctx, store.TableData, []store.KeyRange{store.PrefixRange([]byte{salt})}, func(c store.Cell) bool {
			cells++
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportCells(b, cells, "cells")
	b.ReportMetric(float64(cells)/float64(b.N), "cells/op")
}

// BenchmarkScanRows scans 1,000 exact-row ranges in one call, as the query
// engine does for the series of a query: "sparse" takes every 16th row of
// the table, "dense" 1,000 adjacent rows.
func BenchmarkScanRows(b *testing.B) {
	d := makeDataset(4, 100, 100, 4, 2)
	s := loaded(b, d, benchOptions())
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		stride int
	}{{"sparse", 16}, {"dense", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			var ranges []store.KeyRange
			for i := 0; i < 1000; i++ {
				ranges = append(ranges, store.RowRange(d.rows[(i*tc.stride)%len(d.rows)]))
			}
			cells := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				err := s.Scan(ctx, store.TableData, ranges, func(c store.Cell) bool {
					cells++
					return true
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			reportCells(b, b.N*len(ranges), "rows")
			reportCells(b, cells, "cells")
		})
	}
}

// BenchmarkReadRow reads one row (2 cells) of 40,000, or a missing one.
func BenchmarkReadRow(b *testing.B) {
	d := makeDataset(5, 100, 100, 4, 2)
	s := loaded(b, d, benchOptions())
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		name string
		miss bool
	}{{"hit", false}, {"miss", true}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				row := d.rows[rng.IntN(len(d.rows))]
				if tc.miss {
					row = append(row[:len(row):len(row)], 0)
				}
				cs, err := s.ReadRow(ctx, store.TableData, row)
				if err != nil || (len(cs) == 0) != tc.miss {
					b.Fatalf("ReadRow = %d cells, %v", len(cs), err)
				}
			}
		})
	}
}

// BenchmarkIncrement increments one counter: each call is a synced write.
// "parallel" increments 4×GOMAXPROCS different counters at once.
func BenchmarkIncrement(b *testing.B) {
	s := openTest(b, b.TempDir(), benchOptions())
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := s.Increment(ctx, store.TableUID, []byte("counter"), []byte("metric"), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(4)
		var id atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			q := []byte(fmt.Sprint("c", id.Add(1)))
			for pb.Next() {
				if _, err := s.Increment(ctx, store.TableUID, []byte("counter"), q, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkCompression writes the same 60,000 cells with each codec and
// block size, compacts them into one level and reports bytes on disk per
// cell and the CPU time spent writing and compacting them, then the CPU
// time of cold reads (1 MiB block cache, so nearly every block is read and
// decompressed). Run it with -benchtime 1x; it is Linux-only (getrusage).
func BenchmarkCompression(b *testing.B) {
	d := makeDataset(6, 100, 100, 6, 1)
	b.Logf("%d cells, %.1f bytes/cell raw (row+qualifier+value)", len(d.cells), float64(d.bytes)/float64(len(d.cells)))
	for _, c := range []Compression{CompressionNone, CompressionSnappy, CompressionMinLZ, CompressionZstd} {
		for _, blockSize := range []int{4 << 10, 32 << 10} {
			b.Run(fmt.Sprintf("%s/block=%dKiB", c, blockSize>>10), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					opts := benchOptions()
					opts.Compression = c
					opts.CacheSize = 1 << 20
					dir := b.TempDir()
					s, err := open(dir, opts, func(po *pebbledb.Options) {
						for l := range po.Levels {
							po.Levels[l].BlockSize = blockSize
						}
					})
					if err != nil {
						b.Fatal(err)
					}
					cpu0 := cputime.Used()
					load(b, s, d)
					if err := s.Compact(context.Background()); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/float64(len(d.cells)), "write-cpu-ns/cell")
					m := s.Metrics()
					b.ReportMetric(float64(m.TableBytes)/float64(len(d.cells)), "disk-B/cell")
					b.ReportMetric(float64(m.TableBytes)/float64(d.bytes)*100, "disk-%raw")
					b.StopTimer()
					// Cold reads: full scans, then random rows, measured in
					// CPU time, which other load on the machine disturbs
					// less than wall time (testing.Benchmark cannot nest).
					cells := 0
					cpu0 = cputime.Used()
					for pass := 0; pass < 3; pass++ {
						err := s.Scan(context.Background(), store.TableData, []store.KeyRange{{}}, func(store.Cell) bool {
							cells++
							return true
						})
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/float64(cells), "cold-scan-cpu-ns/cell")
					rng := rand.New(rand.NewPCG(6, 6))
					const reads = 20000
					cpu0 = cputime.Used()
					for j := 0; j < reads; j++ {
						if _, err := s.ReadRow(context.Background(), store.TableData, d.rows[rng.IntN(len(d.rows))]); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/reads, "cold-readrow-cpu-ns")
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}
