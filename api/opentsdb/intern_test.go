package opentsdb

import (
	"fmt"
	"testing"
)

// TestSeriesCacheFollows: a lookup tries the entry looked up after the
// previous one last time; it returns it only for the same key, and never
// an entry the cache has forgotten (a reset) or one of other limits.
func TestSeriesCacheFollows(t *testing.T) {
	var c seriesCache
	l := Limits{}
	keys := []string{"a x=1", "b x=2", "c x=3"}
	want := map[string]*seriesEntry{}
	for _, k := range keys {
		want[k] = c.put([]byte(k), l, k, nil, true)
	}
	for round := 0; round < 3; round++ { // the same order: predicted after the first round
		for _, k := range keys {
			if got := c.get([]byte(k), l); got != want[k] {
				t.Fatalf("round %d: get(%q) = %p, want %p", round, k, got, want[k])
			}
		}
	}
	if c.want("a x=1") == nil || c.want("a x=1").next != want["b x=2"] {
		t.Fatalf("a's next is not b")
	}
	// Another order: a after c, then c (a's next is b): each still its own.
	for _, k := range []string{"c x=3", "a x=1", "c x=3", "b x=2", "zz"} {
		got := c.get([]byte(k), l)
		if got != want[k] {
			t.Fatalf("get(%q) = %v, want %v", k, got, want[k])
		}
	}
	// Other limits: nothing, predicted or not.
	c.get([]byte("a x=1"), l)
	if got := c.get([]byte("b x=2"), Limits{MaxTags: 3}); got != nil {
		t.Fatalf("get under other limits = %v, want nil", got)
	}
	// A reset forgets every entry; the old ones are not predicted.
	c.get([]byte("a x=1"), l)
	for i := 0; len(c.m) > 1 || i == 0; i++ {
		c.put(fmt.Appendf(nil, "fill%d", i), l, "m", nil, true)
		if i > seriesCacheMaxEntries+1 {
			t.Fatal("the cache never reset")
		}
	}
	if got := c.get([]byte("b x=2"), l); got != nil {
		t.Fatalf("after the reset get(b) = %v, want nil", got)
	}
}

// want is the map's entry of k.
func (c *seriesCache) want(k string) *seriesEntry { return c.m[k] }
