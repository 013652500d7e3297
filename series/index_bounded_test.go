package series

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type boundedLiteral struct{ key, value string }

func (m boundedLiteral) Key() string                    { return m.key }
func (m boundedLiteral) Matches(v string, ok bool) bool { return ok && v == m.value }
func (m boundedLiteral) Literals() ([]string, bool)     { return []string{m.value}, true }

type boundedSuffix struct{ key, suffix string } // not answered from postings

func (m boundedSuffix) Key() string                    { return m.key }
func (m boundedSuffix) Matches(v string, ok bool) bool { return ok && strings.HasSuffix(v, m.suffix) }

// TestSelectBounded: SelectBounded selects what Select does, looking at
// the series Select would (the metric's, or the fewest postings of a
// literal matcher), and when they are more than maxVisit looks at none;
// it stops once more than maxOut are selected.
func TestSelectBounded(t *testing.T) {
	ix := newIndex()
	for i := range 100 {
		l := MakeLabels("m", []Tag{{Key: "host", Value: fmt.Sprintf("h%02d", i)}, {Key: "dc", Value: fmt.Sprintf("d%d", i%10)}})
		ix.add(l, []byte{0, 0, 1, 0, 0, 1, 0, 0, byte(i)}, 0, 5, nil)
	}
	for _, c := range []struct {
		name       string
		metric     string
		ms         []Matcher
		candidates int // the series looked at
		selected   int
	}{
		{"every series", "m", nil, 100, 100},
		{"a suffix: the metric's series", "m", []Matcher{boundedSuffix{"host", "7"}}, 100, 10},
		{"a literal: its postings", "m", []Matcher{boundedLiteral{"dc", "d3"}}, 10, 10},
		{"the fewest postings", "m", []Matcher{boundedLiteral{"dc", "d3"}, boundedLiteral{"host", "h13"}, boundedSuffix{"host", "3"}}, 1, 1},
		{"a literal of no series", "m", []Matcher{boundedLiteral{"dc", "nope"}, boundedSuffix{"host", "3"}}, 0, 0},
		{"no such metric", "x", nil, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := ix.Select(c.metric, c.ms, false, 0, 10*dayMs)
			if len(want) != c.selected {
				t.Fatalf("Select: %d series, want %d", len(want), c.selected)
			}
			for _, maxVisit := range []int{-1, c.candidates, c.candidates + 1} {
				got, visited, ok := ix.SelectBounded(c.metric, c.ms, false, 0, 10*dayMs, maxVisit, c.selected)
				if !ok || visited != c.candidates || !reflect.DeepEqual(got, want) {
					t.Fatalf("maxVisit %d: ok %v, looked at %d (want %d), %d series", maxVisit, ok, visited, c.candidates, len(got))
				}
			}
			if c.candidates > 0 {
				got, visited, ok := ix.SelectBounded(c.metric, c.ms, false, 0, 10*dayMs, c.candidates-1, -1)
				if ok || visited != 0 || got != nil {
					t.Fatalf("maxVisit %d: ok %v, looked at %d, %d series", c.candidates-1, ok, visited, len(got))
				}
			}
			if c.selected > 0 {
				got, visited, ok := ix.SelectBounded(c.metric, c.ms, false, 0, 10*dayMs, -1, c.selected-1)
				if ok || len(got) != c.selected || !reflect.DeepEqual(got, want) || visited > c.candidates {
					t.Fatalf("maxOut %d: ok %v, looked at %d, %d series", c.selected-1, ok, visited, len(got))
				}
				if c.name == "a suffix: the metric's series" && visited != 98 { // h97 is the tenth
					t.Fatalf("maxOut %d: looked at %d series, want 98", c.selected-1, visited)
				}
			}
			// Days outside the series' are not selected, but looked at.
			if got, visited, ok := ix.SelectBounded(c.metric, c.ms, false, 20*dayMs, 21*dayMs, -1, 0); !ok || len(got) != 0 || visited != c.candidates {
				t.Fatalf("other days: ok %v, looked at %d, %d series", ok, visited, len(got))
			}
		})
	}
}
