package series_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"hourglass/chunk"
	"hourglass/series"
)

// TestStateSamplesTornSegment: series-state samples (0x07) code a series'
// point against its previous one in the segment, in an earlier record. A
// crash can leave the segment cut anywhere (a torn tail); wherever it is
// cut, replay must give back exactly the requests before the cut — every
// series the same whole requests, every value the one written — and the
// whole segment every request. Requests of six series (ints, two-decimal
// floats, full-precision floats), one point each, one record each.
func TestStateSamplesTornSegment(t *testing.T) {
	const hosts, reqs = 6, 40
	dir := t.TempDir()
	e := openEnv(t, dir, nil)
	want := map[string][]chunk.Point{}
	for p := 0; p < reqs; p++ {
		var ss []series.Sample
		for h := 0; h < hosts; h++ {
			ts := t0 + int64(p)*10_000
			if p%7 == 3 {
				ts += 1234 // an irregular step now and then
			}
			var v chunk.Value
			switch h % 3 {
			case 0:
				v = chunk.Int(int64(p*p*1000 - h))
			case 1:
				v = chunk.Float(float64(p*37+h) / 100)
			default:
				v = chunk.Float(math.Pi * float64(p+h) / 7)
			}
			ss = append(ss, series.Sample{Labels: host(h), T: ts, V: v})
			want[host(h).String()] = append(want[host(h).String()], chunk.Point{T: ts, V: v})
		}
		e.append(ss...)
	}
	e.crash()

	seg := largestSegment(t, filepath.Join(dir, "wal"))
	info, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	size := info.Size()
	rel, _ := filepath.Rel(dir, seg)
	last := -1
	for i := 0; i <= 30; i++ {
		cut := size * int64(i) / 30
		cp := t.TempDir()
		if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(cp, rel), cut); err != nil {
			t.Fatal(err)
		}
		e := openEnv(t, cp, nil)
		got := e.read("sys.cpu", t0, t0+int64(reqs)*10_000+2000)
		n := -1
		for h := 0; h < hosts; h++ {
			k := host(h).String()
			g := got[k]
			if n == -1 {
				n = len(g)
			}
			if len(g) != n {
				t.Fatalf("cut at %d of %d: %s has %d points, %s %d: requests are records, whole or gone", cut, size, k, len(g), host(0), n)
			}
			if !slices.EqualFunc(g, want[k][:len(g)], func(a, b chunk.Point) bool { return a.T == b.T && a.V.Identical(b.V) }) {
				t.Fatalf("cut at %d of %d: %s replayed %v, want a prefix of %v", cut, size, k, g, want[k])
			}
		}
		if n < last {
			t.Fatalf("cut at %d: %d requests replayed, fewer than %d at a shorter cut", cut, n, last)
		}
		last = n
		e.close()
	}
	if last != reqs {
		t.Fatalf("the whole segment replayed %d requests, want %d", last, reqs)
	}
}

// largestSegment returns the path of the largest WAL segment in dir.
func largestSegment(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var best string
	var bestSize int64 = -1
	for _, de := range ents {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() || de.Name() == "LOCK" {
			continue
		}
		if info.Size() > bestSize {
			best, bestSize = filepath.Join(dir, de.Name()), info.Size()
		}
	}
	if best == "" {
		t.Fatalf("no segment in %s", dir)
	}
	return best
}
