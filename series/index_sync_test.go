package series

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

// The index sync runs between heads sharing one store. Pebble stands in
// for Bigtable here (the contract is the same); the loop's interval is an
// hour, so the tests call step themselves and nothing depends on timing.

var quietLog = slog.New(slog.DiscardHandler)

const syncT0 = int64(1_700_000_000_000) - int64(1_700_000_000_000)%dayMs

type syncNode struct {
	t    *testing.T
	head *DB
}

func openSyncNode(t *testing.T, st store.Store, writer uint16, dir string) *syncNode {
	t.Helper()
	layout, err := RecordLayout(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	h, err := OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), Options{
		Layout:    layout,
		WriterID:  writer,
		Logger:    quietLog,
		WAL:       wal.Options{Dir: filepath.Join(dir, fmt.Sprint("wal", writer))},
		IndexSync: IndexSyncOptions{Interval: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &syncNode{t: t, head: h}
	t.Cleanup(func() { h.Close() })
	return n
}

func (n *syncNode) append(l Labels, ts int64) {
	n.t.Helper()
	errs := make([]error, 1)
	if err := n.head.Append(context.Background(), []Sample{{Labels: l, T: ts, V: chunk.Int(ts)}}, errs); err != nil || errs[0] != nil {
		n.t.Fatalf("Append: %v, %v", err, errs[0])
	}
}

func (n *syncNode) flush() {
	n.t.Helper()
	if err := n.head.Flush(context.Background()); err != nil {
		n.t.Fatal(err)
	}
}

func (n *syncNode) step() {
	n.t.Helper()
	if err := n.head.feed.step(context.Background()); err != nil {
		n.t.Fatal(err)
	}
}

// sees returns the series of metric the index selects on the day of ts.
func (n *syncNode) sees(metric string, ts int64) []string {
	var out []string
	for _, e := range n.head.index.Select(metric, nil, false, ts, ts) {
		out = append(out, e.Labels.String())
	}
	sort.Strings(out)
	return out
}

func counterValue(c prometheus.Counter) float64 { return testutil.ToFloat64(c) }

func expectSeries(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: the index selects %v, want %v", what, got, want)
	}
}

func openPebble(t *testing.T, dir string) *pebble.Store {
	t.Helper()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestIndexSyncBetweenNodes(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, dir)
	a := openSyncNode(t, st, 1, dir)
	b := openSyncNode(t, st, 2, dir)
	day1, day2 := syncT0+1000, syncT0+dayMs+1000
	h1 := MakeLabels("m", []Tag{{Key: "host", Value: "a"}})
	h2 := MakeLabels("m", []Tag{{Key: "host", Value: "b"}})

	a.append(h1, day1) // a series only A knows
	b.append(h2, day1) // one only B knows
	b.append(h1, day2) // B writes A's series on a day A never wrote
	a.flush()
	b.flush()
	expectSeries(t, "A before reading the feeds, day 2", a.sees("m", day2))
	expectSeries(t, "B before reading the feeds, day 1", b.sees("m", day1), "m{host=b}")

	a.step()
	b.step()
	expectSeries(t, "A, day 1", a.sees("m", day1), "m{host=a}", "m{host=b}")
	expectSeries(t, "A, day 2", a.sees("m", day2), "m{host=a}")
	expectSeries(t, "B, day 1", b.sees("m", day1), "m{host=a}", "m{host=b}")
	if n := a.head.index.Len(); n != 2 {
		t.Fatalf("A holds %d series, want 2", n)
	}

	// A node that starts now knows everything from the index and the feeds.
	c := openSyncNode(t, st, 3, dir)
	expectSeries(t, "C, day 1", c.sees("m", day1), "m{host=a}", "m{host=b}")
	expectSeries(t, "C, day 2", c.sees("m", day2), "m{host=a}")

	// Only what is new is read: another step learns nothing, and a later
	// change arrives alone.
	learned := counterValue(a.head.feed.learnedSeries)
	a.step()
	if got := counterValue(a.head.feed.learnedSeries); got != learned {
		t.Fatalf("a step with nothing new learned %v series", got-learned)
	}
	h3 := MakeLabels("m", []Tag{{Key: "host", Value: "c"}})
	c.append(h3, day2)
	c.flush()
	a.step()
	expectSeries(t, "A, day 2, after C wrote", a.sees("m", day2), "m{host=a}", "m{host=c}")
	if got := counterValue(a.head.feed.learnedSeries); got != learned+1 {
		t.Fatalf("A learned %v series from C's change, want 1", got-learned)
	}

	// A new day of a series C already held is announced without labels.
	day3 := day2 + dayMs
	c.append(h1, day3)
	c.flush()
	var values []string
	if err := st.Scan(context.Background(), store.TableMeta, []store.KeyRange{store.PrefixRange(feedWriterPrefix(3))}, func(cl store.Cell) bool {
		if binary.BigEndian.Uint32(cl.Qualifier[len(cl.Qualifier)-4:]) == dayOf(day3) {
			values = append(values, string(cl.Value))
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(values) != 1 || values[0] != "" {
		t.Fatalf("C announced day 3 of a series it held as %q, want one cell without labels", values)
	}
	a.step()
	expectSeries(t, "A, day 3", a.sees("m", day3), "m{host=a}")
}

// TestIndexSyncDayOfUnknownSeries: an announcement without labels of a
// series this node does not hold takes the labels from the index row.
func TestIndexSyncDayOfUnknownSeries(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, dir)
	a := openSyncNode(t, st, 1, dir)
	ctx := context.Background()
	l := MakeLabels("quiet", []Tag{{Key: "k", Value: "v"}})
	tsuid, err := a.head.resolve(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	// Another node's index row, whose announcement A never read, and a new
	// day of it announced later.
	day := dayOf(syncT0)
	if err := st.Write(ctx, store.TableIndex, []store.Mutation{
		{Row: tsuid, Qualifier: qualLabels, Value: []byte(l)},
		{Row: tsuid, Qualifier: dayQualifier(day)},
	}); err != nil {
		t.Fatal(err)
	}
	q := binary.BigEndian.AppendUint32(append([]byte(nil), tsuid...), day+1)
	if err := st.Write(ctx, store.TableMeta, []store.Mutation{{Row: feedRow(7, 1), Qualifier: q}}); err != nil {
		t.Fatal(err)
	}
	expectSeries(t, "A before the step", a.sees("quiet", syncT0+dayMs))
	a.step()
	expectSeries(t, "A, the announced day", a.sees("quiet", syncT0+dayMs), "quiet{k=v}")
}

// TestIndexSyncFeedBeforeIndex announces a series whose index row is never
// written (the writer died between the two): a node that starts finds it
// in the feed.
func TestIndexSyncFeedBeforeIndex(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, dir)
	a := openSyncNode(t, st, 1, dir)
	l := MakeLabels("lost", []Tag{{Key: "k", Value: "v"}})
	tsuid, err := a.head.resolve(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	_, idx := a.head.index.add(l, tsuid, a.head.opts.Layout.Salt(tsuid), dayOf(syncT0), nil)
	if err := a.head.feed.publish(context.Background(), idx); err != nil {
		t.Fatal(err)
	}
	b := openSyncNode(t, st, 2, dir)
	expectSeries(t, "a new node", b.sees("lost", syncT0), "lost{k=v}")
}

// TestIndexSyncRetention deletes a writer's old feed rows, and makes a node
// that could not read the feeds for long read the whole index again.
func TestIndexSyncRetention(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, dir)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	a := openSyncNode(t, st, 1, dir)
	b := openSyncNode(t, st, 2, dir)
	a.head.feed.now, b.head.feed.now = now, now

	a.append(MakeLabels("m", []Tag{{Key: "host", Value: "a"}}), syncT0)
	a.flush()
	feed := func(w uint16) int {
		n := 0
		if err := st.Scan(context.Background(), store.TableMeta, []store.KeyRange{store.PrefixRange(feedWriterPrefix(w))}, func(store.Cell) bool {
			n++
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := feed(1); n != 1 {
		t.Fatalf("A's feed holds %d cells, want 1", n)
	}
	clock.Add(int64(2 * time.Hour))
	a.step()
	if n := feed(1); n != 0 {
		t.Fatalf("A's feed holds %d cells past the retention, want 0", n)
	}
	// B never read A's feed, and the row is gone: the next step reads the
	// whole index, since B's last read is older than half the retention.
	b.head.feed.lastSuccess = now().Add(-time.Hour)
	b.step()
	expectSeries(t, "B after the rescan", b.sees("m", syncT0), "m{host=a}")
}

// failingStore fails the operations chosen with store.ErrUnavailable.
type failingStore struct {
	store.Store
	mu              sync.Mutex
	writes, assigns bool
}

func (f *failingStore) set(writes, assigns bool) {
	f.mu.Lock()
	f.writes, f.assigns = writes, assigns
	f.mu.Unlock()
}

var errOutage = fmt.Errorf("%w: injected outage", store.ErrUnavailable)

func (f *failingStore) Write(ctx context.Context, t store.Table, muts []store.Mutation) error {
	f.mu.Lock()
	fail := f.writes
	f.mu.Unlock()
	if fail {
		return errOutage
	}
	return f.Store.Write(ctx, t, muts)
}

func (f *failingStore) Increment(ctx context.Context, t store.Table, row, q []byte, d int64) (int64, error) {
	f.mu.Lock()
	fail := f.assigns
	f.mu.Unlock()
	if fail {
		return 0, errOutage
	}
	return f.Store.Increment(ctx, t, row, q, d)
}

// TestAppendDuringOutage: a point whose series needs a new UID while the
// store is out of reach fails the batch with store.ErrUnavailable (a 503:
// the client retries), not as a bad point; known series go on into the
// WAL until it passes its bound with the flusher failing.
func TestAppendDuringOutage(t *testing.T) {
	dir := t.TempDir()
	st := &failingStore{Store: openPebble(t, dir)}
	layout, err := RecordLayout(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	h, err := OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), Options{
		Layout:      layout,
		Logger:      quietLog,
		WAL:         wal.Options{Dir: filepath.Join(dir, "wal")},
		WALMaxBytes: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	known := MakeLabels("m", []Tag{{Key: "host", Value: "known"}})
	append1 := func(l Labels, ts int64) (error, error) {
		errs := make([]error, 1)
		err := h.Append(ctx, []Sample{{Labels: l, T: ts, V: chunk.Int(1)}}, errs)
		return err, errs[0]
	}
	if err, perr := append1(known, syncT0); err != nil || perr != nil {
		t.Fatal(err, perr)
	}

	st.set(false, true)
	err, perr := append1(MakeLabels("m", []Tag{{Key: "host", Value: "new"}}), syncT0)
	if !errors.Is(err, store.ErrUnavailable) || perr != nil {
		t.Fatalf("a new series during an outage: batch error %v, point error %v; want the batch refused as unavailable", err, perr)
	}
	if err, perr := append1(known, syncT0+1000); err != nil || perr != nil {
		t.Fatalf("a known series during an outage: %v, %v; want it in the WAL", err, perr)
	}

	// The store's writes fail too: once the flusher has failed and the WAL
	// is past its bound (1 byte here), writes are refused.
	st.set(true, true)
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.sealWhere(func(*openChunk) bool { return true }) // make the flusher try
		err, _ := append1(known, syncT0+2000)
		if errors.Is(err, store.ErrUnavailable) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("writes still accepted with the store failing and the WAL past its bound")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The outage ends: the flusher catches up and writes are taken again,
	// new series included; every acknowledged point is readable. (A bound
	// of its own: the flusher's backoff may have reached 5 s.)
	st.set(false, false)
	deadline = time.Now().Add(30 * time.Second)
	for {
		err, perr := append1(MakeLabels("m", []Tag{{Key: "host", Value: "new"}}), syncT0+3000)
		if err == nil && perr == nil {
			break
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("after the outage: %v, %v", err, perr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The flusher drops written chunks from the head just after Flush's
	// wait ends: a bounded wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got := h.Snapshot(known, syncT0, syncT0+10_000, nil)
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the head still holds %d points 10 s after the flush", len(got))
		}
	}
	tsuid, err := h.resolve(ctx, known)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := st.ReadRow(ctx, store.TableData, layout.AppendRowKey(nil, tsuid, rowkey.HourOf(syncT0)))
	if err != nil {
		t.Fatal(err)
	}
	var pts []chunk.Point
	for _, c := range cells {
		if pts, err = chunk.Decode(pts, c.Value, rowkey.HourOf(syncT0)); err != nil {
			t.Fatal(err)
		}
	}
	pts = SortDedup(pts)
	var ts []int64
	for _, p := range pts {
		ts = append(ts, p.T-syncT0)
	}
	// 0 and 1000 were acknowledged; 2000 was acknowledged by every attempt
	// that returned nil before the refusal (at least none, at most all).
	if len(ts) < 2 || ts[0] != 0 || ts[1] != 1000 {
		t.Fatalf("stored points at offsets %v, want 0 and 1000 first", ts)
	}
}

// countingStore counts the reads of the data table.
type countingStore struct {
	store.Store
	readRows, scans atomic.Int64
}

func (c *countingStore) ReadRow(ctx context.Context, t store.Table, row []byte) ([]store.Cell, error) {
	if t == store.TableData {
		c.readRows.Add(1)
	}
	return c.Store.ReadRow(ctx, t, row)
}

func (c *countingStore) Scan(ctx context.Context, t store.Table, ranges []store.KeyRange, fn func(store.Cell) bool) error {
	if t == store.TableData {
		c.scans.Add(1)
	}
	return c.Store.Scan(ctx, t, ranges, fn)
}

// TestFlushReadsRowsAtOnce: the flusher learns what this writer has in the
// rows of a batch with one Scan, not a ReadRow per row (a round trip each
// on Bigtable), and still merges a chunk into the cells it wrote before a
// restart.
func TestFlushReadsRowsAtOnce(t *testing.T) {
	dir := t.TempDir()
	st := &countingStore{Store: openPebble(t, dir)}
	layout, err := RecordLayout(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	open := func() *DB {
		h, err := OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), Options{
			Layout: layout, Logger: quietLog, WriterID: 3, WAL: wal.Options{Dir: filepath.Join(dir, "wal")},
			// Only Flush and Close seal: a sweep sealing some of the
			// chunks while Append runs would flush them in batches of one,
			// each read alone, and the count below would depend on timing.
			SweepInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ctx := context.Background()
	h := open()
	var first []Sample
	for i := 0; i < 200; i++ {
		first = append(first, Sample{Labels: MakeLabels("m", []Tag{{Key: "host", Value: fmt.Sprint(i)}}), T: syncT0 + 1000, V: chunk.Int(1)})
	}
	if err := h.Append(ctx, first, make([]error, len(first))); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil { // seals and writes the 200 chunks
		t.Fatal(err)
	}
	if n := st.readRows.Load(); n != 0 {
		t.Fatalf("flushing 200 new rows read %d rows one by one", n)
	}
	if n := st.scans.Load(); n < 1 {
		t.Fatal("flushing 200 new rows scanned nothing")
	}

	// A new process writes the same rows again, overlapping: the chunks
	// merge with the cells of the first run.
	h = open()
	defer h.Close()
	var second []Sample
	for i := 0; i < 200; i++ {
		l := MakeLabels("m", []Tag{{Key: "host", Value: fmt.Sprint(i)}})
		second = append(second, Sample{Labels: l, T: syncT0 + 500, V: chunk.Int(2)}, Sample{Labels: l, T: syncT0 + 1000, V: chunk.Int(3)})
	}
	if err := h.Append(ctx, second, make([]error, len(second))); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The 200 merges read their rows; the flusher may also wake while
	// Flush is still sealing and take a batch of one chunk, whose row it
	// reads alone. One read per row on top (400) is what prefetching saves.
	if n := st.readRows.Load(); n > 220 {
		t.Fatalf("flushing 200 overlapping rows read rows %d times one by one; want the 200 merges and a few batches of one", n)
	}
	for i := 0; i < 200; i += 37 {
		tsuid, err := h.resolve(ctx, MakeLabels("m", []Tag{{Key: "host", Value: fmt.Sprint(i)}}))
		if err != nil {
			t.Fatal(err)
		}
		cells, err := st.ReadRow(ctx, store.TableData, layout.AppendRowKey(nil, tsuid, rowkey.HourOf(syncT0)))
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 1 {
			t.Fatalf("host %d: %d cells, want the two runs merged into one", i, len(cells))
		}
		pts, err := chunk.Decode(nil, cells[0].Value, rowkey.HourOf(syncT0))
		if err != nil || len(pts) != 2 || pts[0].V != chunk.Int(2) || pts[1].V != chunk.Int(3) {
			t.Fatalf("host %d: points %v, %v; want 500=2 and 1000=3 (the later write wins)", i, pts, err)
		}
	}
}
