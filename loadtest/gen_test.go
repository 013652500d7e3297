package loadtest

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func mustGen(t *testing.T, cfg GenConfig) *Generator {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// collect returns the points of g made by parts sources, each filled in
// batches of batch points, keyed by series and timestamp.
func collect(t *testing.T, g *Generator, parts, batch int) map[string]map[int64]Value {
	t.Helper()
	out := map[string]map[int64]Value{}
	for p := range parts {
		src := g.Source(p, parts)
		var buf []Point
		for i := 0; !src.Done(); i++ {
			if i > 1_000_000 {
				t.Fatal("source never done")
			}
			buf = src.Fill(buf[:0], batch, math.MaxInt64)
			for _, pt := range buf {
				k := pt.S.Key()
				if out[k] == nil {
					out[k] = map[int64]Value{}
				}
				if _, dup := out[k][pt.T]; dup {
					t.Fatalf("%s at %d made twice", k, pt.T)
				}
				out[k][pt.T] = pt.V
			}
		}
	}
	return out
}

func TestGeneratorReproducible(t *testing.T) {
	cfg := GenConfig{Seed: 42, Series: 100, Interval: 10 * time.Second, Start: t0, Steps: 50, Churn: 2}
	a := collect(t, mustGen(t, cfg), 1, 7)
	for _, tc := range []struct {
		name         string
		parts, batch int
	}{
		{"same split", 1, 7},
		{"four workers", 4, 1000},
		{"three workers, batches of one", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := collect(t, mustGen(t, cfg), tc.parts, tc.batch)
			if len(a) != len(b) {
				t.Fatalf("%d series, want %d", len(b), len(a))
			}
			for k, pa := range a {
				pb := b[k]
				if len(pa) != len(pb) {
					t.Fatalf("%s: %d points, want %d", k, len(pb), len(pa))
				}
				for ts, v := range pa {
					if pb[ts] != v {
						t.Fatalf("%s at %d: %v, want %v", k, ts, pb[ts], v)
					}
				}
			}
		})
	}
	t.Run("another seed differs", func(t *testing.T) {
		cfg2 := cfg
		cfg2.Seed = 43
		b := collect(t, mustGen(t, cfg2), 1, 7)
		same := 0
		for k, pa := range a {
			for ts, v := range pa {
				if w, ok := b[k][ts]; ok && w == v {
					same++
				}
			}
		}
		if total := cfg.Series * cfg.Steps; same > total/2 {
			t.Fatalf("%d of %d points equal under another seed", same, total)
		}
	})
}

func TestGeneratorShapes(t *testing.T) {
	const series, steps = 240, 2000 // 20 hosts
	g := mustGen(t, GenConfig{Seed: 7, Series: series, Interval: 10 * time.Second, Start: t0, Steps: steps})
	type track struct {
		s      *Series
		vals   []Value
		stamps []int64
	}
	bySeries := map[string]*track{}
	total := 0
	g.Each(func(p Point) {
		total++
		k := p.S.Key()
		tr := bySeries[k]
		if tr == nil {
			tr = &track{s: p.S}
			bySeries[k] = tr
		}
		tr.vals = append(tr.vals, p.V)
		tr.stamps = append(tr.stamps, p.T)
	})
	if total != series*steps || int64(total) != g.Points() {
		t.Fatalf("%d points, want %d (Points() says %d)", total, series*steps, g.Points())
	}
	if len(bySeries) != series {
		t.Fatalf("%d series, want %d", len(bySeries), series)
	}
	resets := 0
	for k, tr := range bySeries {
		for i, ts := range tr.stamps {
			if want := t0.UnixMilli() + int64(i)*10_000; ts != want {
				t.Fatalf("%s point %d at %d, want %d", k, i, ts, want)
			}
		}
		if len(tr.s.Tags) != 5 {
			t.Fatalf("%s: %d tags, want region, dc, rack, service, host", k, len(tr.s.Tags))
		}
		for i := 1; i < len(tr.s.Tags); i++ {
			if tr.s.Tags[i-1].Key >= tr.s.Tags[i].Key {
				t.Fatalf("%s: tags not sorted: %v", k, tr.s.Tags)
			}
		}
		md := Metrics[MetricIndex(tr.s.Metric)]
		switch md.Kind {
		case Gauge:
			distinct := map[float64]bool{}
			for i, v := range tr.vals {
				if !v.IsFloat {
					t.Fatalf("%s: gauge value %v is not a float", k, v)
				}
				cents := math.Round(v.Float * 100)
				if v.Float != cents/100 {
					t.Fatalf("%s: %v has more than two decimals", k, v.Float)
				}
				if back, _ := strconv.ParseFloat(v.String(), 64); back != v.Float || v.Float != float64(int64(cents))/100 {
					t.Fatalf("%s: %v prints as %q", k, v.Float, v.String())
				}
				if cents < float64(md.Lo) || cents > float64(md.Hi) {
					t.Fatalf("%s: %v out of [%d, %d] hundredths", k, v.Float, md.Lo, md.Hi)
				}
				if i > 0 {
					if step := math.Abs(cents - math.Round(tr.vals[i-1].Float*100)); step > float64(md.Step) {
						t.Fatalf("%s: step of %v hundredths, more than %d", k, step, md.Step)
					}
				}
				distinct[v.Float] = true
			}
			if len(distinct) < 10 {
				t.Fatalf("%s: only %d distinct values: not a walk", k, len(distinct))
			}
		case Counter:
			for i, v := range tr.vals {
				if v.IsFloat || v.Int < 0 {
					t.Fatalf("%s: counter value %v", k, v)
				}
				if i > 0 && v.Int <= tr.vals[i-1].Int {
					resets++
					if v.Int >= md.Inc {
						t.Fatalf("%s: fell from %d to %d, not to a fresh start", k, tr.vals[i-1].Int, v.Int)
					}
				}
			}
		case Constant:
			for _, v := range tr.vals {
				if v != tr.vals[0] || v.IsFloat || v.Int <= 0 {
					t.Fatalf("%s: constant moved or is not a positive integer: %v then %v", k, tr.vals[0], v)
				}
			}
		}
	}
	// 20 hosts × 4 counters × 2000 steps, resets every 10,000 to 20,000 steps
	// on average: expect about 12; none at all means resets never happen.
	if resets == 0 {
		t.Fatal("no counter ever reset")
	}
	if resets > 60 {
		t.Fatalf("%d counter resets: not occasional", resets)
	}
}

func TestGeneratorPartialHost(t *testing.T) {
	g := mustGen(t, GenConfig{Seed: 1, Series: 26, Interval: time.Second, Start: t0, Steps: 3})
	got := collect(t, g, 2, 5)
	if len(got) != 26 {
		t.Fatalf("%d series, want 26", len(got))
	}
	if g.HostSlots() != 3 {
		t.Fatalf("%d host slots, want 3", g.HostSlots())
	}
}

func TestGeneratorChurn(t *testing.T) {
	// 10 hosts; churn 1 per hour at 1 point a minute: each host lives 60 steps.
	const hosts = 10
	g := mustGen(t, GenConfig{Seed: 5, Series: hosts * len(Metrics), Interval: time.Minute, Start: t0, Steps: 120, Churn: 1})
	got := collect(t, g, 3, 100)
	if want := g.DistinctSeries(120); int64(len(got)) != want {
		t.Fatalf("%d distinct series, DistinctSeries says %d", len(got), want)
	}
	// Over two lifetimes each slot has two or three hosts.
	if len(got) < 2*hosts*len(Metrics) || len(got) > 3*hosts*len(Metrics) {
		t.Fatalf("%d distinct series over two lifetimes of %d hosts", len(got), hosts)
	}
	// At every step exactly hosts*metrics series have a point.
	perStep := map[int64]int{}
	for _, pts := range got {
		for ts := range pts {
			perStep[ts]++
		}
	}
	for ts, n := range perStep {
		if n != hosts*len(Metrics) {
			t.Fatalf("%d series at %d, want %d", n, ts, hosts*len(Metrics))
		}
	}
	// A series that stops does not come back.
	for k, pts := range got {
		var first, last int64 = math.MaxInt64, 0
		for ts := range pts {
			first, last = min(first, ts), max(last, ts)
		}
		if n := (last-first)/60_000 + 1; n != int64(len(pts)) {
			t.Fatalf("%s has gaps: %d points from %d to %d", k, len(pts), first, last)
		}
	}
	if g0 := mustGen(t, GenConfig{Seed: 5, Series: 120, Interval: time.Minute, Start: t0, Steps: 120}); g0.DistinctSeries(120) != 120 {
		t.Fatalf("no churn: %d distinct series, want 120", g0.DistinctSeries(120))
	}
}

func TestGeneratorStepLimit(t *testing.T) {
	g := mustGen(t, GenConfig{Seed: 1, Series: 24, Interval: time.Second, Start: t0})
	src := g.Source(0, 1)
	buf := src.Fill(nil, 1000, 3)
	if len(buf) != 72 || src.Step() != 3 {
		t.Fatalf("Fill up to step 3 made %d points and stopped at step %d; want 72 and 3", len(buf), src.Step())
	}
	if src.Done() {
		t.Fatal("an endless source is done")
	}
	if buf = src.Fill(buf[:0], 1000, 3); len(buf) != 0 {
		t.Fatalf("Fill past the limit made %d points", len(buf))
	}
}

func TestNewGeneratorRejects(t *testing.T) {
	ok := GenConfig{Seed: 1, Series: 10, Interval: time.Second, Start: t0, Steps: 1}
	for _, tc := range []struct {
		name string
		edit func(*GenConfig)
	}{
		{"no series", func(c *GenConfig) { c.Series = 0 }},
		{"sub-ms interval", func(c *GenConfig) { c.Interval = time.Microsecond }},
		{"negative steps", func(c *GenConfig) { c.Steps = -1 }},
		{"negative churn", func(c *GenConfig) { c.Churn = -0.5 }},
		{"NaN churn", func(c *GenConfig) { c.Churn = math.NaN() }},
		{"no start", func(c *GenConfig) { c.Start = time.Time{} }},
		{"unknown values", func(c *GenConfig) { c.Values = "decimals" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if _, err := NewGenerator(c); err == nil {
				t.Fatalf("NewGenerator(%+v) accepted", c)
			}
		})
	}
	if _, err := NewGenerator(ok); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratorFloatValues checks -values float: the same series and
// timestamps as the decimal data, gauges and counters full-precision floats
// with the same shapes, constants the same integers.
func TestGeneratorFloatValues(t *testing.T) {
	cfg := GenConfig{Seed: 3, Series: 120, Interval: 10 * time.Second, Start: t0, Steps: 300}
	dec := collect(t, mustGen(t, cfg), 1, 1000)
	cfg.Values = ValuesFloat
	flt := collect(t, mustGen(t, cfg), 3, 77)
	if len(flt) != len(dec) {
		t.Fatalf("%d series, want the decimal data's %d", len(flt), len(dec))
	}
	long, total := 0, 0
	for k, fp := range flt {
		dp := dec[k]
		if len(dp) != len(fp) {
			t.Fatalf("%s: %d points, the decimal data has %d", k, len(fp), len(dp))
		}
		metric, _, _ := strings.Cut(k, "{")
		md := Metrics[MetricIndex(metric)]
		prev, first := 0.0, true
		for i := range int64(cfg.Steps) {
			ts := t0.UnixMilli() + i*10_000
			v, ok := fp[ts]
			if !ok {
				t.Fatalf("%s: no point at %d", k, ts)
			}
			switch md.Kind {
			case Constant:
				if v != dp[ts] {
					t.Fatalf("%s: constant %v, the decimal data has %v", k, v, dp[ts])
				}
				continue
			case Gauge:
				if !v.IsFloat || v.Float < float64(md.Lo)/100 || v.Float > float64(md.Hi)/100 {
					t.Fatalf("%s: gauge %v outside [%d, %d] hundredths", k, v, md.Lo, md.Hi)
				}
				if !first && math.Abs(v.Float-prev) > float64(md.Step)/100+1e-9 {
					t.Fatalf("%s: gauge stepped from %v to %v, more than %d hundredths", k, prev, v.Float, md.Step)
				}
			case Counter:
				if !v.IsFloat || v.Float < 0 {
					t.Fatalf("%s: counter %v", k, v)
				}
				if !first && v.Float <= prev && v.Float >= float64(md.Inc) {
					t.Fatalf("%s: counter fell from %v to %v, not to a fresh start", k, prev, v.Float)
				}
			}
			if back, err := strconv.ParseFloat(v.String(), 64); err != nil || back != v.Float {
				t.Fatalf("%s: %v prints as %q, which reads back as %v", k, v.Float, v.String(), back)
			}
			total++
			if len(strconv.FormatFloat(v.Float, 'g', -1, 64)) >= 14 { // 12+ significant digits
				long++
			}
			prev, first = v.Float, false
		}
	}
	// Full precision: nearly every value needs a dozen digits or more.
	if total == 0 || float64(long) < 0.95*float64(total) {
		t.Fatalf("%d of %d gauge and counter values have 12+ significant digits: not full-precision floats", long, total)
	}
}
