package series_test

import (
	"path/filepath"
	"testing"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
)

// TestReplaysFormat1Samples: a WAL segment written before the delta-coded
// samples entry (format 1's 0x02 entries, s2-compressed as the server wrote
// them) still replays into the head.
func TestReplaysFormat1Samples(t *testing.T) {
	replaysOldSamples(t, series.WALRecordV1)
}

// TestReplaysDeltaSamples: a segment of delta-coded samples (0x06), as the
// head wrote them before series-state samples (0x07), still replays.
func TestReplaysDeltaSamples(t *testing.T) {
	replaysOldSamples(t, series.WALRecordDelta)
}

func replaysOldSamples(t *testing.T, record func([]series.Labels, [][]chunk.Point) []byte) {
	dir := t.TempDir()
	ss, want := samplesFor(6, 50, 10_000)
	byLabels := map[series.Labels]int{}
	var ls []series.Labels
	var pts [][]chunk.Point
	for _, s := range ss {
		i, ok := byLabels[s.Labels]
		if !ok {
			i = len(ls)
			byLabels[s.Labels] = i
			ls = append(ls, s.Labels)
			pts = append(pts, nil)
		}
		pts[i] = append(pts[i], chunk.Point{T: s.T, V: s.V})
	}
	w, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(func(_ int, buf []byte) []byte { return append(buf, record(ls, pts)...) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	e := openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	e.close()
}
