package pebble

import (
	"bytes"
	"context"
	"fmt"

	pebbledb "github.com/cockroachdb/pebble/v2"

	"hourglass/store"
)

// scanner holds the buffers of one Scan, so that a scan allocates nothing
// per cell and, from the pool, little per call.
type scanner struct {
	start, end []byte // encoded bounds of the current range
	row        []byte // decoded row of the current cell
}

// ctxCheckEvery is how many cells Scan visits between two looks at the
// context.
const ctxCheckEvery = 64

// Scan visits the ranges with one iterator: it seeks to each range's start
// unless the iterator already stands at or after it (true of adjacent
// ranges), then steps to the range's end. The row handed to fn is decoded
// into a reused buffer; qualifier and value alias Pebble's memory.
func (s *Store) Scan(ctx context.Context, t store.Table, ranges []store.KeyRange, fn func(c store.Cell) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := begin(ctx, t); err != nil {
		return err
	}
	if err := checkRanges(ranges); err != nil {
		return err
	}
	if len(ranges) == 0 {
		return nil
	}
	sc := s.scanners.Get().(*scanner)
	defer s.scanners.Put(sc)

	it, err := s.dbFor(t).NewIterWithContext(ctx, &pebbledb.IterOptions{
		LowerBound: []byte{byte(t)},
		UpperBound: tableEnd(t),
	})
	if err != nil {
		return fmt.Errorf("store/pebble: scan %s: %w", t, err)
	}
	err = sc.scan(ctx, it, t, ranges, fn)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store/pebble: scan %s: %w", t, cerr)
	}
	return err
}

func (sc *scanner) scan(ctx context.Context, it *pebbledb.Iterator, t store.Table, ranges []store.KeyRange, fn func(c store.Cell) bool) error {
	done := ctx.Done()
	n := 0
	for _, r := range ranges {
		if r.Empty() {
			continue
		}
		sc.start = appendBound(sc.start[:0], t, r.Start)
		end := []byte(nil) // nil: up to the end of the table (the iterator's bound)
		if len(r.End) > 0 {
			sc.end = appendBound(sc.end[:0], t, r.End)
			end = sc.end
		}
		valid := it.Valid()
		if !valid || bytes.Compare(it.Key(), sc.start) < 0 {
			valid = it.SeekGE(sc.start)
		}
		for ; valid; valid = it.Next() {
			key := it.Key()
			if end != nil && bytes.Compare(key, end) >= 0 {
				break
			}
			if n++; n%ctxCheckEvery == 0 && canceled(done) {
				return ctx.Err()
			}
			_, row, qualifier, err := decodeKey(key, sc.row[:0])
			if err != nil {
				return fmt.Errorf("store/pebble: scan %s: %w", t, err)
			}
			sc.row = row
			value, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("store/pebble: scan %s: %w", t, err)
			}
			if !fn(store.Cell{Row: row, Qualifier: qualifier, Value: value}) {
				return nil
			}
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("store/pebble: scan %s: %w", t, err)
		}
		if !valid {
			return nil // no key left in the table: the other ranges are empty
		}
		if canceled(done) {
			return ctx.Err()
		}
	}
	return nil
}

// canceled reports whether done, a context's Done channel, is closed.
func canceled(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// checkRanges is store.CheckRanges under this package's name.
func checkRanges(ranges []store.KeyRange) error {
	if err := store.CheckRanges(ranges); err != nil {
		return fmt.Errorf("store/pebble: %w", err)
	}
	return nil
}
