package uid_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"hourglass/rowkey"
	"hourglass/store/pebble"
	"hourglass/uid"
)

func openStore(t *testing.T, dir string) *pebble.Store {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConcurrentAssignmentGivesOneUIDPerName(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	layout := rowkey.DefaultLayout()
	tab := uid.New(st, layout, uid.Options{})
	ctx := context.Background()
	const names, workers = 1000, 16
	got := make([][]string, workers) // worker → name index → UID hex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		got[w] = make([]string, names)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < names; i++ {
				// Each worker walks the names from a different starting point.
				n := (i + w*61) % names
				id, err := tab.GetOrAssign(ctx, nil, uid.TagV, fmt.Sprintf("host-%04d", n))
				if err != nil {
					t.Error(err)
					return
				}
				got[w][n] = fmt.Sprintf("%X", id)
			}
		}(w)
	}
	wg.Wait()
	seen := map[string]int{}
	for n := 0; n < names; n++ {
		for w := 1; w < workers; w++ {
			if got[w][n] != got[0][n] {
				t.Fatalf("name %d: worker %d got UID %s, worker 0 got %s", n, w, got[w][n], got[0][n])
			}
		}
		if other, dup := seen[got[0][n]]; dup {
			t.Fatalf("names %d and %d share UID %s", other, n, got[0][n])
		}
		seen[got[0][n]] = n
		if len(got[0][n]) != 2*layout.TagVWidth {
			t.Fatalf("UID %s is not %d bytes", got[0][n], layout.TagVWidth)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart returns the same UIDs, in both directions.
	st = openStore(t, dir)
	defer st.Close()
	tab = uid.New(st, layout, uid.Options{})
	for n := 0; n < names; n++ {
		name := fmt.Sprintf("host-%04d", n)
		id, err := tab.GetID(ctx, nil, uid.TagV, name)
		if err != nil || fmt.Sprintf("%X", id) != got[0][n] {
			t.Fatalf("after restart %s = %X, %v; want %s", name, id, err, got[0][n])
		}
		back, err := tab.GetName(ctx, uid.TagV, id)
		if err != nil || back != name {
			t.Fatalf("after restart reverse of %X = %q, %v", id, back, err)
		}
	}
	// The counter survived too: a new name gets a new UID.
	id, err := tab.GetOrAssign(ctx, nil, uid.TagV, "brand-new")
	if err != nil {
		t.Fatal(err)
	}
	if _, dup := seen[fmt.Sprintf("%X", id)]; dup {
		t.Fatalf("a new name after restart reused UID %X", id)
	}
}

func TestFullNameSpaceIsAnError(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	layout := rowkey.DefaultLayout()
	layout.MetricWidth = 1 // 255 metrics at most
	tab := uid.New(st, layout, uid.Options{})
	ctx := context.Background()
	for i := 1; i <= 255; i++ {
		id, err := tab.GetOrAssign(ctx, nil, uid.Metric, fmt.Sprintf("m%d", i))
		if err != nil {
			t.Fatalf("metric %d: %v", i, err)
		}
		if int(id[0]) != i {
			t.Fatalf("metric %d got UID %d", i, id[0])
		}
	}
	for i := 0; i < 3; i++ {
		_, err := tab.GetOrAssign(ctx, nil, uid.Metric, fmt.Sprintf("overflow%d", i))
		if !errors.Is(err, uid.ErrFull) {
			t.Fatalf("assignment past the last UID: err = %v, want ErrFull", err)
		}
	}
	// Names that have UIDs still resolve.
	if id, err := tab.GetID(ctx, nil, uid.Metric, "m255"); err != nil || id[0] != 255 {
		t.Fatalf("m255 = %v, %v", id, err)
	}
}

func TestLookupsAndSuggest(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	tab := uid.New(st, rowkey.DefaultLayout(), uid.Options{})
	ctx := context.Background()
	_, err := tab.GetID(ctx, nil, uid.Metric, "nope")
	var nf *uid.NoSuchNameError
	if !errors.As(err, &nf) || err.Error() != "No such name for 'metrics': 'nope'" {
		t.Fatalf("GetID of an unknown name: %v", err)
	}
	for _, n := range []string{"sys.cpu.user", "sys.cpu.nice", "sys.mem", "app.req"} {
		if _, err := tab.GetOrAssign(ctx, nil, uid.Metric, n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tab.Suggest(ctx, uid.Metric, "sys.cpu", 10)
	if err != nil || fmt.Sprint(got) != "[sys.cpu.nice sys.cpu.user]" {
		t.Fatalf("Suggest = %v, %v", got, err)
	}
	got, _ = tab.Suggest(ctx, uid.Metric, "", 3)
	if len(got) != 3 {
		t.Fatalf("Suggest max 3 gave %v", got)
	}
	if _, err := tab.Assign(ctx, uid.Metric, "sys.mem"); !errors.Is(err, uid.ErrExists) {
		t.Fatalf("Assign of an existing name: %v", err)
	}
	if err := tab.Rename(ctx, uid.Metric, "sys.mem", "sys.memory"); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.GetID(ctx, nil, uid.Metric, "sys.mem"); !errors.Is(err, uid.ErrNoSuchName) {
		t.Fatalf("old name after rename: %v", err)
	}
	if _, err := tab.GetID(ctx, nil, uid.Metric, "sys.memory"); err != nil {
		t.Fatalf("new name after rename: %v", err)
	}
}

func BenchmarkGetIDCached(b *testing.B) {
	st, err := pebble.Open(b.TempDir(), pebble.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	tab := uid.New(st, rowkey.DefaultLayout(), uid.Options{})
	ctx := context.Background()
	if _, err := tab.GetOrAssign(ctx, nil, uid.TagV, "web-042.example.com"); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = tab.GetID(ctx, buf[:0], uid.TagV, "web-042.example.com")
	}
}
