package series_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/internal/dbtest"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/series/wal"
	"hourglass/store"
	"hourglass/store/pebble"
	"hourglass/uid"
)

var quiet = slog.New(slog.DiscardHandler)

// env is a head over a Pebble store in a temporary directory.
type env struct {
	t     *testing.T
	dir   string
	st    *pebble.Store
	head  *series.DB
	index *series.Index
	uids  *uid.Table
	eng   *query.Engine
	opts  series.Options
}

func openEnv(t *testing.T, dir string, mod func(*series.Options)) *env {
	t.Helper()
	e := dbtest.Open(t, dir, mod, nil)
	return &env{t: t, dir: dir, st: e.Pebble, head: e.DB, index: e.Index, uids: e.UIDs,
		eng: query.NewEngine(e.DB.Head, e.Index, e.Pebble, e.Layout, query.Limits{}), opts: e.Opts}
}

func (e *env) close() {
	e.t.Helper()
	if err := e.head.Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
}

// crash abandons the head without closing it, as kill -9 would, and closes the store.
func (e *env) crash() {
	e.t.Helper()
	if err := e.head.Abandon(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) append(samples ...series.Sample) {
	e.t.Helper()
	errs := make([]error, len(samples))
	if err := e.head.Append(context.Background(), samples, errs); err != nil {
		e.t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			e.t.Fatalf("sample %d: %v", i, err)
		}
	}
}

func (e *env) read(metric string, start, end int64) map[string][]chunk.Point {
	e.t.Helper()
	ss, err := e.eng.Select(context.Background(), query.Selector{Metric: metric, Start: start, End: end})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]chunk.Point{}
	for _, s := range ss {
		out[s.Labels.String()] = s.Points
	}
	return out
}

func host(i int) series.Labels {
	return series.MakeLabels("sys.cpu", []series.Tag{{Key: "host", Value: fmt.Sprintf("web%02d", i)}, {Key: "dc", Value: "lga"}})
}

const t0 = int64(1_700_000_000_000) - int64(1_700_000_000_000)%rowkey.HourMs

func samplesFor(hosts, points int, step int64) ([]series.Sample, map[string][]chunk.Point) {
	var ss []series.Sample
	want := map[string][]chunk.Point{}
	for p := 0; p < points; p++ {
		for h := 0; h < hosts; h++ {
			t := t0 + int64(p)*step
			var v chunk.Value
			if h%2 == 0 {
				v = chunk.Int(int64(p*1000 + h))
			} else {
				v = chunk.Float(float64(p) + float64(h)/100)
			}
			ss = append(ss, series.Sample{Labels: host(h), T: t, V: v})
			want[host(h).String()] = append(want[host(h).String()], chunk.Point{T: t, V: v})
		}
	}
	return ss, want
}

func equalPoints(t *testing.T, got, want map[string][]chunk.Point) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d series, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("%s: got %d points, want %d", k, len(g), len(w))
		}
		for i := range w {
			if g[i].T != w[i].T || !g[i].V.Identical(w[i].V) {
				t.Fatalf("%s point %d: got %d=%v, want %d=%v", k, i, g[i].T, g[i].V, w[i].T, w[i].V)
			}
		}
	}
}

func TestHeadReadsBackThroughEveryStage(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, nil)
	// 3 hours of 10 s points for 30 series: crosses rows, salt buckets, seals.
	ss, want := samplesFor(30, 3*360, 10_000)
	for i := 0; i < len(ss); i += 500 {
		e.append(ss[i:min(i+500, len(ss))]...)
	}
	end := t0 + 3*rowkey.HourMs
	equalPoints(t, e.read("sys.cpu", t0, end), want) // head and store mixed
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equalPoints(t, e.read("sys.cpu", t0, end), want) // all in the store
	e.close()

	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, end), want) // after a clean restart
	e.close()
}

func TestHeadCrashReplaysWAL(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, nil)
	ss, want := samplesFor(10, 200, 10_000)
	e.append(ss...)
	e.crash()

	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	// Replaying again after a second crash must not duplicate anything.
	e.crash()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	e.close()
}

func TestLastWriteWins(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, nil)
	l := host(1)
	e.append(series.Sample{Labels: l, T: t0, V: chunk.Int(1)}, series.Sample{Labels: l, T: t0 + 1000, V: chunk.Int(2)})
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Rewrite a point that is already in the store, in the head and then sealed.
	e.append(series.Sample{Labels: l, T: t0, V: chunk.Float(math.Pi)}, series.Sample{Labels: l, T: t0 + 500, V: chunk.Int(5)})
	want := map[string][]chunk.Point{l.String(): {{T: t0, V: chunk.Float(math.Pi)}, {T: t0 + 500, V: chunk.Int(5)}, {T: t0 + 1000, V: chunk.Int(2)}}}
	equalPoints(t, e.read("sys.cpu", t0, t0+5000), want)
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equalPoints(t, e.read("sys.cpu", t0, t0+5000), want)
	e.close()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, t0+5000), want)
	e.close()
}

func TestFiltersAndTimeRange(t *testing.T) {
	e := openEnv(t, t.TempDir(), nil)
	defer e.close()
	ss, _ := samplesFor(4, 10, 60_000)
	e.append(ss...)
	got := e.read("sys.cpu", t0+60_000, t0+120_000)
	for k, pts := range got {
		if len(pts) != 2 || pts[0].T != t0+60_000 || pts[1].T != t0+120_000 {
			t.Fatalf("%s: range [1m, 2m] gave %v", k, pts)
		}
	}
	if got := e.read("no.such.metric", t0, t0+time.Hour.Milliseconds()); len(got) != 0 {
		t.Fatalf("unknown metric gave %d series", len(got))
	}
}

func TestIdleSeriesAreForgottenAndComeBack(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(t0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := openEnv(t, t.TempDir(), func(o *series.Options) {
		o.Now = clock
		o.SweepInterval = 5 * time.Millisecond
	})
	defer e.close()
	l := host(3)
	e.append(series.Sample{Labels: l, T: t0, V: chunk.Int(1)})
	advance(3 * time.Hour) // the hour and its grace pass; the series goes idle
	deadline := time.Now().Add(10 * time.Second)
	for e.head.Stats().Series != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the idle series was not forgotten: %+v", e.head.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Written again, it comes back; both points read back.
	e.append(series.Sample{Labels: l, T: t0 + 3*rowkey.HourMs, V: chunk.Int(2)})
	want := map[string][]chunk.Point{l.String(): {{T: t0, V: chunk.Int(1)}, {T: t0 + 3*rowkey.HourMs, V: chunk.Int(2)}}}
	equalPoints(t, e.read("sys.cpu", t0, t0+4*rowkey.HourMs), want)
}

// TestWALStaysBounded writes many hours of data through small segments and
// checks that segments whose points are in the store are deleted.
func TestWALStaysBounded(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, func(o *series.Options) {
		o.WAL.SegmentSize = 32 << 10
		o.SweepInterval = 5 * time.Millisecond
		o.Grace = time.Minute
	})
	defer e.close()
	const hours = 12
	ss, _ := samplesFor(20, hours*360, 10_000)
	maxSegs := 0
	for i := 0; i < len(ss); i += 400 {
		e.append(ss[i:min(i+400, len(ss))]...)
		segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
		maxSegs = max(maxSegs, len(segs))
	}
	// Let the sweeper catch up with the last hours sealed by data time.
	deadline := time.Now().Add(10 * time.Second)
	for {
		segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
		if len(segs) <= 12 || time.Now().After(deadline) {
			t.Logf("%d hours of data: at most %d segments at once, %d at the end", hours, maxSegs, len(segs))
			if len(segs) > 12 {
				t.Fatalf("%d wal segments remain after %d hours of data: truncation does not keep up", len(segs), hours)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flakyStore fails data writes while down is set, as a store outage would.
type flakyStore struct {
	*pebble.Store
	down atomic.Bool
}

func (f *flakyStore) Write(ctx context.Context, t store.Table, muts []store.Mutation) error {
	if f.down.Load() && t == store.TableData {
		return fmt.Errorf("%w: injected outage", store.ErrUnavailable)
	}
	return f.Store.Write(ctx, t, muts)
}

// WriteDeferred fails as Write does: the flusher writes chunks with it.
func (f *flakyStore) WriteDeferred(ctx context.Context, t store.Table, muts []store.Mutation) error {
	if f.down.Load() && t == store.TableData {
		return fmt.Errorf("%w: injected outage", store.ErrUnavailable)
	}
	return f.Store.WriteDeferred(ctx, t, muts)
}

// TestCloseWaitsForTheStoreToComeBack: a write that failed is retried, and
// Close waits for the retry instead of failing on the first error.
func TestCloseWaitsForTheStoreToComeBack(t *testing.T) {
	dir := t.TempDir()
	st, err := pebble.Open(filepath.Join(dir, "store"), pebble.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	fs := &flakyStore{Store: st}
	layout := rowkey.DefaultLayout()
	h, err := series.OpenDB(context.Background(), fs, uid.New(fs, layout, uid.Options{}), series.Options{
		Layout: layout, Logger: quiet, WAL: wal.Options{Dir: filepath.Join(dir, "wal")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ss, want := samplesFor(5, 20, 1000)
	errs := make([]error, len(ss))
	if err := h.Append(context.Background(), ss, errs); err != nil {
		t.Fatal(err)
	}
	fs.down.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := h.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded while the store was down")
	}
	cancel()
	go func() { time.Sleep(200 * time.Millisecond); fs.down.Store(false) }()
	if err := h.Close(); err != nil {
		t.Fatalf("Close after the store came back: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	e := openEnv(t, dir, nil)
	defer e.close()
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
}

// TestChunksOfOneRowInOneFlush: a full chunk and then late points of the
// same hour are sealed before the flusher runs, so one batch holds two
// chunks of one row whose spans overlap; every point must reach the store.
func TestChunksOfOneRowInOneFlush(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, func(o *series.Options) { o.ChunkMaxPoints = 10 })
	l := host(1)
	want := map[string][]chunk.Point{}
	var batch []series.Sample
	for i := int64(0); i < 25; i++ {
		// Even seconds first, then odd ones: chunks of the same hour
		// whose spans interleave.
		tm := t0 + (i%13)*2_000 + i/13*1_000
		batch = append(batch, series.Sample{Labels: l, T: tm, V: chunk.Int(i)})
	}
	e.append(batch...)
	for _, s := range batch {
		want[l.String()] = append(want[l.String()], chunk.Point{T: s.T, V: s.V})
	}
	sort.Slice(want[l.String()], func(i, j int) bool { return want[l.String()][i].T < want[l.String()][j].T })
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	e.close()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	e.close()
}

// TestFrozenPointsRewrittenAndDeleted: points of an open chunk that are
// already frozen (encoded in the head) can be rewritten and deleted, and
// reads, the store and a restart all see the result.
func TestFrozenPointsRewrittenAndDeleted(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, func(o *series.Options) { o.Now = func() time.Time { return time.UnixMilli(t0 + 1000) } })
	l := host(1)
	var pts []chunk.Point
	for i := int64(0); i < 200; i++ {
		e.append(series.Sample{Labels: l, T: t0 + i*10_000, V: chunk.Int(i)})
		pts = append(pts, chunk.Point{T: t0 + i*10_000, V: chunk.Int(i)})
	}
	// A rewrite of a frozen point, the last written winning.
	e.append(series.Sample{Labels: l, T: t0 + 5*10_000, V: chunk.Float(0.5)})
	pts[5].V = chunk.Float(0.5)
	want := map[string][]chunk.Point{l.String(): pts}
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	// A delete cutting frozen points out of the open chunk.
	e.delete([]series.Labels{l}, t0+10*10_000, t0+20*10_000)
	pts = append(pts[:10:10], pts[21:]...)
	want[l.String()] = pts
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	e.close()
	e = openEnv(t, dir, nil)
	defer e.close()
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
}
