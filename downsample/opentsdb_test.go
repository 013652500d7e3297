package downsample

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"hourglass/chunk"
)

// The golden file holds cases run through the real OpenTSDB 2.4.1 classes
// (testdata/opentsdb/README.md says how): each case is one input line in
// the oracle's protocol, then the oracle's output lines, then "END". The
// inputs are drawn only where we mean to agree with OpenTSDB bit for bit;
// the deliberate differences listed in doc.go are left out.
const goldenPath = "testdata/opentsdb/golden.txt"

var (
	update = flag.Bool("update", false, "regenerate "+goldenPath+" with -oracle")
	oracle = flag.String("oracle", "", "command that runs the OpenTSDB oracle (see testdata/opentsdb/README.md)")
)

func TestOpenTSDBGolden(t *testing.T) {
	if *update {
		if *oracle == "" {
			t.Fatal("-update needs -oracle")
		}
		writeGolden(t)
	}
	f, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(f))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		in := sc.Text()
		if in == "" || strings.HasPrefix(in, "#") {
			continue
		}
		var want []string
		for sc.Scan() && sc.Text() != "END" {
			want = append(want, sc.Text())
		}
		n++
		got := runCase(t, in)
		if !sameOutput(got, want) {
			t.Errorf("case %d: %s\ngot\n\t%s\nOpenTSDB\n\t%s", n, in, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases in %s", n, goldenPath)
	}
}

// sameOutput compares outputs line by line, any NaN matching any NaN
// (Java's canonical NaN has other bits than Go's math.NaN).
func sameOutput(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		g, w := strings.Fields(got[i]), strings.Fields(want[i])
		if len(g) != 3 || len(w) != 3 || g[0] != w[0] || g[1] != "f" || w[1] != "f" {
			return false
		}
		gb, _ := strconv.ParseUint(g[2], 16, 64)
		wb, _ := strconv.ParseUint(w[2], 16, 64)
		if !math.IsNaN(math.Float64frombits(gb)) || !math.IsNaN(math.Float64frombits(wb)) {
			return false
		}
	}
	return true
}

// runCase runs one oracle command through this package and formats the
// result as the oracle does.
func runCase(t *testing.T, line string) []string {
	t.Helper()
	f := strings.Fields(line)
	next := func() string { s := f[0]; f = f[1:]; return s }
	num := func() int64 {
		v, err := strconv.ParseInt(next(), 10, 64)
		if err != nil {
			t.Fatalf("bad case %q: %v", line, err)
		}
		return v
	}
	points := func() []chunk.Point {
		pts := make([]chunk.Point, num())
		for i := range pts {
			pts[i].T = num()
			if next() == "i" {
				pts[i].V = chunk.Int(num())
			} else {
				b, err := strconv.ParseUint(next(), 16, 64)
				if err != nil {
					t.Fatalf("bad case %q: %v", line, err)
				}
				pts[i].V = chunk.FloatBits(b)
			}
		}
		return pts
	}
	var out []chunk.Point
	switch next() {
	case "RUN":
		agg := mustLookup(t, next())
		pts := points()
		allInt := true
		for _, p := range pts {
			allInt = allInt && p.V.IsInt()
		}
		if allInt {
			var vals []int64
			for _, p := range pts {
				vals = append(vals, p.V.Int())
			}
			out = append(out, pt(0, agg.Ints(vals)))
		} else {
			var vals []float64
			for _, p := range pts {
				vals = append(vals, p.V.Float())
			}
			out = append(out, fpt(0, agg.Floats(vals)))
		}
	case "RATE":
		opts := RateOptions{Counter: next() == "1", CounterMax: num(), ResetValue: num(), DropResets: next() == "1"}
		out = Rate(nil, points(), opts)
	case "AGG":
		agg := mustLookup(t, next())
		isRate := next() == "1"
		opts := RateOptions{Counter: next() == "1", CounterMax: num(), ResetValue: num(), DropResets: next() == "1"}
		series := make([][]chunk.Point, num())
		for i := range series {
			series[i] = points()
			if isRate {
				series[i] = Rate(nil, series[i], opts)
			}
		}
		out = Aggregate(nil, series, agg, isRate)
	case "DS":
		spec := mustSpec(t, next())
		loc := mustZone(t, next())
		_, _ = num(), num() // the scan range, for OpenTSDB's FillingDownsampler
		start, end := num(), num()
		out = Downsample(nil, points(), spec, start, end, loc)
	default:
		t.Fatalf("bad case %q", line)
	}
	lines := make([]string, len(out))
	for i, p := range out {
		lines[i] = oracleLine(p)
	}
	return lines
}

func oracleLine(p chunk.Point) string {
	if p.V.IsInt() {
		return fmt.Sprintf("%d i %d", p.T, p.V.Int())
	}
	return fmt.Sprintf("%d f %x", p.T, math.Float64bits(p.V.Float()))
}

func oraclePoints(b *strings.Builder, pts []chunk.Point) {
	fmt.Fprintf(b, " %d", len(pts))
	for _, p := range pts {
		b.WriteByte(' ')
		b.WriteString(oracleLine(p))
	}
}

// writeGolden draws the cases, runs them through the oracle and writes the
// golden file.
func writeGolden(t *testing.T) {
	r := rand.New(rand.NewPCG(2024, 241))
	var cases []string
	add := func(s string) { cases = append(cases, s) }

	// Aggregators on plain value sets. ep…r3/r7 on floats differ on
	// purpose (OpenTSDB uses the default estimation), as do first, last,
	// diff and mult when NaN is among the values, and none.
	nanSafe := func(name string) bool {
		switch name {
		case "first", "last", "diff", "mult":
			return false
		}
		return true
	}
	for _, name := range Names() {
		if name == "none" {
			continue
		}
		for i := range 8 {
			floats := i%2 == 1
			if floats && strings.HasPrefix(name, "ep") {
				continue
			}
			var b strings.Builder
			b.WriteString("RUN " + name)
			oraclePoints(&b, randomValues(r, 1+r.IntN(12), floats, floats && nanSafe(name) && i%4 == 3, i >= 6))
			add(b.String())
		}
	}

	// Rates.
	for i := range 100 {
		opts := randomRateOptions(r)
		var b strings.Builder
		fmt.Fprintf(&b, "RATE %s", fmtRateOptions(opts))
		oraclePoints(&b, randomCounter(r, 2+r.IntN(15), i%2 == 1, 1000+r.Int64N(1e6)))
		add(b.String())
	}

	// Aggregation across series, without and with rates. count differs on
	// purpose. Each case is all integers or all floats: OpenTSDB also
	// looks at the types of series that have not started yet.
	for i := range 400 {
		name := Names()[r.IntN(len(Names()))]
		floats := i%2 == 1
		isRate := i%5 == 4
		if name == "none" || name == "count" || (floats || isRate) && strings.HasPrefix(name, "ep") {
			continue
		}
		opts := RateOptions{CounterMax: math.MaxInt64}
		if isRate {
			opts = randomRateOptions(r)
		}
		ns := 1 + r.IntN(5)
		var b strings.Builder
		fmt.Fprintf(&b, "AGG %s %s %s %d", name, bit(isRate), fmtRateOptions(opts), ns)
		// With rates, every series starts with the same two increasing
		// points: OpenTSDB lets a bogus first rate (against time zero)
		// stand in for a series before its first real one.
		t0, t1 := 1000+r.Int64N(1e5), int64(0)
		t1 = t0 + 1 + r.Int64N(1e4)
		for range ns {
			var pts []chunk.Point
			if isRate {
				pts = randomCounter(r, 2+r.IntN(8), floats, t0)
				pts[1].T = t1
				if pts[1].V.Float() < pts[0].V.Float() {
					pts[0], pts[1] = chunk.Point{T: t0, V: pts[1].V}, chunk.Point{T: t1, V: pts[0].V}
				}
				for k := 2; k < len(pts); k++ {
					pts[k].T = t1 + (pts[k].T - t0)
				}
			} else {
				pts = randomSeriesPoints(r, r.IntN(10), floats, floats && nanSafe(name) && i%3 == 0)
			}
			oraclePoints(&b, pts)
		}
		add(b.String())
	}

	// Downsampling.
	plain := []string{"1s", "10s", "90s", "1m", "7m", "15m", "1h", "6h", "1d"}
	calendar := []struct{ iv, zones string }{
		{"1dc", "UTC Europe/Berlin America/Denver Asia/Kabul Australia/Sydney Pacific/Auckland"},
		{"1hc", "UTC Europe/Berlin Asia/Kabul Australia/Sydney"},
		{"15mc", "UTC Europe/Berlin Asia/Kabul"},
		{"30sc", "UTC Asia/Kabul"},
		{"6hc", "UTC Asia/Kabul"},
		{"1wc", "UTC Europe/Berlin America/Denver Asia/Kabul"},
		{"1nc", "UTC Europe/Berlin America/Denver Asia/Kabul Australia/Sydney"},
		{"3nc", "UTC Europe/Berlin"},
		{"1yc", "UTC Europe/Berlin Asia/Kabul"},
	}
	// DST changes in the zones above, to draw some cases around.
	var changes []int64
	for _, z := range []string{"Europe/Berlin", "America/Denver", "Australia/Sydney", "Pacific/Auckland"} {
		loc := mustZone(t, z)
		for ts := utc(2015, 1, 1, 0, 0); ts < utc(2024, 1, 1, 0, 0); {
			_, end := time.UnixMilli(ts).In(loc).ZoneBounds()
			if end.IsZero() {
				break
			}
			changes = append(changes, end.UnixMilli())
			ts = end.UnixMilli()
		}
	}
	fills := []string{"", "-nan", "-null", "-zero", "-none"}
	for i := range 800 {
		name := Names()[r.IntN(len(Names()))]
		if name == "none" || strings.HasPrefix(name, "ep") {
			continue
		}
		var iv, zone string
		switch {
		case i%10 == 0:
			iv, zone = "0all", "UTC"
		case i%2 == 0:
			iv, zone = plain[r.IntN(len(plain))], "UTC"
		default:
			c := calendar[r.IntN(len(calendar))]
			zs := strings.Fields(c.zones)
			iv, zone = c.iv, zs[r.IntN(len(zs))]
		}
		spec := mustSpec(t, iv+"-"+name+fills[r.IntN(len(fills))])
		loc := mustZone(t, zone)
		bk := newBucketer(spec, loc)
		base := utc(2015, 1, 1, 0, 0) + r.Int64N(9*365*day)
		if spec.Calendar && i%3 != 0 {
			base = changes[r.IntN(len(changes))] - r.Int64N(min(spec.Interval*3, 60*day))
		}
		width := spec.Interval
		if spec.All {
			width = hour * (1 + r.Int64N(48))
		}
		// start on a bucket boundary; end anywhere a few buckets later.
		start := base
		if !spec.All {
			start, _ = bk.bounds(base)
		}
		end := start + r.Int64N(int64(2+r.IntN(12))*width)
		var pts []chunk.Point
		step := max(1, (end-start)/int64(1+r.IntN(15)))
		for ts := start + r.Int64N(step); ts <= end; ts += 1 + r.Int64N(2*step) {
			if spec.All && ts == end {
				break // OpenTSDB's 0all leaves out a point at exactly end
			}
			if r.IntN(2) == 0 {
				pts = append(pts, pt(ts, r.Int64N(2000)-1000))
			} else {
				pts = append(pts, fpt(ts, float64(r.IntN(8000)-4000)/16))
			}
		}
		if len(pts) == 0 {
			continue
		}
		scanEnd := end
		if !spec.All {
			_, scanEnd = bk.bounds(end)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "DS %s %s %d %d %d %d", spec, zone, start, scanEnd, start, end)
		oraclePoints(&b, pts)
		add(b.String())
	}

	cmd := exec.Command("sh", "-c", *oracle)
	cmd.Stdin = strings.NewReader(strings.Join(cases, "\n") + "\n")
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	outs := strings.SplitAfter(string(res), "END\n")
	var g strings.Builder
	g.WriteString("# Generated by: go test ./downsample -run TestOpenTSDBGolden -update -oracle=<cmd>\n")
	g.WriteString("# from OpenTSDB v2.4.1 and Commons Math 3.4.1; see README.md. Do not edit.\n")
	kept := 0
	for i, c := range cases {
		o := outs[i]
		if strings.HasPrefix(o, "ERR") {
			t.Logf("oracle failed on %s: %s", c, o)
			continue
		}
		g.WriteString(c + "\n" + o)
		kept++
	}
	if err := os.WriteFile(goldenPath, []byte(g.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d cases to %s", kept, goldenPath)
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func fmtRateOptions(o RateOptions) string {
	cmax := o.CounterMax
	if cmax == 0 {
		cmax = math.MaxInt64
	}
	return fmt.Sprintf("%s %d %d %s", bit(o.Counter), cmax, o.ResetValue, bit(o.DropResets))
}

func randomRateOptions(r *rand.Rand) RateOptions {
	return RateOptions{
		Counter:    r.IntN(2) == 0,
		CounterMax: []int64{0, 100, 5000, math.MaxInt64}[r.IntN(4)],
		ResetValue: []int64{0, 0, 1, 50}[r.IntN(4)],
		DropResets: r.IntN(3) == 0,
	}
}

func randomValues(r *rand.Rand, n int, floats, nans, huge bool) []chunk.Point {
	pts := make([]chunk.Point, n)
	for i := range pts {
		switch {
		case floats && nans && r.IntN(3) == 0:
			pts[i] = fpt(0, math.NaN())
		case floats && huge:
			pts[i] = fpt(0, r.NormFloat64()*1e12)
		case floats:
			pts[i] = fpt(0, float64(r.IntN(8000)-4000)/16)
		case huge:
			pts[i] = pt(0, r.Int64()-r.Int64())
		default:
			pts[i] = pt(0, r.Int64N(2000)-1000)
		}
	}
	return pts
}

// randomCounter returns a mostly increasing series with resets.
func randomCounter(r *rand.Rand, n int, floats bool, t0 int64) []chunk.Point {
	pts := make([]chunk.Point, n)
	v, ts := r.Int64N(100), t0
	for i := range pts {
		if r.IntN(6) == 0 {
			v = r.Int64N(50) // a reset
		} else {
			v += r.Int64N(200)
		}
		if floats {
			pts[i] = fpt(ts, float64(v)+0.25)
		} else {
			pts[i] = pt(ts, v)
		}
		ts += 1 + r.Int64N(30000)
	}
	return pts
}

func randomSeriesPoints(r *rand.Rand, n int, floats, nans bool) []chunk.Point {
	pts := make([]chunk.Point, n)
	ts := 1000 + r.Int64N(20000)
	for i := range pts {
		switch {
		case floats && nans && r.IntN(5) == 0:
			pts[i] = fpt(ts, math.NaN())
		case floats:
			pts[i] = fpt(ts, float64(r.IntN(8000)-4000)/16)
		default:
			pts[i] = pt(ts, r.Int64N(2000)-1000)
		}
		ts += 1 + r.Int64N(5000)
	}
	return pts
}
