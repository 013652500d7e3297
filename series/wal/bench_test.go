package wal

import (
	"fmt"
	"sync"
	"testing"
)

// Benchmarks run on the real file system under b.TempDir: fsync costs
// whatever the disk under TMPDIR costs. docs/format/wal.md records figures.

func benchAppend(b *testing.B, l *Log, p []byte) {
	pos, err := l.Append(func(_ int, buf []byte) []byte { return append(buf, p...) })
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Commit(pos); err != nil {
		b.Fatal(err)
	}
}

func reportFsyncs(b *testing.B, l *Log, before Stats) {
	s := l.Stats()
	fsyncs := float64(s.Fsyncs - before.Fsyncs)
	b.ReportMetric(fsyncs/float64(b.N), "fsyncs/op")
	if fsyncs > 0 {
		b.ReportMetric(float64(s.Commits-before.Commits)/fsyncs, "commits/fsync")
	}
}

// BenchmarkAppendCommitInterval is the default mode: a write(2) per record,
// an fsync per second in the background.
func BenchmarkAppendCommitInterval(b *testing.B) {
	for _, tc := range []struct {
		name     string
		size     int
		compress bool
		even     bool // compressible payload
	}{
		{"4KiB", 4 << 10, false, false},
		{"256KiB", 256 << 10, false, false},
		{"4KiB/s2-compressible", 4 << 10, true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := mustOpen(b, Options{Dir: b.TempDir(), Sync: SyncInterval, Compress: tc.compress})
			defer l.Close()
			i := 1
			if tc.even {
				i = 0
			}
			p := payload(i, tc.size)
			b.SetBytes(int64(tc.size))
			b.ReportAllocs()
			before := l.Stats()
			for b.Loop() {
				benchAppend(b, l, p)
			}
			reportFsyncs(b, l, before)
		})
	}
}

// BenchmarkAppendCommitAlways shows group commit: with more writers, more
// commits share one fsync and throughput grows while each waits about as
// long.
func BenchmarkAppendCommitAlways(b *testing.B) {
	const size = 4 << 10
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			l := mustOpen(b, Options{Dir: b.TempDir()})
			defer l.Close()
			p := payload(1, size)
			b.SetBytes(size)
			b.ReportAllocs()
			before := l.Stats()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				n := b.N / writers
				if w < b.N%writers {
					n++
				}
				wg.Go(func() {
					for range n {
						benchAppend(b, l, p)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			reportFsyncs(b, l, before)
		})
	}
}

// BenchmarkReplay reads a 64 MiB log of 4 KiB records.
func BenchmarkReplay(b *testing.B) {
	for _, tc := range []struct {
		name     string
		compress bool
		even     bool
	}{
		{"raw", false, false},
		{"s2", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const size, total = 4 << 10, 64 << 20
			opts := Options{Dir: b.TempDir(), Sync: SyncInterval, Compress: tc.compress, SegmentSize: 16 << 20}
			l := mustOpen(b, opts)
			i := 1
			if tc.even {
				i = 0
			}
			p := payload(i, size)
			for range total / size {
				benchAppend(b, l, p)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(total)
			b.ReportAllocs()
			for b.Loop() {
				stats, err := Replay(opts, func(int, []byte) error { return nil })
				if err != nil || stats.Records != total/size {
					b.Fatalf("Replay: %v, %+v", err, stats)
				}
			}
		})
	}
}
