package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// rec is a record as Replay handed it over.
type rec struct {
	seg  int
	data []byte
}

// payload returns record i of size n: its index, then bytes that compress
// well for even i and not at all for odd i.
func payload(i, n int) []byte {
	p := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(i), uint64(n)))
	for j := range p {
		if i%2 == 0 {
			p[j] = byte(j / 64)
		} else {
			p[j] = byte(rng.Uint32())
		}
	}
	if n >= 8 {
		binary.BigEndian.PutUint64(p, uint64(i))
	}
	return p
}

func mustOpen(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// mustAppend appends p, commits it and returns the segment build saw.
func mustAppend(t testing.TB, l *Log, p []byte) int {
	t.Helper()
	seg := -1
	pos, err := l.Append(func(s int, buf []byte) []byte {
		seg = s
		return append(buf, p...)
	})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if pos.Segment != seg {
		t.Fatalf("Append returned segment %d, build saw %d", pos.Segment, seg)
	}
	if err := l.Commit(pos); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return seg
}

func replayAll(t testing.TB, opts Options) ([]rec, ReplayStats) {
	t.Helper()
	var got []rec
	stats, err := Replay(opts, func(seg int, data []byte) error {
		got = append(got, rec{seg, slices.Clone(data)})
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return got, stats
}

func equalRecs(t testing.TB, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].seg != want[i].seg || !bytes.Equal(got[i].data, want[i].data) {
			t.Fatalf("record %d: got segment %d, %d bytes; want segment %d, %d bytes (contents equal: %v)",
				i, got[i].seg, len(got[i].data), want[i].seg, len(want[i].data), bytes.Equal(got[i].data, want[i].data))
		}
	}
}

func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	segs, err := listSegments(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range segs {
		fi, err := os.Stat(SegmentPath(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	return total
}

func TestRoundTrip(t *testing.T) {
	mixed := []int{0, 1, 8, 9, 100, 4096, 65536, 0}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		mixed = append(mixed, rng.IntN(32<<10))
	}
	huge := []int{0, 5 << 20, 0, 3<<20 + 7, 1, 8 << 20}
	for _, tc := range []struct {
		name        string
		sync        SyncMode
		compress    bool
		segmentSize int64
		sizes       []int
		minSegments int
	}{
		{"raw", SyncInterval, false, 256 << 10, mixed, 5},
		{"s2", SyncInterval, true, 256 << 10, mixed, 3},
		{"huge raw", SyncAlways, false, 2 << 20, huge, 3},
		{"huge s2", SyncInterval, true, 2 << 20, huge, 2},
		{"rotation before every record", SyncAlways, false, 1, []int{0, 10, 0, 100, 3}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), Sync: tc.sync, SegmentSize: tc.segmentSize, Compress: tc.compress}
			l := mustOpen(t, opts)
			var want []rec
			for i, n := range tc.sizes {
				p := payload(i, n)
				want = append(want, rec{mustAppend(t, l, p), p})
			}
			size := l.Size()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := dirSize(t, opts.Dir); got != size {
				t.Errorf("Size() = %d, files hold %d bytes", size, got)
			}
			segs, err := listSegments(OSFS{}, opts.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(segs) < tc.minSegments {
				t.Errorf("%d segments, want at least %d", len(segs), tc.minSegments)
			}
			got, stats := replayAll(t, opts)
			equalRecs(t, got, want)
			if stats.Corruptions != 0 || stats.Records != int64(len(want)) || stats.Segments != len(segs) {
				t.Errorf("stats %+v", stats)
			}
			var bytes int64
			for _, r := range want {
				bytes += int64(len(r.data))
			}
			if stats.Bytes != bytes {
				t.Errorf("stats.Bytes = %d, want %d", stats.Bytes, bytes)
			}
		})
	}
}

func TestCompressOnlyWhenSmaller(t *testing.T) {
	opts := Options{Dir: t.TempDir(), Compress: true}
	l := mustOpen(t, opts)
	mustAppend(t, l, payload(0, 4096)) // compresses
	mustAppend(t, l, payload(1, 4096)) // random: stored raw
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(SegmentPath(opts.Dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	first := data[segmentHeaderSize:]
	n := binary.BigEndian.Uint32(first[1:5])
	if first[0] != kindS2 || n >= 4096 {
		t.Errorf("compressible record: kind %d, %d bytes stored", first[0], n)
	}
	second := first[recordHeaderSize+n:]
	if second[0] != kindRaw || binary.BigEndian.Uint32(second[1:5]) != 4096 {
		t.Errorf("random record: kind %d, %d bytes stored", second[0], binary.BigEndian.Uint32(second[1:5]))
	}
}

// TestBuildResults covers what build may return: the buffer grown in place,
// a reallocated buffer, a slice it owns, a sub-slice of the buffer.
func TestBuildResults(t *testing.T) {
	own := payload(7, 3000)
	for _, tc := range []struct {
		name  string
		build func(buf []byte) []byte
		want  []byte
	}{
		{"in place", func(buf []byte) []byte { return append(buf, "abc"...) }, []byte("abc")},
		{"outgrows the buffer", func(buf []byte) []byte { return append(buf, payload(1, initialBuf*3)...) }, payload(1, initialBuf*3)},
		{"own slice", func([]byte) []byte { return own }, own},
		{"sub-slice", func(buf []byte) []byte { return append(buf, "xxhello"...)[2:] }, []byte("hello")},
		{"nil", func([]byte) []byte { return nil }, []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Dir: t.TempDir()}
			l := mustOpen(t, opts)
			for range 3 { // the second and third appends reuse what the first left
				pos, err := l.Append(func(_ int, buf []byte) []byte { return tc.build(buf) })
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Commit(pos); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := replayAll(t, opts)
			equalRecs(t, got, []rec{{1, tc.want}, {1, tc.want}, {1, tc.want}})
		})
	}
}

func TestRecordTooLarge(t *testing.T) {
	l := mustOpen(t, Options{Dir: t.TempDir()})
	defer l.Close()
	l.maxRecord = 1000 // MaxRecordSize in small
	big := make([]byte, l.maxRecord+1)
	_, err := l.Append(func(_ int, _ []byte) []byte { return big })
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("Append of %d bytes: %v, want ErrRecordTooLarge", len(big), err)
	}
	// build ran for a record that was not written: the next record starts a
	// new segment, so per-segment state kept by build starts over.
	if seg := mustAppend(t, l, []byte("still fine")); seg != 2 {
		t.Fatalf("next record went to segment %d, want 2", seg)
	}
}

func TestOpenStartsNewSegment(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	var want []rec
	for round := range 3 {
		l := mustOpen(t, opts)
		if got := l.Segment(); got != round+1 {
			t.Fatalf("round %d: Open started segment %d, want %d", round, got, round+1)
		}
		before := dirSize(t, opts.Dir)
		p := payload(round, 100)
		want = append(want, rec{mustAppend(t, l, p), p})
		if round > 0 {
			// The old segments did not grow.
			for n := 1; n <= round; n++ {
				if _, err := os.Stat(SegmentPath(opts.Dir, n)); err != nil {
					t.Fatal(err)
				}
			}
			if got := dirSize(t, opts.Dir); got != before+recordHeaderSize+100 {
				t.Fatalf("directory grew by %d bytes, want %d", got-before, recordHeaderSize+100)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := replayAll(t, opts)
	equalRecs(t, got, want)
}

func TestRotateAndTruncate(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	l := mustOpen(t, opts)
	defer l.Close()
	for want := 2; want <= 5; want++ {
		mustAppend(t, l, payload(want, 10))
		n, err := l.Rotate()
		if err != nil || n != want || l.Segment() != want {
			t.Fatalf("Rotate = %d, %v; Segment() = %d; want %d", n, err, l.Segment(), want)
		}
	}
	for _, tc := range []struct {
		before int
		want   []int
	}{
		{0, []int{1, 2, 3, 4, 5}},
		{1, []int{1, 2, 3, 4, 5}},
		{3, []int{3, 4, 5}},
		{3, []int{3, 4, 5}},
		{5, []int{5}},
		{100, []int{5}}, // never the current segment
	} {
		if err := l.Truncate(tc.before); err != nil {
			t.Fatalf("Truncate(%d): %v", tc.before, err)
		}
		segs, err := l.Segments()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(segs, tc.want) {
			t.Fatalf("after Truncate(%d): segments %v, want %v", tc.before, segs, tc.want)
		}
		if got := dirSize(t, opts.Dir); got != l.Size() {
			t.Fatalf("after Truncate(%d): Size() = %d, files hold %d", tc.before, l.Size(), got)
		}
		if got := l.Stats().Segments; got != int64(len(tc.want)) {
			t.Fatalf("Stats().Segments = %d, want %d", got, len(tc.want))
		}
	}
	if seg := mustAppend(t, l, []byte("after truncation")); seg != 5 {
		t.Fatalf("appended to segment %d, want 5", seg)
	}
}

func TestRotateBySize(t *testing.T) {
	opts := Options{Dir: t.TempDir(), SegmentSize: 1000}
	l := mustOpen(t, opts)
	for i := range 20 {
		mustAppend(t, l, payload(i, 300))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := listSegments(OSFS{}, opts.Dir)
	for _, n := range segs {
		fi, err := os.Stat(SegmentPath(opts.Dir, n))
		if err != nil {
			t.Fatal(err)
		}
		// A segment is cut once it reaches the size: it may pass it by one record.
		if fi.Size() >= 1000+recordHeaderSize+300 {
			t.Errorf("segment %d is %d bytes", n, fi.Size())
		}
	}
	if len(segs) < 5 {
		t.Errorf("%d segments", len(segs))
	}
}

func TestLock(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	l := mustOpen(t, opts)
	if _, err := Open(opts); err == nil {
		t.Fatal("second Open of the same directory succeeded")
	}
	if _, err := Replay(opts, func(int, []byte) error { return nil }); err == nil {
		t.Fatal("Replay of an open log succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(func(_ int, b []byte) []byte { return b }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	l = mustOpen(t, opts)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReplayMissingDir(t *testing.T) {
	got, stats := replayAll(t, Options{Dir: filepath.Join(t.TempDir(), "nope")})
	if len(got) != 0 || stats.Segments != 0 {
		t.Fatalf("got %d records, stats %+v", len(got), stats)
	}
}

func TestReplayCallbackError(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	l := mustOpen(t, opts)
	for i := range 5 {
		mustAppend(t, l, payload(i, 10))
	}
	l.Close()
	stop := errors.New("stop")
	n := 0
	_, err := Replay(opts, func(int, []byte) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Replay: %v, want the callback's error", err)
	}
	// A refused record is not damage: nothing was cut.
	got, stats := replayAll(t, opts)
	if len(got) != 5 || stats.Corruptions != 0 {
		t.Fatalf("%d records, stats %+v", len(got), stats)
	}
}

func TestParseSyncMode(t *testing.T) {
	for _, m := range []SyncMode{SyncAlways, SyncInterval} {
		got, err := ParseSyncMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseSyncMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseSyncMode("sometimes"); err == nil {
		t.Error("ParseSyncMode accepted sometimes")
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no dir", Options{}},
		{"negative segment size", Options{Dir: "x", SegmentSize: -1}},
		{"bad sync mode", Options{Dir: "x", Sync: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Open(tc.opts); err == nil {
				t.Error("Open succeeded")
			}
		})
	}
}

func TestFormatSizes(t *testing.T) {
	if got := len(appendSegmentHeader(nil)); got != segmentHeaderSize {
		t.Errorf("segment header is %d bytes, want %d", got, segmentHeaderSize)
	}
	if got := len(appendRecord(nil, kindRaw, nil)); got != recordHeaderSize {
		t.Errorf("record header is %d bytes, want %d", got, recordHeaderSize)
	}
	// An all-zero record header never checks out: zeroed tails are damage.
	var zero [recordHeaderSize]byte
	if recordCRC(zero[:5], nil) == 0 {
		t.Error("CRC of a zero header is zero")
	}
}
