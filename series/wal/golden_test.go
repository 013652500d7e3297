package wal

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenRecords are the records of the golden segments.
func goldenRecords() [][]byte {
	seq := make([]byte, 256)
	for i := range seq {
		seq[i] = byte(i * 7)
	}
	return [][]byte{
		{},
		[]byte("hello"),
		bytes.Repeat([]byte("abcd"), 250), // compresses
		seq,                               // does not
	}
}

// TestGolden freezes the format. The writer must produce the raw golden
// byte for byte; the reader must read both goldens, whatever later versions
// of the writer (or of the s2 encoder) produce. See testdata/README.md.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file     string
		compress bool
		exact    bool // the writer must reproduce it byte for byte
	}{
		{"segment-v1-raw.golden", false, true},
		{"segment-v1-s2.golden", true, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), Compress: tc.compress}
			l := mustOpen(t, opts)
			for _, r := range goldenRecords() {
				mustAppend(t, l, r)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			written, err := os.ReadFile(SegmentPath(opts.Dir, 1))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, written, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if tc.exact && !bytes.Equal(written, want) {
				t.Errorf("the writer's segment differs from %s: the format changed (run with -update only if that is intended, and bump the version)", golden)
			}

			// The golden reads back.
			dir := t.TempDir()
			if err := os.WriteFile(SegmentPath(dir, 1), want, 0o644); err != nil {
				t.Fatal(err)
			}
			got, stats := replayAll(t, Options{Dir: dir})
			var wantRecs []rec
			for _, r := range goldenRecords() {
				wantRecs = append(wantRecs, rec{1, r})
			}
			equalRecs(t, got, wantRecs)
			if stats.Corruptions != 0 {
				t.Fatalf("golden has damage: %v", stats.Damage)
			}
		})
	}
}
