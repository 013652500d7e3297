package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// StateKey names a run: a state file records completed slices for one key
// only, so a rerun with other sources, ranges or slices does not skip
// slices it never copied.
type StateKey struct {
	From  string   `json:"from"`
	Src   string   `json:"src"`
	Dst   string   `json:"dst"`
	Start int64    `json:"start"`
	End   int64    `json:"end"`
	Slice int64    `json:"sliceMs"`
	Match []string `json:"match,omitempty"`
}

type stateFile struct {
	Version int      `json:"version"`
	Key     StateKey `json:"key"`
	Done    []int64  `json:"done"` // start of each completed slice, ascending
}

// State is the set of completed slices, kept in a JSON file that is
// rewritten (to a temporary file, fsynced, renamed) each time a slice
// completes. The zero path keeps it in memory only. Safe for concurrent use.
type State struct {
	mu   sync.Mutex
	path string
	key  StateKey
	done map[int64]bool
}

// OpenState reads the state file at path, or starts an empty state when it
// does not exist. A file written for another key is an error that says how
// the two runs differ.
func OpenState(path string, key StateKey) (*State, error) {
	st := &State{path: path, key: key, done: map[int64]bool{}}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("state file %s is not a migration state: %v", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("state file %s has version %d, want 1", path, f.Version)
	}
	if d := keyDiff(f.Key, key); d != "" {
		return nil, fmt.Errorf("state file %s was written by another run (%s): remove it or name another -state", path, d)
	}
	for _, s := range f.Done {
		st.done[s] = true
	}
	return st, nil
}

func keyDiff(a, b StateKey) string {
	switch {
	case a.From != b.From:
		return fmt.Sprintf("-from %s, now %s", a.From, b.From)
	case a.Src != b.Src:
		return fmt.Sprintf("-src %s, now %s", a.Src, b.Src)
	case a.Dst != b.Dst:
		return fmt.Sprintf("-dst %s, now %s", a.Dst, b.Dst)
	case a.Start != b.Start || a.End != b.End:
		return fmt.Sprintf("range %s, now %s", Slice{a.Start, a.End}, Slice{b.Start, b.End})
	case a.Slice != b.Slice:
		return fmt.Sprintf("-slice %dms, now %dms", a.Slice, b.Slice)
	case !slices.Equal(a.Match, b.Match):
		return fmt.Sprintf("-match %q, now %q", a.Match, b.Match)
	}
	return ""
}

// Done tells whether the slice starting at start has completed.
func (st *State) Done(start int64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.done[start]
}

// Len is the number of completed slices.
func (st *State) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.done)
}

// MarkDone records the slice starting at start as completed and, with a
// path, makes that durable before it returns.
func (st *State) MarkDone(start int64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done[start] = true
	if st.path == "" {
		return nil
	}
	f := stateFile{Version: 1, Key: st.key, Done: make([]int64, 0, len(st.done))}
	for s := range st.done {
		f.Done = append(f.Done, s)
	}
	slices.Sort(f.Done)
	b, err := json.Marshal(&f)
	if err != nil {
		return err
	}
	return writeFileAtomic(st.path, b)
}

// writeFileAtomic replaces path with b: a crash leaves the old or the new
// content, never a mix.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}
