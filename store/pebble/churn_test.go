//go:build linux

package pebble

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hourglass/store"
)

// TestChurnMemory, a measurement run only when HG_CHURN is set (seconds):
// a store at the server's defaults loaded with HG_CHURN_MB (600) MB of 1
// KiB cells, then read by 6 readers at random rows for HG_CHURN seconds,
// so that the block cache misses and evicts all the time; it prints every
// second the memory outside Go beyond what Pebble counts ("rest") and the
// trims, then the CPU per read. HG_CHURN_MMAP sets glibc's mmap threshold
// (0: glibc's own, rising), HG_CHURN_TRIM the trimmer's period in ms.
//
//	HG_CHURN=150 HG_CHURN_MMAP=0 go test -run TestChurnMemory -v ./store/pebble/
func TestChurnMemory(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("HG_CHURN"))
	if secs <= 0 {
		t.Skip("HG_CHURN not set: a measurement")
	}
	if v, ok := os.LookupEnv("HG_CHURN_MMAP"); ok {
		n, _ := strconv.Atoi(v)
		mallocOnce.Do(func() { // instead of Open's settings
			setMallocArenas(mallocArenas)
			if n > 0 {
				setMmapThreshold(n, mallocMmaps)
			}
		})
	}
	period := trimEvery
	if n, _ := strconv.Atoi(os.Getenv("HG_CHURN_TRIM")); n > 0 {
		period = time.Duration(n) * time.Millisecond
	}
	s, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.trimmer == nil {
		t.Skip("not glibc")
	}
	close(s.trimStop)
	<-s.trimDone
	s.trimmer = nil
	var trimNs atomic.Int64
	tr := newTrimmer(s)
	tr.trim = func() {
		t0 := time.Now()
		trimMalloc()
		trimNs.Add(int64(time.Since(t0)))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); tr.run(period, stop) }()

	ctx := context.Background()
	var written atomic.Int64 // rows written
	var wg sync.WaitGroup
	var end time.Time
	{ // preload: HG_CHURN_MB of 1 KiB cells, 16 a row, flat out
		mb, _ := strconv.Atoi(os.Getenv("HG_CHURN_MB"))
		mb = cmp.Or(mb, 600)
		r := rand.New(rand.NewPCG(1, 2))
		val := make([]byte, 1024)
		row := int64(0)
		for row*16 < int64(mb)<<10 {
			muts := make([]store.Mutation, 0, 1600)
			for range 100 {
				k := binary.BigEndian.AppendUint64([]byte{1}, uint64(row))
				for q := range 16 {
					for i := 0; i < len(val); i += 8 {
						binary.LittleEndian.PutUint64(val[i:], r.Uint64()&0x0f0f0f0f0f0f0f0f)
					}
					muts = append(muts, store.Mutation{Row: k, Qualifier: []byte{byte(q)}, Value: append([]byte(nil), val...)})
				}
				row++
			}
			if err := s.Write(ctx, store.TableData, muts); err != nil {
				t.Fatal(err)
			}
		}
		written.Store(row)
		fmt.Printf("preloaded %d rows\n", row)
	}
	var reads atomic.Int64
	cpu0 := procCPU()
	end = time.Now().Add(time.Duration(secs) * time.Second)
	for g := range 6 { // readers at random rows
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for time.Now().Before(end) {
				n := written.Load()
				from := r.Int64N(n)
				k0 := binary.BigEndian.AppendUint64([]byte{1}, uint64(from))
				k1 := binary.BigEndian.AppendUint64([]byte{1}, uint64(from+8))
				_ = s.Scan(ctx, store.TableData, []store.KeyRange{{Start: k0, End: k1}}, func(store.Cell) bool { return true })
				reads.Add(1)
			}
		}()
	}
	t0 := time.Now()
	for time.Now().Before(end) {
		time.Sleep(time.Second)
		m := s.Metrics()
		a, g := procAnon(), goMapped()
		c := m.BlockCacheBytes + int64(m.MemTableBytes+m.ZombieMemTableBytes)
		fmt.Printf("%4.0f anon %4d go %4d cache %4d mem %4d zombie %3d rest %4d trims %d trim-ms %d\n",
			time.Since(t0).Seconds(), a>>20, g>>20, m.BlockCacheBytes>>20, m.MemTableBytes>>20, m.ZombieMemTableBytes>>20, (a-g-c)>>20, tr.trims.Load(), trimNs.Load()/1e6)
	}
	wg.Wait()
	fmt.Printf("reads %d, CPU %.1f s, %.1f µs a read\n", reads.Load(), (procCPU() - cpu0).Seconds(), float64((procCPU()-cpu0).Microseconds())/float64(reads.Load()))
	close(stop)
	<-done
}

func procCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
