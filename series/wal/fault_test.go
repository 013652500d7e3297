package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const faultDir = "/wal"

// idRecord is record seq of writer w: the pair, then padding.
func idRecord(w, seq, size int) []byte {
	p := make([]byte, max(size, 16))
	binary.BigEndian.PutUint64(p, uint64(w))
	binary.BigEndian.PutUint64(p[8:], uint64(seq))
	return p
}

func recordID(p []byte) (w, seq int) {
	return int(binary.BigEndian.Uint64(p)), int(binary.BigEndian.Uint64(p[8:]))
}

func TestGroupCommit(t *testing.T) {
	const writers, perWriter = 16, 40
	fsys := newFaultFS()
	fsys.syncDelay = time.Millisecond // a disk, roughly
	opts := Options{Dir: faultDir, FS: fsys, SegmentSize: 64 << 10}
	l := mustOpen(t, opts)
	syncsBefore := fsys.syncCount()

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for seq := range perWriter {
				p := idRecord(w, seq, 100+w*10)
				pos, err := l.Append(func(_ int, buf []byte) []byte { return append(buf, p...) })
				if err == nil {
					err = l.Commit(pos)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	syncs := fsys.syncCount() - syncsBefore
	commits := writers * perWriter
	t.Logf("%d commits, %d fsyncs (%.1f commits per fsync); stats %+v", commits, syncs, float64(commits)/float64(syncs), l.Stats())
	if syncs >= commits {
		t.Errorf("%d fsyncs for %d commits: commits did not share fsyncs", syncs, commits)
	}
	if s := l.Stats(); s.Commits != uint64(commits) || s.RecordsAppended != uint64(commits) {
		t.Errorf("stats %+v", s)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Every committed record replays, and each writer's in its order.
	got, stats := replayAll(t, opts)
	if len(got) != commits || stats.Corruptions != 0 {
		t.Fatalf("replayed %d records of %d, stats %+v", len(got), commits, stats)
	}
	next := make([]int, writers)
	for _, r := range got {
		w, seq := recordID(r.data)
		if seq != next[w] {
			t.Fatalf("writer %d: record %d replayed where %d was due", w, seq, next[w])
		}
		next[w]++
	}
}

// TestLoneCommitSyncsOnce: a lone writer gets one fsync per commit, no
// more, and does not wait for company.
func TestLoneCommitSyncsOnce(t *testing.T) {
	fsys := newFaultFS()
	l := mustOpen(t, Options{Dir: faultDir, FS: fsys})
	defer l.Close()
	before := fsys.syncCount()
	for i := range 10 {
		mustAppend(t, l, payload(i, 10))
	}
	if got := fsys.syncCount() - before; got != 10 {
		t.Fatalf("%d fsyncs for 10 lone commits", got)
	}
	// Committing again what is already durable costs nothing.
	pos, err := l.Append(func(_ int, b []byte) []byte { return b })
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := l.Commit(pos); err != nil {
			t.Fatal(err)
		}
	}
	if got := fsys.syncCount() - before; got != 11 {
		t.Fatalf("%d fsyncs, want 11", got)
	}
}

func TestCommitPastTheEnd(t *testing.T) {
	l := mustOpen(t, Options{Dir: faultDir, FS: newFaultFS()})
	defer l.Close()
	if err := l.Commit(Pos{Segment: 1, Offset: 1 << 40}); err == nil {
		t.Fatal("Commit of a position never written succeeded")
	}
	if err := l.Commit(Pos{}); err != nil {
		t.Fatalf("Commit of the zero Pos: %v", err)
	}
}

// TestCrash kills the process or the machine while writers append and
// commit, then checks what must survive did.
func TestCrash(t *testing.T) {
	const writers = 4
	for _, tc := range []struct {
		name      string
		mode      SyncMode
		powerLoss bool // the machine dies: only fsynced data survives; else the process dies and the OS keeps what was written
		writeback bool // on a power loss, part of the unsynced tail reached the disk, maybe as zeros
		// what must survive: records whose Commit returned (committed), or
		// whose Append returned (appended)
		mustSurvive string
	}{
		{"always, power loss", SyncAlways, true, false, "committed"},
		{"always, power loss, torn writeback", SyncAlways, true, true, "committed"},
		{"always, kill -9", SyncAlways, false, false, "appended"},
		{"interval, kill -9", SyncInterval, false, false, "appended"},
	} {
		for seed := range uint64(5) {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				fsys := newFaultFS()
				fsys.syncDelay = 100 * time.Microsecond
				opts := Options{Dir: faultDir, FS: fsys, Sync: tc.mode, SyncInterval: time.Millisecond, SegmentSize: 8 << 10}
				l := mustOpen(t, opts)

				crashAt := 30 + rng.IntN(150) // records appended before the crash
				var (
					n       atomic.Int64
					mu      sync.Mutex
					survive = map[[2]int]bool{}
					wg      sync.WaitGroup
				)
				for w := range writers {
					wg.Go(func() {
						for seq := 0; ; seq++ {
							p := idRecord(w, seq, 20+rand.IntN(2000))
							pos, err := l.Append(func(_ int, buf []byte) []byte { return append(buf, p...) })
							if err != nil {
								return // crashed
							}
							if tc.mustSurvive == "appended" {
								mu.Lock()
								survive[[2]int{w, seq}] = true
								mu.Unlock()
							}
							if n.Add(1) == int64(crashAt) {
								if tc.writeback {
									fsys.crashWriteback(tc.powerLoss, rand.New(rand.NewPCG(seed, 8)))
								} else {
									fsys.crash(tc.powerLoss)
								}
							}
							if err := l.Commit(pos); err != nil {
								return
							}
							if tc.mustSurvive == "committed" {
								mu.Lock()
								survive[[2]int{w, seq}] = true
								mu.Unlock()
							}
						}
					})
				}
				wg.Wait()
				l.Close() // fails: its files are gone with the crash

				got, stats := replayAll(t, opts)
				seen := map[[2]int]bool{}
				next := make([]int, writers)
				for _, r := range got {
					w, seq := recordID(r.data)
					if w >= writers || seq != next[w] {
						t.Fatalf("replayed writer %d record %d; want record %d: a gap or garbage", w, seq, next[w])
					}
					next[w]++
					seen[[2]int{w, seq}] = true
				}
				for id := range survive {
					if !seen[id] {
						t.Errorf("record %v was %s before the crash and is lost", id, tc.mustSurvive)
					}
				}
				t.Logf("crash after %d appends: %d records must survive, %d replayed, %d damaged segments",
					crashAt, len(survive), len(got), stats.Corruptions)

				// The log starts again cleanly.
				l = mustOpen(t, opts)
				mustAppend(t, l, []byte("after the crash"))
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				again, stats := replayAll(t, opts)
				if len(again) != len(got)+1 || stats.Corruptions != 0 {
					t.Fatalf("after restart: %d records (want %d), stats %+v", len(again), len(got)+1, stats)
				}
			})
		}
	}
}

// TestIntervalPowerLoss states the loss bound of SyncInterval: a power
// loss keeps everything up to the last fsync and loses what came after.
func TestIntervalPowerLoss(t *testing.T) {
	fsys := newFaultFS()
	opts := Options{Dir: faultDir, FS: fsys, Sync: SyncInterval, SyncInterval: time.Hour}
	l := mustOpen(t, opts)
	var want []rec
	for i := range 20 {
		p := payload(i, 100)
		want = append(want, rec{mustAppend(t, l, p), p}) // Commit returns at once
	}
	if err := l.Sync(); err != nil { // what the background goroutine does every interval
		t.Fatal(err)
	}
	for i := 20; i < 30; i++ {
		mustAppend(t, l, payload(i, 100))
	}
	fsys.crash(true)
	l.Close()
	got, _ := replayAll(t, opts)
	equalRecs(t, got, want)
}

// TestIntervalBackgroundSync: with SyncInterval a goroutine fsyncs on its own.
func TestIntervalBackgroundSync(t *testing.T) {
	fsys := newFaultFS()
	l := mustOpen(t, Options{Dir: faultDir, FS: fsys, Sync: SyncInterval, SyncInterval: time.Millisecond})
	defer l.Close()
	before := fsys.syncCount()
	mustAppend(t, l, []byte("x"))
	for deadline := time.Now().Add(10 * time.Second); fsys.syncCount() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no background fsync")
		}
	}
}

func TestFsyncFailureIsFatal(t *testing.T) {
	eio := &errnoErr{syscall.EIO}
	for _, tc := range []struct {
		name string
		opts Options
		// fail does what first meets the failed fsync and returns its error
		fail func(t *testing.T, l *Log) error
	}{
		{"always: Commit", Options{}, func(t *testing.T, l *Log) error {
			pos, err := l.Append(func(_ int, b []byte) []byte { return append(b, "x"...) })
			if err != nil {
				t.Fatal(err)
			}
			return l.Commit(pos)
		}},
		{"interval: background sync", Options{Sync: SyncInterval, SyncInterval: time.Hour}, func(t *testing.T, l *Log) error {
			pos, err := l.Append(func(_ int, b []byte) []byte { return append(b, "x"...) })
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Commit(pos); err != nil {
				t.Fatalf("SyncInterval Commit waited for an fsync: %v", err)
			}
			return l.Sync()
		}},
		{"rotation", Options{SegmentSize: 1}, func(t *testing.T, l *Log) error {
			_, err := l.Append(func(_ int, b []byte) []byte { return append(b, "x"...) })
			if err != nil {
				return err
			}
			_, err = l.Append(func(_ int, b []byte) []byte { return append(b, "x"...) })
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFaultFS()
			opts := tc.opts
			opts.Dir, opts.FS = faultDir, fsys
			l := mustOpen(t, opts)
			fsys.setFault(func(f *faultFS) { f.syncErr = eio })
			if err := tc.fail(t, l); !errors.Is(err, syscall.EIO) {
				t.Fatalf("got %v, want the fsync error", err)
			}
			fsys.setFault(func(f *faultFS) { f.syncErr = nil }) // a retry would "succeed": it must not be believed
			if err := l.Err(); !errors.Is(err, syscall.EIO) {
				t.Errorf("Err() = %v", err)
			}
			if _, err := l.Append(func(_ int, b []byte) []byte { return b }); !errors.Is(err, syscall.EIO) {
				t.Errorf("Append after a failed fsync: %v", err)
			}
			if err := l.Commit(Pos{Segment: 1, Offset: 9}); !errors.Is(err, syscall.EIO) {
				t.Errorf("Commit after a failed fsync: %v", err)
			}
			if err := l.Sync(); !errors.Is(err, syscall.EIO) {
				t.Errorf("Sync after a failed fsync: %v", err)
			}
			if _, err := l.Rotate(); !errors.Is(err, syscall.EIO) {
				t.Errorf("Rotate after a failed fsync: %v", err)
			}
			if err := l.Close(); !errors.Is(err, syscall.EIO) {
				t.Errorf("Close after a failed fsync: %v", err)
			}
			// The process restarts: what the OS has replays.
			if _, stats := replayAll(t, opts); stats.Corruptions != 0 {
				t.Errorf("replay after restart: %+v", stats)
			}
		})
	}
}

// errnoErr wraps an errno the way *os.PathError does.
type errnoErr struct{ errno syscall.Errno }

func (e *errnoErr) Error() string { return "injected: " + e.errno.Error() }
func (e *errnoErr) Unwrap() error { return e.errno }

func TestWriteFailure(t *testing.T) {
	enospc := &errnoErr{syscall.ENOSPC}
	shortWrite := func(name string, off int64, p []byte) (int, error) { return len(p) / 2, enospc }
	for _, tc := range []struct {
		name     string
		truncErr error // cutting off the partial record fails too
		fatal    bool
		damage   int // damaged segments found by the replay after restart
	}{
		{"short write, cut off", nil, false, 0},
		{"short write, cannot cut off", syscall.EIO, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFaultFS()
			opts := Options{Dir: faultDir, FS: fsys}
			l := mustOpen(t, opts)
			want := []rec{{mustAppend(t, l, payload(0, 500)), payload(0, 500)}}

			fsys.setFault(func(f *faultFS) { f.onWrite, f.truncErr = shortWrite, tc.truncErr })
			_, err := l.Append(func(_ int, b []byte) []byte { return append(b, payload(1, 500)...) })
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append during a short write: %v", err)
			}
			fsys.setFault(func(f *faultFS) { f.onWrite, f.truncErr = nil, nil })
			if got := l.Stats().WriteErrors; got != 1 {
				t.Errorf("Stats().WriteErrors = %d", got)
			}

			_, err = l.Append(func(_ int, b []byte) []byte { return append(b, payload(2, 500)...) })
			if tc.fatal {
				if err == nil || l.Err() == nil {
					t.Fatalf("Append after an uncut partial record: %v; Err() = %v", err, l.Err())
				}
			} else {
				if err != nil {
					t.Fatalf("Append after a failed write: %v", err)
				}
				// In a new segment: build's notes about segment 1 are void.
				want = append(want, rec{2, payload(2, 500)})
			}
			l.Close()
			got, stats := replayAll(t, opts)
			equalRecs(t, got, want)
			if stats.Corruptions != tc.damage {
				t.Errorf("%d damaged segments, want %d: %v", stats.Corruptions, tc.damage, stats.Damage)
			}
		})
	}
}

func TestFailedSegmentCreation(t *testing.T) {
	fsys := newFaultFS()
	opts := Options{Dir: faultDir, FS: fsys}
	l := mustOpen(t, opts)
	defer l.Close()
	mustAppend(t, l, []byte("one"))
	// The header of the next segment cannot be written (disk full).
	fsys.setFault(func(f *faultFS) {
		f.onWrite = func(name string, off int64, p []byte) (int, error) { return 0, &errnoErr{syscall.ENOSPC} }
	})
	if _, err := l.Rotate(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Rotate on a full disk: %v", err)
	}
	fsys.setFault(func(f *faultFS) { f.onWrite = nil })
	if l.Err() != nil || l.Segment() != 1 {
		t.Fatalf("after a failed rotation: Err() = %v, segment %d", l.Err(), l.Segment())
	}
	if seg := mustAppend(t, l, []byte("two")); seg != 1 {
		t.Fatalf("appended to segment %d", seg)
	}
	if n, err := l.Rotate(); err != nil || n != 2 {
		t.Fatalf("Rotate = %d, %v", n, err)
	}
}
