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

// rowPoints decodes every cell of the data table, whose one row is of hour,
// and fails when a timestamp is in more than one cell.
func rowPoints(t *testing.T, st store.Store, hour int64) (pts, cells int) {
	t.Helper()
	seen := map[int64]bool{}
	err := st.Scan(context.Background(), store.TableData, []store.KeyRange{{}}, func(c store.Cell) bool {
		ps, err := chunk.Decode(nil, c.Value, hour)
		if err != nil {
			t.Fatalf("cell %x: %v", c.Qualifier, err)
		}
		for _, p := range ps {
			if seen[p.T] {
				t.Fatalf("timestamp %d is in more than one cell", p.T-hour)
			}
			seen[p.T] = true
		}
		cells++
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(seen), cells
}

// TestFlusherRowRecordBounded: the flusher's record of a row does not grow
// as in-order chunks add cells to it (it grew by a cell's span for each,
// docs/benchmarks.md run L), while it still counts the row's cells and
// points; and a late chunk that overlaps cells written before, one that
// falls between them, and a point rewritten are merged into the row as
// they were when the record listed every cell: every timestamp in one
// cell, the last value written winning, before and after a restart.
func TestFlusherRowRecordBounded(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	const maxPts = 20
	clock := func() time.Time { return time.UnixMilli(t0 + 10*60_000) } // the hour of t0 is in time
	e := openEnv(t, dir, func(o *series.Options) { o.ChunkMaxPoints = maxPts; o.Now = clock; o.Registerer = reg })
	ctx := context.Background()
	l := host(4)
	m := model{}
	flush := func() {
		t.Helper()
		if err := e.head.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// checkRow compares the record with the store's row.
	checkRow := func(what string) int {
		t.Helper()
		cells, pts, bytes, ok := e.head.Head.FlusherRow(l, t0)
		if !ok {
			t.Fatalf("%s: no record of the row", what)
		}
		storedPts, storedCells := rowPoints(t, e.st, t0)
		if cells != storedCells || pts != storedPts || pts != len(m[l.String()]) {
			t.Fatalf("%s: the record counts %d cells, %d points; the row has %d cells, %d points; %d were written",
				what, cells, pts, storedCells, storedPts, len(m[l.String()]))
		}
		return bytes
	}
	// 150 cells of 20 points, one a second, in order; a 30 s gap before the
	// 100th.
	tm := t0
	var size int
	for c := 0; c < 150; c++ {
		if c == 100 {
			tm += 30_000
		}
		for i := 0; i < maxPts; i++ {
			s := series.Sample{Labels: l, T: tm, V: chunk.Int(int64(c*maxPts + i))}
			e.append(s)
			m.put(s)
			tm += 1000
		}
		flush()
		bytes := checkRow("in order")
		if c == 0 {
			size = bytes
		} else if bytes != size {
			t.Fatalf("the record of the row holds %d bytes after %d cells, %d after one", bytes, c+1, size)
		}
	}
	end := t0 + rowkey.HourMs
	equalPoints(t, e.read("sys.cpu", t0, end), m.points(t0, end))

	late := [][]series.Sample{
		// A stored point rewritten, in the 11th cell.
		{{Labels: l, T: t0 + 205_000, V: chunk.Float(-1.5)}},
		// New points between stored ones, over the 51st to 53rd cells.
		{{Labels: l, T: t0 + 1_000_500, V: chunk.Int(-2)}, {Labels: l, T: t0 + 1_030_500, V: chunk.Int(-3)},
			{Labels: l, T: t0 + 1_055_500, V: chunk.Int(-4)}},
		// In the gap before the 101st cell: it overlaps no cell.
		{{Labels: l, T: t0 + 2_010_000, V: chunk.Int(-5)}, {Labels: l, T: t0 + 2_020_000, V: chunk.Int(-6)}},
	}
	// The cells each adds: the rewritten cell keeps its qualifier; the 60
	// points of three cells and 3 new ones become 4 cells; the gap's points
	// one cell of their own.
	added := []int{0, 1, 1}
	before := 150
	for i, ss := range late {
		e.append(ss...)
		for _, s := range ss {
			m.put(s)
		}
		flush()
		checkRow("late")
		equalPoints(t, e.read("sys.cpu", t0, end), m.points(t0, end))
		cells, _, _, _ := e.head.Head.FlusherRow(l, t0)
		if cells != before+added[i] {
			t.Fatalf("late chunk %d: the row went from %d to %d cells, want %d more", i, before, cells, added[i])
		}
		before = cells
	}
	// In order again after them.
	for i := 0; i < maxPts; i++ {
		s := series.Sample{Labels: l, T: tm, V: chunk.Int(int64(i))}
		e.append(s)
		m.put(s)
		tm += 1000
	}
	flush()
	if checkRow("in order after late") != size {
		t.Fatal("the record grew")
	}
	if folds := metricValue(t, reg, "hourglass_head_row_folds_total"); folds != 0 {
		t.Fatalf("%v folds of a row of full cells", folds)
	}
	e.close()
	e = openEnv(t, dir, func(o *series.Options) { o.ChunkMaxPoints = maxPts; o.Now = clock })
	equalPoints(t, e.read("sys.cpu", t0, end), m.points(t0, end))
	e.close()
}
