package series_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
)

// model is what a reader must see: series → timestamp → value.
type model map[string]map[int64]chunk.Value

func (m model) put(s series.Sample) {
	k := s.Labels.String()
	if m[k] == nil {
		m[k] = map[int64]chunk.Value{}
	}
	m[k][s.T] = s.V
}

func (m model) cut(ls []series.Labels, start, end int64) {
	for _, l := range ls {
		for t := range m[l.String()] {
			if t >= start && t <= end {
				delete(m[l.String()], t)
			}
		}
	}
}

func (m model) points(start, end int64) map[string][]chunk.Point {
	out := map[string][]chunk.Point{}
	for k, pts := range m {
		var ps []chunk.Point
		for t, v := range pts {
			if t >= start && t <= end {
				ps = append(ps, chunk.Point{T: t, V: v})
			}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].T < ps[j].T })
		if len(ps) > 0 {
			out[k] = ps
		}
	}
	return out
}

// readNonEmpty is e.read without the series that have no point in range.
func (e *env) readNonEmpty(metric string, start, end int64) map[string][]chunk.Point {
	got := e.read(metric, start, end)
	for k, v := range got {
		if len(v) == 0 {
			delete(got, k)
		}
	}
	return got
}

func (e *env) delete(ls []series.Labels, start, end int64) {
	e.t.Helper()
	if err := e.head.Delete(context.Background(), ls, start, end); err != nil {
		e.t.Fatal(err)
	}
}

func TestDeleteFromHeadAndStore(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, nil)
	m := model{}
	// Three hours for 10 series; the first two reach the store, the third
	// stays in the head (open), and a few late points wait sealed.
	ss, _ := samplesFor(10, 2*360, 10_000)
	e.append(ss...)
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		m.put(s)
	}
	var third []series.Sample
	for i := 0; i < 10; i++ {
		for p := 0; p < 100; p++ {
			third = append(third, series.Sample{Labels: host(i), T: t0 + 2*rowkey.HourMs + int64(p)*10_000, V: chunk.Int(int64(p))})
		}
	}
	e.append(third...)
	for _, s := range third {
		m.put(s)
	}
	// From the middle of the first hour to the middle of the third: one
	// partial row, one whole row, part of the head.
	victims := []series.Labels{host(0), host(3), host(4)}
	start, end := t0+30*60_000+5_000, t0+2*rowkey.HourMs+500_000
	e.delete(victims, start, end)
	m.cut(victims, start, end)
	span := [2]int64{t0, t0 + 3*rowkey.HourMs}
	equalPoints(t, e.readNonEmpty("sys.cpu", span[0], span[1]), m.points(span[0], span[1]))

	// Points written into the range afterwards stay, through a crash.
	later := series.Sample{Labels: host(3), T: t0 + rowkey.HourMs + 42_000, V: chunk.Float(4.2)}
	e.append(later)
	m.put(later)
	e.crash()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.readNonEmpty("sys.cpu", span[0], span[1]), m.points(span[0], span[1]))
	// And through a second replay, and a clean restart.
	e.crash()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.readNonEmpty("sys.cpu", span[0], span[1]), m.points(span[0], span[1]))
	e.close()
	e = openEnv(t, dir, nil)
	equalPoints(t, e.readNonEmpty("sys.cpu", span[0], span[1]), m.points(span[0], span[1]))
	e.close()
}

// TestDeleteMatchesModel runs random appends, deletes, flushes and crashes
// and checks every read against a map of what was acknowledged.
func TestDeleteMatchesModel(t *testing.T) {
	dir := t.TempDir()
	mod := func(o *series.Options) { o.ChunkMaxPoints = 40 }
	e := openEnv(t, dir, mod)
	rng := rand.New(rand.NewPCG(7, 11))
	m := model{}
	const hosts, hours = 6, 4
	span := [2]int64{t0, t0 + hours*rowkey.HourMs - 1}
	for step := 0; step < 120; step++ {
		op := rng.IntN(20)
		t.Logf("step %d op %d", step, op)
		switch {
		case op < 13:
			var batch []series.Sample
			for i := rng.IntN(200) + 1; i > 0; i-- {
				s := series.Sample{Labels: host(rng.IntN(hosts)), T: t0 + rng.Int64N(hours*rowkey.HourMs), V: chunk.Int(rng.Int64N(1000))}
				if rng.IntN(2) == 0 {
					s.V = chunk.Float(float64(rng.IntN(10000)) / 100)
				}
				batch = append(batch, s)
			}
			e.append(batch...)
			for _, s := range batch {
				m.put(s)
			}
		case op < 17:
			var ls []series.Labels
			for i := 0; i < hosts; i++ {
				if rng.IntN(3) == 0 {
					ls = append(ls, host(i))
				}
			}
			a, b := t0+rng.Int64N(hours*rowkey.HourMs), t0+rng.Int64N(hours*rowkey.HourMs)
			if a > b {
				a, b = b, a
			}
			e.delete(ls, a, b)
			m.cut(ls, a, b)
		case op < 18:
			if err := e.head.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		default:
			e.crash()
			e = openEnv(t, dir, mod)
		}
		got, want := e.readNonEmpty("sys.cpu", span[0], span[1]), m.points(span[0], span[1])
		t.Run(fmt.Sprintf("step%03d", step), func(t *testing.T) { equalPoints(t, got, want) })
		if t.Failed() {
			t.FailNow()
		}
	}
	e.close()
	e = openEnv(t, dir, mod)
	equalPoints(t, e.readNonEmpty("sys.cpu", span[0], span[1]), m.points(span[0], span[1]))
	e.close()
}

// TestDeleteOverACorruptCell: a cell that does not decode is left as it is
// and the delete completes (a failing job would hold the flusher for ever).
func TestDeleteOverACorruptCell(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, nil)
	l := host(1)
	e.append(series.Sample{Labels: l, T: t0, V: chunk.Int(1)}, series.Sample{Labels: l, T: t0 + 60_000, V: chunk.Int(2)})
	if err := e.head.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var row []byte
	err := e.st.Scan(context.Background(), store.TableData, []store.KeyRange{{Start: []byte{}}}, func(c store.Cell) bool {
		row = append([]byte(nil), c.Row...)
		return false
	})
	if err != nil || row == nil {
		t.Fatalf("no row: %v", err)
	}
	bad := store.Mutation{Row: row, Qualifier: rowkey.AppendQualifier(nil, 1, 99), Value: []byte{0xff, 0xfe}}
	if err := e.st.Write(context.Background(), store.TableData, []store.Mutation{bad}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.head.Delete(ctx, []series.Labels{l}, t0+30_000, t0+90_000); err != nil {
		t.Fatalf("delete over a corrupt cell: %v", err)
	}
	// The good cell lost its second point; the bad one is still there.
	cells := map[string][]byte{}
	err = e.st.Scan(context.Background(), store.TableData, []store.KeyRange{store.RowRange(row)}, func(c store.Cell) bool {
		cells[string(c.Qualifier)] = append([]byte(nil), c.Value...)
		return true
	})
	if err != nil || len(cells) != 2 || cells[string(bad.Qualifier)] == nil {
		t.Fatalf("row after the delete: %d cells, %v", len(cells), err)
	}
	for q, v := range cells {
		if q == string(bad.Qualifier) {
			continue
		}
		pts, err := chunk.Decode(nil, v, t0)
		if err != nil || len(pts) != 1 || pts[0].T != t0 {
			t.Fatalf("the good cell holds %v (%v), want only the point at t0", pts, err)
		}
	}
	e.close()
}
