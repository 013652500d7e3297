package storetest

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"hourglass/store"
)

func be(n int64) string { return string(binary.BigEndian.AppendUint64(nil, uint64(n))) }

func testIncrement(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		row, qualifier string
		delta, want    int64
	}{
		{"ctr", "a", 1, 1}, // a missing cell counts from 0
		{"ctr", "a", 41, 42},
		{"ctr", "a", -50, -8},
		{"ctr", "a", 0, -8},
		{"ctr", "b", -3, -3}, // cells count separately
		{"ctr", "", 7, 7},    // the empty qualifier is a qualifier
		{"ctr\x00", "a", 5, 5},
		{"ctr", "a", 9, 1},
	}
	for _, tc := range tests {
		got, err := s.Increment(ctx, store.TableUID, []byte(tc.row), []byte(tc.qualifier), tc.delta)
		if err != nil || got != tc.want {
			t.Fatalf("Increment(%q, %q, %d) = %d, %v; want %d", tc.row, tc.qualifier, tc.delta, got, err, tc.want)
		}
	}
	// The value is a big-endian int64 cell, like any other.
	checkCells(t, "ReadRow", readRow(t, s, store.TableUID, "ctr"), []cell{
		{"ctr", "", be(7)}, {"ctr", "a", be(1)}, {"ctr", "b", be(-3)},
	})
	// A counter written by Write counts on.
	write(t, s, store.TableUID, set("ctr", "w", be(1000)))
	if got, err := s.Increment(ctx, store.TableUID, b("ctr"), b("w"), 1); err != nil || got != 1001 {
		t.Fatalf("Increment of a written counter = %d, %v; want 1001", got, err)
	}
	// A cell that is not 8 bytes is not a counter.
	write(t, s, store.TableUID, set("ctr", "x", "abc"))
	if got, err := s.Increment(ctx, store.TableUID, b("ctr"), b("x"), 1); err == nil {
		t.Fatalf("Increment of a 3-byte cell = %d, nil; want an error", got)
	}
	checkCells(t, "cell after a failed Increment", readRow(t, s, store.TableUID, "ctr")[3:], []cell{
		{"ctr", "w", be(1001)}, {"ctr", "x", "abc"},
	})
}

const goroutines = 16

func testIncrementConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const per = 50
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		seen  = map[int64]int{}
		start = make(chan struct{})
	)
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < per; i++ {
				n, err := s.Increment(ctx, store.TableUID, b("ctr"), b("n"), 1)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen[n]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Increment: %v", err)
	}
	// Every increment returned a different value: 1 to goroutines×per.
	for n := int64(1); n <= goroutines*per; n++ {
		if seen[n] != 1 {
			t.Fatalf("value %d returned %d times, want once", n, seen[n])
		}
	}
	checkCells(t, "ReadRow", readRow(t, s, store.TableUID, "ctr"), []cell{{"ctr", "n", be(goroutines * per)}})
}

func testPutIfAbsent(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		row, qualifier, value string
		wantWritten           bool
		wantExisting          string
	}{
		{"name", "id", "first", true, ""},
		{"name", "id", "second", false, "first"},
		{"name", "id", "", false, "first"},
		{"name", "", "empty qualifier", true, ""},
		{"name\x00", "id", "", true, ""}, // an empty value is a value
		{"name\x00", "id", "x", false, ""},
		{"name", "id\x00", "other", true, ""},
	}
	for _, tc := range tests {
		written, existing, err := s.PutIfAbsent(ctx, store.TableUID, []byte(tc.row), []byte(tc.qualifier), []byte(tc.value))
		if err != nil || written != tc.wantWritten || (!written && string(existing) != tc.wantExisting) {
			t.Fatalf("PutIfAbsent(%q, %q, %q) = %v, %q, %v; want %v, %q", tc.row, tc.qualifier, tc.value, written, existing, err, tc.wantWritten, tc.wantExisting)
		}
	}
	checkCells(t, "Scan", scan(t, s, store.TableUID, all), []cell{
		{"name", "", "empty qualifier"}, {"name", "id", "first"}, {"name", "id\x00", "other"}, {"name\x00", "id", ""},
	})
	// A cell deleted is absent again.
	write(t, s, store.TableUID, del("name", "id"))
	if written, _, err := s.PutIfAbsent(ctx, store.TableUID, b("name"), b("id"), b("third")); err != nil || !written {
		t.Fatalf("PutIfAbsent after delete = %v, %v; want written", written, err)
	}
	checkCells(t, "ReadRow", readRow(t, s, store.TableUID, "name")[1:2], []cell{{"name", "id", "third"}})
}

func testPutIfAbsentConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	type result struct {
		written  bool
		existing string
		value    string
		err      error
	}
	for round := 0; round < 5; round++ {
		row := []byte(fmt.Sprint("race", round))
		results := make(chan result, goroutines)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := fmt.Sprint("writer", g)
				<-start
				written, existing, err := s.PutIfAbsent(ctx, store.TableUID, row, b("id"), []byte(v))
				results <- result{written, string(existing), v, err}
			}()
		}
		close(start)
		wg.Wait()
		close(results)
		winner := ""
		var losers []string
		for r := range results {
			switch {
			case r.err != nil:
				t.Fatalf("PutIfAbsent: %v", r.err)
			case r.written && winner != "":
				t.Fatalf("two writers won: %q and %q", winner, r.value)
			case r.written:
				winner = r.value
			default:
				losers = append(losers, r.existing)
			}
		}
		if winner == "" {
			t.Fatal("no writer won")
		}
		for _, l := range losers {
			if l != winner {
				t.Fatalf("a loser saw %q, the winner wrote %q", l, winner)
			}
		}
		checkCells(t, "ReadRow", readRow(t, s, store.TableUID, string(row)), []cell{{string(row), "id", winner}})
	}
}
