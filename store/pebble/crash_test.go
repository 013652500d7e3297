package pebble

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"hourglass/store"
)

// TestCrash checks the durability promise: whatever Write acknowledged
// before a crash is there after it, and so is every Increment and
// PutIfAbsent that returned before a Write that returned. Writers run
// flat out on an in-memory file system that can be cloned as a crash would
// leave it (everything synced, plus a random part of what was not); the
// test clones it at random moments and opens a store on each clone.
func TestCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	opts := testOptions()
	opts.FS = fs
	opts.MemTableSize = 256 << 10 // flush often: crash during flushes too
	s := openTest(t, "db", opts)

	type acked struct {
		cells   map[string]string // row/qualifier → value, each written once
		counter int64             // highest value Increment returned
		putOnce map[string]string // PutIfAbsent winners
	}
	var (
		mu   sync.Mutex
		ack  = acked{cells: map[string]string{}, putOnce: map[string]string{}}
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	var once sync.Once
	stopWriters := func() { once.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(stopWriters) // runs before openTest's cleanup closes s
	ctx := context.Background()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pendCounter int64
			pendPut := map[string]string{}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var muts []store.Mutation
				for j := 0; j < 50; j++ {
					row := fmt.Sprintf("w%d/%06d\x00%d", w, i, j%5)
					muts = append(muts, store.Mutation{Row: []byte(row), Qualifier: []byte{byte(j)}, Value: []byte(fmt.Sprint(w, i, j))})
				}
				// A Write is recorded as soon as it returns: the next one's
				// sync must not be what makes it durable. Counters and
				// put-if-absent cells are recorded once a Write after them
				// returned.
				if err := s.Write(ctx, store.TableData, muts); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range muts {
					ack.cells[string(m.Row)+"/"+string(m.Qualifier)] = string(m.Value)
				}
				ack.counter = max(ack.counter, pendCounter)
				for k, v := range pendPut {
					ack.putOnce[k] = v
				}
				clear(pendPut)
				mu.Unlock()
				if i%4 != 0 {
					continue
				}
				n, err := s.Increment(ctx, store.TableUID, []byte("ctr"), []byte("n"), 1)
				if err != nil {
					t.Error(err)
					return
				}
				pendCounter = max(pendCounter, n)
				name := fmt.Sprintf("name%d", i%100)
				won, existing, err := s.PutIfAbsent(ctx, store.TableUID, []byte(name), []byte("id"), []byte(fmt.Sprint(w)))
				if err != nil {
					t.Error(err)
					return
				}
				if won {
					pendPut[name] = fmt.Sprint(w)
				} else {
					pendPut[name] = string(existing)
				}
			}
		}()
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 5; round++ {
		time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
		// Snapshot what was acknowledged, then crash: all of it must survive.
		mu.Lock()
		want := acked{cells: make(map[string]string, len(ack.cells)), counter: ack.counter, putOnce: map[string]string{}}
		for k, v := range ack.cells {
			want.cells[k] = v
		}
		for k, v := range ack.putOnce {
			want.putOnce[k] = v
		}
		mu.Unlock()
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(100), RNG: rng})
		checkCrashClone(t, clone, round, want.cells, want.counter, want.putOnce)
	}
	stopWriters()
}

func checkCrashClone(t *testing.T, fs *vfs.MemFS, round int, cells map[string]string, counter int64, putOnce map[string]string) {
	t.Helper()
	opts := testOptions()
	opts.FS = fs
	s, err := Open("db", opts)
	if err != nil {
		t.Fatalf("round %d: open after crash: %v", round, err)
	}
	defer func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx := context.Background()
	got := map[string]string{}
	err = s.Scan(ctx, store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
		got[string(c.Row)+"/"+string(c.Qualifier)] = string(c.Value)
		return true
	})
	if err != nil {
		t.Fatalf("round %d: scan after crash: %v", round, err)
	}
	for k, v := range cells {
		if got[k] != v {
			t.Fatalf("round %d: acknowledged cell %q = %q after crash, want %q", round, k, got[k], v)
		}
	}
	cs, err := s.ReadRow(ctx, store.TableUID, []byte("ctr"))
	// No counter cell is a counter of 0: the crash may come before any
	// Increment was acknowledged (a slow first Write on a loaded machine).
	if err != nil || len(cs) > 1 || len(cs) == 1 && len(cs[0].Value) != 8 || len(cs) == 0 && counter > 0 {
		t.Fatalf("round %d: counter after crash: %v, %v (acknowledged %d)", round, cs, err, counter)
	}
	if len(cs) == 1 {
		if n := int64(binary.BigEndian.Uint64(cs[0].Value)); n < counter {
			t.Fatalf("round %d: counter %d after crash, acknowledged %d", round, n, counter)
		}
	}
	for name, v := range putOnce {
		cs, err := s.ReadRow(ctx, store.TableUID, []byte(name))
		if err != nil || len(cs) != 1 || string(cs[0].Value) != v {
			t.Fatalf("round %d: %s after crash = %v, %v; want %q", round, name, cs, err, v)
		}
	}
	t.Logf("round %d: all %d acknowledged cells survived (%d found), counter ≥ %d", round, len(cells), len(got), counter)
}
