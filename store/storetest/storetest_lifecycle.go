package storetest

import (
	"context"
	"errors"
	"testing"

	"hourglass/store"
)

func testClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	write(t, s, store.TableData, set("r", "q", "v"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ops := map[string]func() error{
		"Write": func() error { return s.Write(ctx, store.TableData, []store.Mutation{set("r", "q", "w")}) },
		"Scan": func() error {
			return s.Scan(ctx, store.TableData, []store.KeyRange{all}, func(store.Cell) bool { return true })
		},
		"ReadRow": func() error { _, err := s.ReadRow(ctx, store.TableData, b("r")); return err },
		"Increment": func() error {
			_, err := s.Increment(ctx, store.TableData, b("r"), b("n"), 1)
			return err
		},
		"PutIfAbsent": func() error {
			_, _, err := s.PutIfAbsent(ctx, store.TableData, b("r"), b("p"), b("v"))
			return err
		},
		"DeleteRange": func() error { return s.DeleteRange(ctx, store.TableData, all) },
		"Close":       s.Close,
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want store.ErrClosed", name, err)
		}
	}
}

func testReopen(t *testing.T, open func(t *testing.T, name string) store.Store) {
	ctx := context.Background()
	name := t.TempDir()
	s := open(t, name)
	m := model{}
	fill(t, s, m, store.TableData, 9)
	fill(t, s, m, store.TableMeta, 10)
	for i := 0; i < 3; i++ {
		if _, err := s.Increment(ctx, store.TableUID, b("ctr"), b("metric"), 1); err != nil {
			t.Fatalf("Increment: %v", err)
		}
	}
	if _, _, err := s.PutIfAbsent(ctx, store.TableUID, b("name"), b("id"), b("\x00\x00\x01")); err != nil {
		t.Fatalf("PutIfAbsent: %v", err)
	}
	m.apply(store.TableUID, []store.Mutation{set("ctr", "metric", be(3)), set("name", "id", "\x00\x00\x01")})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, name)
	checkAll(t, s, m)
	// Counters count on and put-if-absent remembers.
	if n, err := s.Increment(ctx, store.TableUID, b("ctr"), b("metric"), 1); err != nil || n != 4 {
		t.Fatalf("Increment after reopen = %d, %v; want 4", n, err)
	}
	if written, existing, err := s.PutIfAbsent(ctx, store.TableUID, b("name"), b("id"), b("other")); err != nil || written || string(existing) != "\x00\x00\x01" {
		t.Fatalf("PutIfAbsent after reopen = %v, %q, %v; want not written, existing %q", written, existing, err, "\x00\x00\x01")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func testReopenAfterDeletes(t *testing.T, open func(t *testing.T, name string) store.Store) {
	ctx := context.Background()
	name := t.TempDir()
	s := open(t, name)
	m := model{}
	fill(t, s, m, store.TableData, 11)
	r := store.KeyRange{Start: b("ab"), End: b("b")}
	if err := s.DeleteRange(ctx, store.TableData, r); err != nil {
		t.Fatalf("DeleteRange: %v", err)
	}
	m.deleteRange(store.TableData, r)
	muts := []store.Mutation{del("\x00", ""), del("\xff", "q"), set("ab\x00", "after", "delete")}
	write(t, s, store.TableData, muts...)
	m.apply(store.TableData, muts)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = open(t, name)
	defer s.Close()
	checkAll(t, s, m)
}
