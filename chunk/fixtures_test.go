package chunk

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fixtures in testdata/ from their generators")

// A fixture is a generated set of points, checked in as text
// (testdata/<name>.txt) together with its golden chunk
// (testdata/<name>.chunk). testdata/README.md says how they were made.
type fixture struct {
	name string
	gen  func() []Point
}

var fixtures = []fixture{
	{"gauge", genGauge},
	{"counter", genCounter},
	{"constant", genConstant},
	{"gauge-mixed", genGaugeMixed}, // bench_test.go
}

// genGauge: a 10 s gauge with two decimals, one hour (360 points) from the
// base: a random walk starting at 50.00 whose steps are uniform in
// [-0.20, +0.20] in steps of 0.01, each value float64(m)/100 (what
// strconv.ParseFloat gives for the two-decimal text).
func genGauge() []Point {
	r := rng(0x6a09e667)
	pts := make([]Point, 360)
	m := int64(5000)
	for i := range pts {
		pts[i] = Point{T: testBase + int64(i)*10000, V: Float(float64(m) / 100)}
		m += int64(r.intn(41)) - 20
	}
	return pts
}

// genCounter: a 10 s integer counter, one hour (360 points): it starts at
// 1,000,000 and grows by a uniform 50..150 each step (about 10/s).
func genCounter() []Point {
	r := rng(0xbb67ae85)
	pts := make([]Point, 360)
	c := int64(1_000_000)
	for i := range pts {
		pts[i] = Point{T: testBase + int64(i)*10000, V: Int(c)}
		c += 50 + int64(r.intn(101))
	}
	return pts
}

// genConstant: a 10 s constant, one hour (360 points): the float 1, like
// Prometheus' up.
func genConstant() []Point {
	pts := make([]Point, 360)
	for i := range pts {
		pts[i] = Point{T: testBase + int64(i)*10000, V: Float(1)}
	}
	return pts
}

// writePoints writes pts as text: a header line "base <ms>", then one line
// per point, "<unix ms> i <int>" or "<unix ms> f <float>" (the float in
// the shortest form that parses back to the same bits).
func writePoints(base int64, pts []Point) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "base %d\n", base)
	for _, p := range pts {
		kind := "f"
		if p.V.IsInt() {
			kind = "i"
		}
		fmt.Fprintf(&b, "%d %s %s\n", p.T, kind, p.V.String())
	}
	return b.Bytes()
}

func readPoints(t *testing.T, data []byte) (int64, []Point) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	var base int64
	var pts []Point
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if line == 1 {
			if len(f) != 2 || f[0] != "base" {
				t.Fatalf("line 1: want base <ms>, got %q", sc.Text())
			}
			var err error
			if base, err = strconv.ParseInt(f[1], 10, 64); err != nil {
				t.Fatalf("line 1: %v", err)
			}
			continue
		}
		if len(f) != 3 {
			t.Fatalf("line %d: want 3 fields, got %q", line, sc.Text())
		}
		ts, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		var v Value
		switch f[1] {
		case "i":
			i, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			v = Int(i)
		case "f":
			x, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			v = Float(x)
		default:
			t.Fatalf("line %d: unknown kind %q", line, f[1])
		}
		pts = append(pts, Point{T: ts, V: v})
	}
	return base, pts
}

// TestFixtures freezes the format: encoding each fixture's points must give
// its golden chunk byte for byte, and decoding the chunk the points. Run
// `go test ./chunk/ -run TestFixtures -update` to rewrite them after a
// deliberate format change (and bump formatVersion).
func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			txt := filepath.Join("testdata", fx.name+".txt")
			bin := filepath.Join("testdata", fx.name+".chunk")
			if *update {
				pts := fx.gen()
				b, err := Append(nil, testBase, pts)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(txt, writePoints(testBase, pts), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(bin, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(txt)
			if err != nil {
				t.Fatal(err)
			}
			golden, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			base, pts := readPoints(t, data)
			checkSame(t, pts, fx.gen()) // the generator still makes the checked-in points

			b, err := Append(nil, base, pts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, golden) {
				t.Errorf("encoding changed: got %d bytes %x\nwant %d bytes %x\n(run with -update after a deliberate format change)", len(b), b, len(golden), golden)
			}
			got, err := Decode(nil, golden, base)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, got, pts)
			t.Logf("%s: %d points, %d bytes, %.3f bytes/point, encoding %s", fx.name, len(pts), len(golden), float64(len(golden))/float64(len(pts)), encoding(golden[1]))
		})
	}
}
