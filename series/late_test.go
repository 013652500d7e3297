package series_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// metricValue returns the value of the counter or gauge name in reg.
func metricValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// dataCells returns how many cells the data table holds, by row.
func dataCells(t testing.TB, st store.Store) (cells, rows int) {
	t.Helper()
	seen := map[string]bool{}
	err := st.Scan(context.Background(), store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
		cells++
		seen[string(c.Row)] = true
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return cells, len(seen)
}

// twoHours is the case: 7,200 points of two past hours, one a
// second, of one series; round changes the values so that the second
// sending is told apart from the first.
func twoHours(round int) ([]series.Sample, map[string][]chunk.Point) {
	l := host(7)
	var ss []series.Sample
	want := map[string][]chunk.Point{}
	for i := int64(0); i < 7200; i++ {
		p := series.Sample{Labels: l, T: t0 + i*1000, V: chunk.Int(i*10 + int64(round))}
		if i%3 == 0 {
			p.V = chunk.Float(float64(i) + float64(round)/4)
		}
		ss = append(ss, p)
		want[l.String()] = append(want[l.String()], chunk.Point{T: p.T, V: p.V})
	}
	return ss, want
}

// appendInBatches appends ss as /api/put bodies of 500 points would.
func (e *env) appendInBatches(ss []series.Sample) {
	e.t.Helper()
	for i := 0; i < len(ss); i += 500 {
		e.append(ss[i:min(i+500, len(ss))]...)
	}
}

// TestLateResendCostsWhatSendingDid: the same two past hours sent twice are
// sealed as about as many chunks the second time as the first, not one per
// point, and the store holds few cells with the second values.
func TestLateResendCostsWhatSendingDid(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	e := openEnv(t, dir, func(o *series.Options) { o.Registerer = reg })
	ctx := context.Background()
	first, _ := twoHours(0)
	e.appendInBatches(first)
	if err := e.head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sealedFirst := metricValue(t, reg, "hourglass_head_chunks_sealed_total")
	second, want := twoHours(1)
	e.appendInBatches(second)
	end := t0 + 2*rowkey.HourMs
	equalPoints(t, e.read("sys.cpu", t0, end), want) // head over store
	if err := e.head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sealedSecond := metricValue(t, reg, "hourglass_head_chunks_sealed_total") - sealedFirst
	cells, rows := dataCells(t, e.st)
	t.Logf("first sending: %v chunks sealed; second: %v; store: %d cells in %d rows", sealedFirst, sealedSecond, cells, rows)
	// 7,200 points at 480 a chunk are 15 chunks; a few more are allowed
	// for batches that end a chunk early.
	if sealedSecond > 2*sealedFirst+4 {
		t.Fatalf("re-sending sealed %v chunks, sending %v", sealedSecond, sealedFirst)
	}
	if rows != 2 || cells > 2*16 {
		t.Fatalf("the store holds %d cells in %d rows for 7,200 points of two hours", cells, rows)
	}
	equalPoints(t, e.read("sys.cpu", t0, end), want)
	e.close()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, end), want)
	e.close()
}

// TestLatePointsOneByOneAreFolded: points of an hour already in the store
// that arrive one at a time, each written on its own, pile up as cells of
// the row until the row is folded: the row's cells stay bounded.
func TestLatePointsOneByOneAreFolded(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	const maxPts = 50
	e := openEnv(t, dir, func(o *series.Options) { o.ChunkMaxPoints = maxPts; o.Registerer = reg })
	ctx := context.Background()
	l := host(2)
	m := model{}
	// 100 points 30 s apart, in the store.
	for i := int64(0); i < 100; i++ {
		s := series.Sample{Labels: l, T: t0 + i*30_000, V: chunk.Int(i)}
		e.append(s)
		m.put(s)
	}
	if err := e.head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// 300 late points, one by one, each flushed before the next: between
	// the stored ones, after them, and some rewriting stored ones.
	maxCells := 0
	for i := int64(0); i < 300; i++ {
		tm := t0 + (i*7919%400)*9_000 + 1_000
		if i%10 == 0 {
			tm = t0 + (i%100)*30_000 // a stored point, rewritten
		}
		s := series.Sample{Labels: l, T: tm, V: chunk.Float(float64(i) / 8)}
		e.append(s)
		m.put(s)
		if err := e.head.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cells, _ := dataCells(t, e.st)
		maxCells = max(maxCells, cells)
	}
	total := len(m[l.String()])
	minCells := (total + maxPts - 1) / maxPts
	t.Logf("%d points: at most %d cells in the row (%d full cells would hold them), %v folds", total, maxCells, minCells,
		metricValue(t, reg, "hourglass_head_row_folds_total"))
	if maxCells > 2*minCells+series.FoldSlack+1 {
		t.Fatalf("the row reached %d cells for %d points (%d a cell)", maxCells, total, maxPts)
	}
	if metricValue(t, reg, "hourglass_head_row_folds_total") == 0 {
		t.Fatal("no row was folded")
	}
	end := t0 + rowkey.HourMs
	equalPoints(t, e.read("sys.cpu", t0, end), m.points(t0, end))
	e.close()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, end), m.points(t0, end))
	e.close()
}

// TestLatePointsSurviveACrash: late points gathered in the head, some sealed
// early by the bound and written, the rest not, replay after kill -9 to the
// same data, twice.
func TestLatePointsSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := openEnv(t, dir, nil)
	first, _ := twoHours(0)
	e.appendInBatches(first)
	if err := e.head.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e.close()
	small := func(o *series.Options) { o.LateMaxPoints = 1000 }
	e = openEnv(t, dir, small)
	second, want := twoHours(2)
	// Duplicates in one sending: the last written wins.
	second = append(second, series.Sample{Labels: host(7), T: t0 + 5_000, V: chunk.Int(-5)})
	want[host(7).String()][5].V = chunk.Int(-5)
	e.appendInBatches(second)
	end := t0 + 2*rowkey.HourMs
	equalPoints(t, e.read("sys.cpu", t0, end), want)
	e.crash()
	for i := 0; i < 2; i++ {
		e = openEnv(t, dir, small)
		equalPoints(t, e.read("sys.cpu", t0, end), want)
		e.crash()
	}
	e = openEnv(t, dir, nil)
	equalPoints(t, e.read("sys.cpu", t0, end), want)
	e.close()
}

// TestLateChunksStayBounded: late points of many series fill the late
// chunks up to the bound, which then seals them early instead of growing.
func TestLateChunksStayBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	const bound = 2000
	e := openEnv(t, t.TempDir(), func(o *series.Options) { o.LateMaxPoints = bound; o.Registerer = reg })
	ss, want := samplesFor(40, 300, 10_000) // 12,000 points of a past hour, 40 series
	peak := 0.0
	for i := 0; i < len(ss); i += 200 {
		e.append(ss[i:min(i+200, len(ss))]...)
		peak = max(peak, metricValue(t, reg, "hourglass_head_late_points"))
	}
	early := metricValue(t, reg, "hourglass_head_late_early_seals_total")
	t.Logf("late points in the head at most %v (bound %d); %v early seals", peak, bound, early)
	if peak > bound {
		t.Fatalf("%v late points in the head, past the bound of %d", peak, bound)
	}
	if early == 0 {
		t.Fatal("the bound never sealed late chunks early")
	}
	equalPoints(t, e.read("sys.cpu", t0, t0+rowkey.HourMs), want)
	e.close()
}

// TestLatePointsAmongNewerOnes: a backfill of an old hour interleaved with
// the series' current points, which move its newest point on each time:
// the late chunk is not sealed by them (it would be a chunk per point).
func TestLatePointsAmongNewerOnes(t *testing.T) {
	reg := prometheus.NewRegistry()
	// The clock stands still: on the wall clock, appends slower than
	// -late-grace (a loaded machine, -race) sealed the late chunk at its
	// deadline, a chunk more each time, which is not what is measured.
	now := time.Now()
	e := openEnv(t, t.TempDir(), func(o *series.Options) {
		o.Registerer = reg
		o.Now = func() time.Time { return now }
	})
	l := host(4)
	m := model{}
	put := func(s series.Sample) { e.append(s); m.put(s) }
	put(series.Sample{Labels: l, T: t0 + 3*rowkey.HourMs, V: chunk.Int(0)})
	for i := int64(0); i < 960; i++ {
		put(series.Sample{Labels: l, T: t0 + i*1000, V: chunk.Int(i)})                                  // hour 0, late
		put(series.Sample{Labels: l, T: t0 + 3*rowkey.HourMs + (i+1)*1000, V: chunk.Float(float64(i))}) // newer
	}
	sealed := metricValue(t, reg, "hourglass_head_chunks_sealed_total")
	t.Logf("1,921 points in two hours: %v chunks sealed before Flush", sealed)
	if sealed > 6 {
		t.Fatalf("%v chunks sealed for 1,921 points of two hours", sealed)
	}
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equalPoints(t, e.read("sys.cpu", t0, t0+4*rowkey.HourMs), m.points(t0, t0+4*rowkey.HourMs))
	e.close()
}
