package wal_test

import (
	"fmt"
	"log"
	"os"

	"hourglass/series/wal"
)

// The head's life cycle: replay what an earlier process left, then open the
// log, append and commit before acknowledging, and drop segments whose
// records are all in the store.
func Example() {
	dir, err := os.MkdirTemp("", "wal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	opts := wal.Options{Dir: dir, Sync: wal.SyncAlways}

	for run := 1; run <= 2; run++ {
		stats, err := wal.Replay(opts, func(segment int, rec []byte) error {
			fmt.Printf("run %d: replayed %q from segment %d\n", run, rec, segment)
			return nil
		})
		if err != nil {
			log.Fatal(err) // an I/O error: damage is repaired, not returned
		}
		fmt.Printf("run %d: %d records, %d damaged segments\n", run, stats.Records, stats.Corruptions)

		l, err := wal.Open(opts)
		if err != nil {
			log.Fatal(err)
		}
		lastSeg := 0
		for _, point := range []string{"cpu 1", "cpu 2"} {
			pos, err := l.Append(func(segment int, buf []byte) []byte {
				if segment != lastSeg { // first record of a segment: define the series again
					buf = append(buf, "def cpu; "...)
					lastSeg = segment
				}
				return append(buf, point...)
			})
			if err != nil {
				log.Fatal(err)
			}
			if err := l.Commit(pos); err != nil {
				log.Fatal(err) // a failed fsync: stop the process
			}
		}
		if err := l.Truncate(l.Segment()); err != nil { // pretend the store has it all
			log.Fatal(err)
		}
		if err := l.Close(); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// run 1: 0 records, 0 damaged segments
	// run 2: replayed "def cpu; cpu 1" from segment 1
	// run 2: replayed "cpu 2" from segment 1
	// run 2: 2 records, 0 damaged segments
}
