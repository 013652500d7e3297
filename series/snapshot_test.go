package series_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/dbtest"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// noCheckpoint is a store without Checkpoint, as Bigtable's.
type noCheckpoint struct{ store.Store }

// copyDir copies a snapshot away as an operator would (cp -a), so the
// head opened on it shares no file with the live one.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
}

// TestSnapshotHoldsWhatWasAcknowledged: points in the store only, in the
// store and the WAL both (flushed, WAL not yet truncated), in the WAL only,
// an overwrite of a flushed point and a delete are all in the snapshot
// exactly once, and what is written after it is not.
func TestSnapshotHoldsWhatWasAcknowledged(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, filepath.Join(dir, "live"), func(o *series.Options) { o.SweepInterval = time.Hour })
	ss, want := samplesFor(6, 120, 10_000)
	e.append(ss[:len(ss)/2]...)
	if err := e.head.Flush(context.Background()); err != nil { // in the store, and still in the WAL
		t.Fatal(err)
	}
	e.append(ss[len(ss)/2:]...)
	// Overwrite a flushed point: the WAL's order must win over the store's copy.
	over := series.Sample{Labels: host(0), T: t0, V: chunk.Int(-7)}
	e.append(over)
	want[host(0).String()][0].V = over.V
	// Delete host 1's first 10 points.
	e.delete([]series.Labels{host(1)}, t0, t0+9*10_000)
	want[host(1).String()] = want[host(1).String()][10:]

	snap := filepath.Join(dir, "snapshots", "s1")
	st, err := e.head.TakeSnapshot(context.Background(), snap, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.WALSegments == 0 || st.WALBytes == 0 {
		t.Errorf("snapshot stats %+v: no WAL copied", st)
	}
	if _, err := os.Stat(snap + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory is left: %v", err)
	}
	if _, err := e.head.TakeSnapshot(context.Background(), snap, false); err == nil {
		t.Error("a snapshot into an existing directory succeeded")
	}
	after := series.Sample{Labels: host(2), T: t0 + 3*rowkey.HourMs, V: chunk.Int(1)}
	e.append(after)
	e.close()

	restored := filepath.Join(dir, "restored")
	copyDir(t, snap, restored)
	for range 2 { // and again, once the first start has replayed the WAL into the store
		r := openEnv(t, restored, nil)
		equalPoints(t, r.readNonEmpty("sys.cpu", t0, t0+4*rowkey.HourMs), want)
		r.close()
	}
}

// TestSnapshotSkipHead copies the store alone: flushed points are there,
// points only in the WAL are not.
func TestSnapshotSkipHead(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, filepath.Join(dir, "live"), nil)
	e.append(series.Sample{Labels: host(0), T: t0, V: chunk.Int(1)})
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.append(series.Sample{Labels: host(0), T: t0 + 1000, V: chunk.Int(2)})
	snap := filepath.Join(dir, "snap")
	st, err := e.head.TakeSnapshot(context.Background(), snap, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.WALSegments != 0 {
		t.Errorf("skip_head copied %d WAL segments", st.WALSegments)
	}
	e.close()
	r := openEnv(t, snap, nil)
	defer r.close()
	equalPoints(t, r.read("sys.cpu", t0, t0+rowkey.HourMs), map[string][]chunk.Point{host(0).String(): {{T: t0, V: chunk.Int(1)}}})
}

// TestSnapshotWhileWriting: writers go on during the snapshot; every batch
// acknowledged before the call is in it, every batch begun after it
// returned is not; and small WAL segments make truncation race the copy.
func TestSnapshotWhileWriting(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, filepath.Join(dir, "live"), func(o *series.Options) {
		o.WAL.SegmentSize = 4 << 10
		o.WALMaxBytes = 16 << 10
		o.SweepInterval = 5 * time.Millisecond
	})
	const writers, maxBatches = 3, 3000
	var acked, begun [writers]atomic.Int64 // batches acknowledged / begun per writer
	stop := make(chan struct{})
	var wg sync.WaitGroup
	batch := func(w, i int) []series.Sample {
		out := make([]series.Sample, 4)
		for j := range out {
			l := series.MakeLabels("snap.w", []series.Tag{{Key: "w", Value: fmt.Sprint(w)}, {Key: "s", Value: fmt.Sprint(j)}})
			out[j] = series.Sample{Labels: l, T: t0 + int64(i)*1000, V: chunk.Int(int64(i))}
		}
		return out
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxBatches; i++ {
				select {
				case <-stop:
					return
				default:
				}
				begun[w].Store(int64(i + 1))
				ss := batch(w, i)
				if err := e.head.Append(context.Background(), ss, make([]error, len(ss))); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	for acked[writers-1].Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	var before, after [writers]int64
	for w := range writers {
		before[w] = acked[w].Load()
	}
	snap := filepath.Join(dir, "snap")
	if _, err := e.head.TakeSnapshot(context.Background(), snap, false); err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		after[w] = begun[w].Load()
	}
	close(stop)
	wg.Wait()
	e.crash()

	r := openEnv(t, snap, nil)
	defer r.close()
	got := r.read("snap.w", t0, t0+int64(maxBatches)*1000)
	for w := range writers {
		for j := range 4 {
			key := series.MakeLabels("snap.w", []series.Tag{{Key: "w", Value: fmt.Sprint(w)}, {Key: "s", Value: fmt.Sprint(j)}}).String()
			have := map[int64]bool{}
			for _, p := range got[key] {
				have[p.T] = true
			}
			for i := range before[w] {
				if !have[t0+i*1000] {
					t.Fatalf("%s: batch %d, acknowledged before the snapshot, is missing (%d points)", key, i, len(have))
				}
			}
			for i := after[w]; i < maxBatches; i++ {
				if have[t0+i*1000] {
					t.Fatalf("%s: batch %d, begun after the snapshot, is in it", key, i)
				}
			}
		}
	}
	t.Logf("acknowledged before: %v, begun after: %v", before, after)
}

// TestSnapshotUnsupported: a store that cannot copy itself says so.
func TestSnapshotUnsupported(t *testing.T) {
	dir := t.TempDir()
	e := dbtest.Open(t, dir, nil, func(st store.Store) store.Store { return noCheckpoint{st} })
	defer e.Close()
	h := e.DB
	if _, err := h.TakeSnapshot(context.Background(), filepath.Join(dir, "snap"), false); !errors.Is(err, series.ErrSnapshotUnsupported) {
		t.Fatalf("got %v, want ErrSnapshotUnsupported", err)
	}
}
