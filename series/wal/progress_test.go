package wal

import (
	"testing"
)

// TestReplayProgress: the hook sees every record, in order, with the
// offset just past it, and each segment ends at its size.
func TestReplayProgress(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	writeFixture(t, opts)
	type call struct {
		seg       int
		off, size int64
	}
	var calls []call
	opts.ReplayProgress = func(seg int, off, size int64) { calls = append(calls, call{seg, off, size}) }
	if _, err := Replay(opts, func(int, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3*recsPerSeg {
		t.Fatalf("%d calls, want %d", len(calls), 3*recsPerSeg)
	}
	for i, c := range calls {
		seg, k := i/recsPerSeg+1, i%recsPerSeg
		if c.seg != seg || c.off != recOffset(k+1) || c.size != recOffset(recsPerSeg) {
			t.Errorf("call %d: %+v, want segment %d offset %d size %d", i, c, seg, recOffset(k+1), recOffset(recsPerSeg))
		}
	}
}
