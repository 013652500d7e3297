package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStateResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	key := StateKey{From: "opentsdb", Src: "http://a", Dst: "http://b", Start: 0, End: 100, Slice: 10}
	st, err := OpenState(path, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int64{0, 20, 50} {
		if err := st.MarkDone(s); err != nil {
			t.Fatal(err)
		}
	}
	st2, err := OpenState(path, key)
	if err != nil {
		t.Fatal(err)
	}
	for s := int64(0); s < 100; s += 10 {
		want := s == 0 || s == 20 || s == 50
		if st2.Done(s) != want {
			t.Errorf("after reopening, Done(%d) = %v, want %v", s, st2.Done(s), want)
		}
	}
	run := &Run{Slices: Slices(0, 100, 10), State: st2, MaxSlices: 3}
	todo := run.Todo()
	if len(todo) != 3 || todo[0].Start != 10 || todo[1].Start != 30 || todo[2].Start != 40 {
		t.Fatalf("Todo() = %v, want the first three slices not done (10, 30, 40)", todo)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("temporary files left next to the state: %v", ents)
	}
}

func TestStateOtherRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	key := StateKey{From: "remote-read", Src: "http://a", Dst: "http://b", Start: 0, End: 100, Slice: 10, Match: []string{"up"}}
	st, _ := OpenState(path, key)
	if err := st.MarkDone(0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*StateKey)
		want string
	}{
		{"src", func(k *StateKey) { k.Src = "http://c" }, "-src http://a, now http://c"},
		{"range", func(k *StateKey) { k.End = 200 }, "range"},
		{"slice", func(k *StateKey) { k.Slice = 20 }, "-slice 10ms, now 20ms"},
		{"match", func(k *StateKey) { k.Match = nil }, "-match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := key
			tc.edit(&k)
			_, err := OpenState(path, k)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("OpenState with another %s: %v, want an error saying %q", tc.name, err, tc.want)
			}
		})
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenState(path, key); err == nil || !strings.Contains(err.Error(), "not a migration state") {
		t.Fatalf("OpenState on garbage: %v", err)
	}
}
