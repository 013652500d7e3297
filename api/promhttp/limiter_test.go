package promhttp

import "testing"

func TestPromLimiter(t *testing.T) {
	l := newPromLimiter(100, 2)
	a, ok := l.acquire(500) // alone: admitted even over the bound
	if !ok {
		t.Fatal("a lone request must be admitted")
	}
	if _, ok := l.acquire(1); ok {
		t.Fatal("admitted past the byte bound")
	}
	l.release(a)
	b, _ := l.acquire(40)
	c, ok := l.acquire(40)
	if !ok {
		t.Fatal("80 of 100 bytes: must fit")
	}
	if _, ok := l.acquire(1); ok {
		t.Fatal("admitted past the request bound")
	}
	if l.grow(c, 70) {
		t.Fatal("grew past the byte bound")
	}
	if !l.grow(c, 60) {
		t.Fatal("40+60 must fit")
	}
	l.release(b)
	l.release(c)
	if l.bytes != 0 || l.reqs != 0 {
		t.Fatalf("leak: %d bytes, %d requests", l.bytes, l.reqs)
	}
}
