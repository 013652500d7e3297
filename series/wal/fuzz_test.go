package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/klauspost/compress/s2"
)

// referenceRecords decodes a segment the slow, obvious way, as the format
// page describes it: the records up to the first one that is not intact.
func referenceRecords(data []byte) (recs [][]byte, end int) {
	if len(data) < 8 || string(data[:4]) != "HGWL" {
		return nil, 0
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	off := 8
	for len(data)-off >= 9 {
		h := data[off : off+9]
		n := int(binary.BigEndian.Uint32(h[1:5]))
		if n > len(data)-off-9 {
			break
		}
		body := data[off+9 : off+9+n]
		if crc32.Checksum(append(slices.Clone(h[:5]), body...), tab) != binary.BigEndian.Uint32(h[5:9]) {
			break
		}
		switch h[0] {
		case 1:
			recs = append(recs, slices.Clone(body))
		case 2:
			if dl, err := s2.DecodedLen(body); err != nil || dl > MaxRecordSize {
				return recs, off
			}
			dec, err := s2.Decode(nil, body)
			if err != nil {
				return recs, off
			}
			recs = append(recs, dec)
		default:
			return recs, off
		}
		off += 9 + n
	}
	return recs, off
}

// FuzzReplay feeds arbitrary bytes to Replay as a segment file: it must not
// panic, must return exactly the records whose checksum matched up to the
// first damage, must cut the file there, and the cut file must replay clean.
func FuzzReplay(f *testing.F) {
	seg := appendSegmentHeader(nil)
	f.Add([]byte{})
	f.Add(seg)
	f.Add(seg[:5])
	valid := appendRecord(seg, kindRaw, nil)
	valid = appendRecord(valid, kindRaw, []byte("hello, wal"))
	valid = appendRecord(valid, kindS2, s2.Encode(nil, bytes.Repeat([]byte("abcd"), 100)))
	valid = appendRecord(valid, kindRaw, payload(3, 300))
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add(append(slices.Clone(valid), make([]byte, 20)...))
	f.Add(appendRecord(slices.Clone(seg), kindS2, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0})) // claims 4 GiB decoded

	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := newFaultFS()
		path := SegmentPath(faultDir, 1)
		fsys.put(path, data)
		opts := Options{Dir: faultDir, FS: fsys}
		var got [][]byte
		stats, err := Replay(opts, func(_ int, rec []byte) error {
			got = append(got, slices.Clone(rec))
			return nil
		})
		if errors.Is(err, ErrUnsupportedVersion) {
			return
		}
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		want, end := referenceRecords(data)
		if len(got) != len(want) {
			t.Fatalf("Replay returned %d records, the reference decoder %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("record %d differs from the reference decoder's", i)
			}
		}
		repaired := fsys.contents(path)
		if len(data) > 0 && len(repaired) != end {
			t.Fatalf("file cut at %d, want %d", len(repaired), end)
		}
		if !bytes.HasPrefix(data, repaired) {
			t.Fatal("the repaired file is not a prefix of the original")
		}
		if damaged := len(repaired) < len(data); damaged != (stats.Corruptions == 1) {
			t.Fatalf("file cut from %d to %d bytes, %d corruptions counted", len(data), len(repaired), stats.Corruptions)
		}
		again, stats := replayAll(t, opts)
		if stats.Corruptions != 0 || len(again) != len(got) {
			t.Fatalf("second replay: %d records of %d, %d corruptions", len(again), len(got), stats.Corruptions)
		}
	})
}
