package store

import (
	"errors"
	"testing"
	"time"
)

func TestGuardWaitsThenRefuses(t *testing.T) {
	var g Guard
	if err := g.Enter(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned with an operation under way")
	case <-time.After(20 * time.Millisecond):
	}
	g.Leave()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the last Leave")
	}
	if err := g.Enter(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Enter after Close: %v", err)
	}
	if err := g.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestCheckRanges(t *testing.T) {
	r := func(s, e string) KeyRange {
		kr := KeyRange{Start: []byte(s)}
		if e != "" {
			kr.End = []byte(e)
		}
		return kr
	}
	for _, c := range []struct {
		ranges []KeyRange
		ok     bool
	}{
		{nil, true},
		{[]KeyRange{r("a", "b"), r("b", "c"), r("d", "")}, true},
		{[]KeyRange{r("a", "c"), r("b", "d")}, false},             // overlap
		{[]KeyRange{r("c", "d"), r("a", "b")}, false},             // not sorted
		{[]KeyRange{r("a", ""), r("b", "c")}, false},              // unbounded, then more
		{[]KeyRange{r("a", "b"), r("z", "c"), r("b", "c")}, true}, // an empty range is ignored
	} {
		err := CheckRanges(c.ranges)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrRangeOrder)) {
			t.Errorf("%q: %v, want ok=%v", c.ranges, err, c.ok)
		}
	}
	if !r("b", "a").Empty() || r("a", "").Empty() || r("a", "b").Empty() {
		t.Error("Empty")
	}
}
