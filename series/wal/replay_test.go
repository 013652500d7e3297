package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// The damage fixture: segments 1, 2 and 3 of recsPerSeg raw records each,
// record k of a segment holding recSize(k) bytes.
const recsPerSeg = 10

func recSize(k int) int { return 100 + 10*k }

// recOffset is where record k of a fixture segment starts (k == recsPerSeg:
// the end of the segment).
func recOffset(k int) int64 {
	off := int64(segmentHeaderSize)
	for j := range k {
		off += int64(recordHeaderSize + recSize(j))
	}
	return off
}

func fixtureRecord(seg, k int) []byte { return payload(seg*100+k+1, recSize(k)) }

func writeFixture(t *testing.T, opts Options) {
	t.Helper()
	opts.Sync = SyncInterval // Close syncs; an fsync per record only slows the test
	l := mustOpen(t, opts)
	for seg := 1; seg <= 3; seg++ {
		if seg > 1 {
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		for k := range recsPerSeg {
			mustAppend(t, l, fixtureRecord(seg, k))
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// editFile applies fn to the contents of segment seg.
func editFile(t *testing.T, dir string, seg int, fn func([]byte) []byte) {
	t.Helper()
	path := SegmentPath(dir, seg)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repairDamage is a damage the replay must report: the segment, where it
// starts, and what the CorruptionError wraps (nil: anything).
type repairDamage struct {
	seg    int   // damaged segment
	offset int64 // where the damage starts
	cause  error // what the CorruptionError wraps; nil: anything
}

// repairCase is one damaged log of TestReplayRepairsDamage.
type repairCase struct {
	name   string
	edits  map[int]func([]byte) []byte // segment → edit
	keep   [3]int                      // records left in segments 1, 2, 3
	damage []repairDamage
}

// repairCases returns the damaged logs TestReplayRepairsDamage replays.
func repairCases() []repairCase {
	type damage = repairDamage
	flip := func(off int64) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x20; return b }
	}
	setLength := func(k int, n uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[recOffset(k)+1:], n); return b }
	}
	cut := func(size int64) func([]byte) []byte {
		return func(b []byte) []byte { return b[:size] }
	}
	add := func(tail []byte) func([]byte) []byte {
		return func(b []byte) []byte { return append(b, tail...) }
	}
	end := recOffset(recsPerSeg)
	return []repairCase{
		{
			name:  "intact",
			edits: nil,
			keep:  [3]int{10, 10, 10},
		},
		{
			name:   "torn record: file cut mid-payload",
			edits:  map[int]func([]byte) []byte{3: cut(recOffset(9) + 20)},
			keep:   [3]int{10, 10, 9},
			damage: []damage{{3, recOffset(9), errTorn}},
		},
		{
			name:   "torn record: file cut mid-header",
			edits:  map[int]func([]byte) []byte{3: cut(recOffset(9) + 4)},
			keep:   [3]int{10, 10, 9},
			damage: []damage{{3, recOffset(9), errTorn}},
		},
		{
			name:   "bad checksum: payload byte flipped",
			edits:  map[int]func([]byte) []byte{3: flip(recOffset(5) + recordHeaderSize + 50)},
			keep:   [3]int{10, 10, 5},
			damage: []damage{{3, recOffset(5), errChecksum}},
		},
		{
			name:   "bad checksum: checksum byte flipped",
			edits:  map[int]func([]byte) []byte{3: flip(recOffset(5) + 6)},
			keep:   [3]int{10, 10, 5},
			damage: []damage{{3, recOffset(5), errChecksum}},
		},
		{
			name:   "bad length: one short",
			edits:  map[int]func([]byte) []byte{3: setLength(5, uint32(recSize(5)-1))},
			keep:   [3]int{10, 10, 5},
			damage: []damage{{3, recOffset(5), errChecksum}},
		},
		{
			name:   "bad length: past the end of the file",
			edits:  map[int]func([]byte) []byte{3: setLength(5, 1<<20)},
			keep:   [3]int{10, 10, 5},
			damage: []damage{{3, recOffset(5), errTorn}},
		},
		{
			name:   "bad length: huge",
			edits:  map[int]func([]byte) []byte{3: setLength(5, 0xFFFFFFFF)},
			keep:   [3]int{10, 10, 5},
			damage: []damage{{3, recOffset(5), errBadLength}},
		},
		{
			name:   "bad kind",
			edits:  map[int]func([]byte) []byte{3: func(b []byte) []byte { b[recOffset(4)] = 7; return b }},
			keep:   [3]int{10, 10, 4},
			damage: []damage{{3, recOffset(4), errBadKind}},
		},
		{
			name:   "zeroed tail",
			edits:  map[int]func([]byte) []byte{3: add(make([]byte, 4096))},
			keep:   [3]int{10, 10, 10},
			damage: []damage{{3, end, errZeroed}},
		},
		{
			name:   "zeroed tail shorter than a header",
			edits:  map[int]func([]byte) []byte{3: add(make([]byte, 5))},
			keep:   [3]int{10, 10, 10},
			damage: []damage{{3, end, errZeroed}},
		},
		{
			name:   "zeroed record: a crash after the size grew, before the data landed",
			edits:  map[int]func([]byte) []byte{3: func(b []byte) []byte { clear(b[recOffset(8):]); return b }},
			keep:   [3]int{10, 10, 8},
			damage: []damage{{3, recOffset(8), errZeroed}},
		},
		{
			name:   "garbage appended",
			edits:  map[int]func([]byte) []byte{3: add([]byte("\x01garbage that looks like a raw record of some length"))},
			keep:   [3]int{10, 10, 10},
			damage: []damage{{3, end, nil}},
		},
		{
			name: "payload that does not decompress",
			edits: map[int]func([]byte) []byte{3: func(b []byte) []byte {
				return appendRecord(b, kindS2, []byte("\x10not an s2 block"))
			}},
			keep:   [3]int{10, 10, 10},
			damage: []damage{{3, end, errDecompress}},
		},
		{
			name:   "damage in a middle segment",
			edits:  map[int]func([]byte) []byte{2: flip(recOffset(3) + recordHeaderSize)},
			keep:   [3]int{10, 3, 10},
			damage: []damage{{2, recOffset(3), errChecksum}},
		},
		{
			name: "damage in every segment",
			edits: map[int]func([]byte) []byte{
				1: flip(recOffset(0) + recordHeaderSize),
				2: cut(recOffset(7) + 1),
				3: add(make([]byte, 100)),
			},
			keep: [3]int{0, 7, 10},
			damage: []damage{
				{1, recOffset(0), errChecksum},
				{2, recOffset(7), errTorn},
				{3, end, errZeroed},
			},
		},
		{
			name:   "torn segment header",
			edits:  map[int]func([]byte) []byte{2: cut(5)},
			keep:   [3]int{10, 0, 10},
			damage: []damage{{2, 0, errTornSegmentHeader}},
		},
		{
			name:   "bad magic",
			edits:  map[int]func([]byte) []byte{2: flip(1)},
			keep:   [3]int{10, 0, 10},
			damage: []damage{{2, 0, errBadMagic}},
		},
		{
			name:   "zeroed segment",
			edits:  map[int]func([]byte) []byte{2: func(b []byte) []byte { return make([]byte, len(b)) }},
			keep:   [3]int{10, 0, 10},
			damage: []damage{{2, 0, errBadMagic}},
		},
		{
			name:  "empty segment file",
			edits: map[int]func([]byte) []byte{2: cut(0)},
			keep:  [3]int{10, 0, 10},
		},
	}
}

func TestReplayRepairsDamage(t *testing.T) {
	for _, tc := range repairCases() {
		t.Run(tc.name, func(t *testing.T) {
			m := new(Metrics)
			opts := Options{Dir: t.TempDir(), Metrics: m}
			writeFixture(t, opts)
			sizes := map[int]int64{}
			for seg, edit := range tc.edits {
				editFile(t, opts.Dir, seg, edit)
				fi, err := os.Stat(SegmentPath(opts.Dir, seg))
				if err != nil {
					t.Fatal(err)
				}
				sizes[seg] = fi.Size()
			}

			var want []rec
			for seg := 1; seg <= 3; seg++ {
				for k := range tc.keep[seg-1] {
					want = append(want, rec{seg, fixtureRecord(seg, k)})
				}
			}
			got, stats := replayAll(t, opts)
			equalRecs(t, got, want)
			if stats.Corruptions != len(tc.damage) || len(stats.Damage) != len(tc.damage) {
				t.Fatalf("%d corruptions (%v), want %d", stats.Corruptions, stats.Damage, len(tc.damage))
			}
			var truncated int64
			for i, d := range tc.damage {
				var ce *CorruptionError
				if !errors.As(error(stats.Damage[i]), &ce) {
					t.Fatalf("damage %d is not a *CorruptionError", i)
				}
				if ce.Segment != d.seg || ce.Offset != d.offset || ce.File != SegmentPath(opts.Dir, d.seg) {
					t.Errorf("damage %d: %v; want segment %d at offset %d", i, ce, d.seg, d.offset)
				}
				if d.cause != nil && !errors.Is(ce, d.cause) {
					t.Errorf("damage %d: %v; want cause %v", i, ce, d.cause)
				}
				// Repaired on disk: the file ends at the damage.
				fi, err := os.Stat(ce.File)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() != d.offset {
					t.Errorf("segment %d is %d bytes after repair, want %d", d.seg, fi.Size(), d.offset)
				}
				truncated += sizes[d.seg] - d.offset
			}
			if stats.TruncatedBytes != truncated {
				t.Errorf("stats.TruncatedBytes = %d, want %d", stats.TruncatedBytes, truncated)
			}
			if s := m.Snapshot(); s.Corruptions != uint64(len(tc.damage)) || s.TruncatedBytes != uint64(truncated) || s.RecordsReplayed != uint64(len(want)) {
				t.Errorf("metrics %+v", s)
			}

			// The repair holds: replaying again finds the same records and no damage.
			again, stats := replayAll(t, opts)
			equalRecs(t, again, want)
			if stats.Corruptions != 0 {
				t.Fatalf("second replay: %v", stats.Damage)
			}

			// And the log goes on cleanly.
			l := mustOpen(t, opts)
			p := []byte("after the repair")
			want = append(want, rec{mustAppend(t, l, p), p})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, stats = replayAll(t, opts)
			equalRecs(t, got, want)
			if stats.Corruptions != 0 {
				t.Fatalf("replay after append: %v", stats.Damage)
			}
		})
	}
}

func TestReplayUnsupportedVersion(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	writeFixture(t, opts)
	editFile(t, opts.Dir, 2, func(b []byte) []byte { b[4] = formatVersion + 1; return b })
	before, err := os.ReadFile(SegmentPath(opts.Dir, 2))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(opts, func(int, []byte) error { return nil })
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("Replay: %v, want ErrUnsupportedVersion", err)
	}
	after, err := os.ReadFile(SegmentPath(opts.Dir, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("Replay changed a segment of a newer format")
	}
}
