package series_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"hourglass/rowkey"
)

// TestFlushedChunksAreNotKept: once a series' chunks are sealed and
// written, nothing of the series' lists keeps them: the slots its open and
// pending lists freed are cleared (they held each series' last chunk, the
// soak's leak of issue 11 item 7).
func TestFlushedChunksAreNotKept(t *testing.T) {
	e := openEnv(t, t.TempDir(), nil)
	defer e.close()
	ss, _ := samplesFor(20, 30, rowkey.HourMs/10) // three hours of points per series
	e.append(ss...)
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The flusher drops written chunks from the pending lists just after
	// Flush's wait returns: poll, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		stale, pending := e.head.StaleTailSlots()
		if pending == 0 {
			if stale != 0 {
				t.Fatalf("%d freed list slots still point at chunks", stale)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks still pending 10 s after Flush", pending)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWrittenChunksAreCollected: the points of chunks sealed and written
// are garbage once written: neither the series' lists nor the flusher's
// queue keep them (its taken slots are cleared).
func TestWrittenChunksAreCollected(t *testing.T) {
	e := openEnv(t, t.TempDir(), nil)
	defer e.close()
	ss, _ := samplesFor(20, 30, rowkey.HourMs/10)
	e.append(ss...)
	ws := e.head.SealAllWeak()
	if len(ws) == 0 {
		t.Fatal("no chunk sealed")
	}
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		alive := 0
		for _, w := range ws {
			if w.Value() != nil {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d written chunks' points still reachable 10 s after Flush", alive, len(ws))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
