package downsample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has

	"hourglass/chunk"
)

const (
	sec  = int64(1000)
	mins = 60 * sec
	hour = 60 * mins
	day  = 24 * hour
)

// pt makes an integer point, fpt a float point.
func pt(t, v int64) chunk.Point          { return chunk.Point{T: t, V: chunk.Int(v)} }
func fpt(t int64, v float64) chunk.Point { return chunk.Point{T: t, V: chunk.Float(v)} }

// fmtPoints renders points as "t:v" with the value's kind: 5 is an integer,
// 5.0 a float ("%v" of a float that is integral prints no point, so floats
// always get one).
func fmtPoints(pts []chunk.Point) string {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%s", p.T, fmtValue(p.V))
	}
	return b.String()
}

func fmtValue(v chunk.Value) string {
	if v.IsInt() {
		return fmt.Sprint(v.Int())
	}
	f := v.Float()
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return fmt.Sprint(f)
	}
	return fmt.Sprintf("%.1f", f)
}

func mustSpec(t testing.TB, s string) Spec {
	t.Helper()
	spec, err := ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestDownsample(t *testing.T) {
	// Ten-second data: 0s:1 10s:2 | 70s:4 | 130s:6 140s:7, in 1m buckets
	// 0–60s, 60–120s, 120–180s.
	src := []chunk.Point{pt(0, 1), pt(10*sec, 2), pt(70*sec, 4), pt(130*sec, 6), pt(140*sec, 7)}
	tests := []struct {
		spec       string
		start, end int64
		want       string
	}{
		// avg of integers is a float division: (1+2)/2 = 1.5. Values are
		// always floats, even 4.0.
		{"1m-avg", 0, 200 * sec, "0:1.5 60000:4.0 120000:6.5"},
		{"1m-sum", 0, 200 * sec, "0:3.0 60000:4.0 120000:13.0"},
		{"1m-count", 0, 200 * sec, "0:2.0 60000:1.0 120000:2.0"},
		{"1m-dev", 0, 200 * sec, "0:0.5 60000:0.0 120000:0.5"},
		{"1m-first", 0, 200 * sec, "0:1.0 60000:4.0 120000:6.0"},
		{"1m-diff", 0, 200 * sec, "0:1.0 60000:0.0 120000:1.0"},
		{"1m-p99", 0, 200 * sec, "0:2.0 60000:4.0 120000:7.0"},
		// 30s buckets: 0–30 {1,2}, 60–90 {4}, 120–150 {6,7}; none between.
		{"30s-max", 0, 200 * sec, "0:2.0 60000:4.0 120000:7.0"},
		// 2m: 0–120 {1,2,4}, 120–240 {6,7}.
		{"2m-sum", 0, 200 * sec, "0:7.0 120000:13.0"},
		// The end is inclusive: a point at end counts, its bucket is emitted.
		{"1m-sum", 0, 130 * sec, "0:3.0 60000:4.0 120000:6.0"},
		{"1m-sum", 0, 129 * sec, "0:3.0 60000:4.0"},
		// An unaligned start: the bucket at 0 would be stamped before start,
		// so it is not emitted, and neither are its points.
		{"1m-sum", 5 * sec, 200 * sec, "60000:4.0 120000:13.0"},
		// A start on a boundary keeps its bucket, but only points from start on.
		{"1m-sum", 60 * sec, 200 * sec, "60000:4.0 120000:13.0"},
		{"1m-sum", 300 * sec, 400 * sec, ""},
		{"1m-sum", 200 * sec, 100 * sec, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d-%d", tt.spec, tt.start, tt.end), func(t *testing.T) {
			got := Downsample(nil, src, mustSpec(t, tt.spec), tt.start, tt.end, nil)
			if s := fmtPoints(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

func TestDownsampleAppends(t *testing.T) {
	dst := []chunk.Point{pt(-1, -1)}
	got := Downsample(dst, []chunk.Point{pt(0, 1)}, mustSpec(t, "1m-sum"), 0, 0, nil)
	if s := fmtPoints(got); s != "-1:-1 0:1.0" {
		t.Fatalf("got %s", s)
	}
}

func TestDownsampleFill(t *testing.T) {
	// Data in the buckets at 0 and 180s; the query runs 0–240s, so the
	// buckets at 60, 120 and 240s are empty.
	src := []chunk.Point{pt(0, 1), pt(200*sec, 2)}
	tests := []struct {
		spec string
		want string
	}{
		{"1m-sum", "0:1.0 180000:2.0"},
		{"1m-sum-none", "0:1.0 180000:2.0"},
		{"1m-sum-nan", "0:1.0 60000:NaN 120000:NaN 180000:2.0 240000:NaN"},
		{"1m-sum-null", "0:1.0 60000:NaN 120000:NaN 180000:2.0 240000:NaN"},
		{"1m-sum-zero", "0:1.0 60000:0.0 120000:0.0 180000:2.0 240000:0.0"},
		// count of an empty bucket is a fill, not a zero count.
		{"1m-count-nan", "0:1.0 60000:NaN 120000:NaN 180000:1.0 240000:NaN"},
		{"2m-sum-zero", "0:1.0 120000:2.0 240000:0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got := Downsample(nil, src, mustSpec(t, tt.spec), 0, 240*sec, nil)
			if s := fmtPoints(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}

	// Fill starts at the first bucket stamped at or after start; the point
	// at 40s is in the partial bucket stamped 0, which is not emitted.
	src = []chunk.Point{pt(40*sec, 1), pt(100*sec, 5), pt(200*sec, 2)}
	got := Downsample(nil, src, mustSpec(t, "1m-sum-zero"), 30*sec, 150*sec, nil)
	if s, want := fmtPoints(got), "60000:5.0 120000:0.0"; s != want {
		t.Errorf("unaligned start: got %s, want %s", s, want)
	}
	// A series with no point in range gets no fill at all.
	got = Downsample(nil, src, mustSpec(t, "1m-sum-zero"), 110*sec, 190*sec, nil)
	if len(got) != 0 {
		t.Errorf("series without points in range: got %s", fmtPoints(got))
	}
	// A bucket holding only NaN is not empty: it aggregates to NaN, or to
	// a count of 0.
	nanSrc := []chunk.Point{fpt(0, math.NaN()), fpt(60*sec, 3)}
	got = Downsample(nil, nanSrc, mustSpec(t, "1m-count-zero"), 0, 60*sec, nil)
	if s, want := fmtPoints(got), "0:0.0 60000:1.0"; s != want {
		t.Errorf("NaN bucket: got %s, want %s", s, want)
	}
	got = Downsample(nil, nanSrc, mustSpec(t, "1m-max"), 0, 60*sec, nil)
	if s, want := fmtPoints(got), "0:NaN 60000:3.0"; s != want {
		t.Errorf("NaN bucket: got %s, want %s", s, want)
	}
}

func TestDownsampleAll(t *testing.T) {
	src := []chunk.Point{pt(5, 1), pt(10, 2), pt(20, 3), pt(30, 4)}
	tests := []struct {
		spec       string
		start, end int64
		want       string
	}{
		// One bucket, stamped with the start; points outside [start, end]
		// are left out, the end is inclusive.
		{"0all-sum", 5, 20, "5:6.0"},
		{"0all-sum", 6, 20, "6:5.0"},
		{"0all-avg", 0, 100, "0:2.5"},
		{"0all-count", 0, 100, "0:4.0"},
		{"0all-sum-zero", 40, 100, ""}, // no data, no point, whatever the fill
		{"0all-sum-nan", 40, 100, ""},
	}
	for _, tt := range tests {
		got := Downsample(nil, src, mustSpec(t, tt.spec), tt.start, tt.end, nil)
		if s := fmtPoints(got); s != tt.want {
			t.Errorf("%s [%d,%d]: got %s, want %s", tt.spec, tt.start, tt.end, s, tt.want)
		}
	}
}

func TestDownsampleFloatsAndNaN(t *testing.T) {
	src := []chunk.Point{fpt(0, 1.5), fpt(1*sec, math.NaN()), pt(2*sec, 2), fpt(3*sec, math.NaN())}
	got := Downsample(nil, src, mustSpec(t, "1m-avg"), 0, 10*sec, nil)
	if s, want := fmtPoints(got), "0:1.75"; s != want { // NaNs skipped: (1.5+2)/2
		t.Errorf("got %s, want %s", s, want)
	}
}

func TestDownsampleNegativeTimestamps(t *testing.T) {
	// Buckets are floor-aligned: −1 belongs to [−60000, 0).
	src := []chunk.Point{pt(-61*sec, 1), pt(-1, 2), pt(0, 3)}
	got := Downsample(nil, src, mustSpec(t, "1m-sum"), -120*sec, 0, nil)
	if s, want := fmtPoints(got), "-120000:1.0 -60000:2.0 0:3.0"; s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}

func TestDownsampleDuplicates(t *testing.T) {
	src := []chunk.Point{pt(0, 1), pt(0, 1), pt(30*sec, 5), pt(30*sec, 7)}
	got := Downsample(nil, src, mustSpec(t, "1m-sum"), 0, 60*sec, nil)
	if s, want := fmtPoints(got), "0:14.0"; s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}

func TestDownsampleBadSpecPanics(t *testing.T) {
	for name, spec := range map[string]Spec{
		"zero":     {},
		"none":     {Interval: 1, Unit: "ms", N: 1, Agg: mustLookup(t, "none")},
		"interval": {Agg: mustLookup(t, "sum")},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Downsample(nil, []chunk.Point{pt(0, 1)}, spec, 0, 1, nil)
		}()
	}
}

func utc(y int, m time.Month, d, h, mi int) int64 {
	return time.Date(y, m, d, h, mi, 0, 0, time.UTC).UnixMilli()
}

// hourly returns a point of value 1 every elapsed hour in [from, to).
func hourly(from, to int64) []chunk.Point {
	var pts []chunk.Point
	for t := from; t < to; t += hour {
		pts = append(pts, pt(t, 1))
	}
	return pts
}

func TestDownsampleCalendarDST(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	// Spring: on 2024-03-31 Berlin skips 02:00–03:00 CET, a 23-hour day.
	// Local midnights: 30th 00:00 CET = 29th 23:00Z, 31st 00:00 CET =
	// 30th 23:00Z, 1st 00:00 CEST = 31st 22:00Z, 2nd 00:00 CEST = 1st 22:00Z.
	src := hourly(utc(2024, 3, 29, 23, 0), utc(2024, 4, 1, 22, 0))
	got := Downsample(nil, src, mustSpec(t, "1dc-count"), utc(2024, 3, 29, 23, 0), utc(2024, 4, 1, 22, 0), berlin)
	want := fmt.Sprintf("%d:24.0 %d:23.0 %d:24.0", utc(2024, 3, 29, 23, 0), utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 22, 0))
	if s := fmtPoints(got); s != want {
		t.Errorf("spring 1dc:\ngot  %s\nwant %s", s, want)
	}
	// Without c, days are epoch-aligned 24h buckets at 00:00Z.
	got = Downsample(nil, src, mustSpec(t, "1d-count"), utc(2024, 3, 29, 0, 0), utc(2024, 4, 1, 22, 0), berlin)
	want = fmt.Sprintf("%d:1.0 %d:24.0 %d:24.0 %d:22.0", utc(2024, 3, 29, 0, 0), utc(2024, 3, 30, 0, 0), utc(2024, 3, 31, 0, 0), utc(2024, 4, 1, 0, 0))
	if s := fmtPoints(got); s != want {
		t.Errorf("spring 1d:\ngot  %s\nwant %s", s, want)
	}

	// Autumn: on 2024-10-27 Berlin repeats 02:00–03:00, a 25-hour day.
	// Midnights: 26th 00:00 CEST = 25th 22:00Z, 27th = 26th 22:00Z,
	// 28th 00:00 CET = 27th 23:00Z, 29th = 28th 23:00Z.
	src = hourly(utc(2024, 10, 25, 22, 0), utc(2024, 10, 28, 23, 0))
	got = Downsample(nil, src, mustSpec(t, "1dc-count"), utc(2024, 10, 25, 22, 0), utc(2024, 10, 28, 23, 0), berlin)
	want = fmt.Sprintf("%d:24.0 %d:25.0 %d:24.0", utc(2024, 10, 25, 22, 0), utc(2024, 10, 26, 22, 0), utc(2024, 10, 27, 23, 0))
	if s := fmtPoints(got); s != want {
		t.Errorf("autumn 1dc:\ngot  %s\nwant %s", s, want)
	}

	// Hours stay hours across the change: 25 one-point buckets that day.
	got = Downsample(nil, src, mustSpec(t, "1hc-count"), utc(2024, 10, 26, 22, 0), utc(2024, 10, 27, 22, 59), berlin)
	if len(got) != 25 {
		t.Errorf("autumn 1hc: %d buckets, want 25: %s", len(got), fmtPoints(got))
	}
	for i, p := range got {
		if p.T != utc(2024, 10, 26, 22, 0)+int64(i)*hour || p.V.Float() != 1 {
			t.Errorf("autumn 1hc bucket %d = %d:%v", i, p.T, p.V)
		}
	}

	// 6hc counts elapsed hours from local midnight (java.util.Calendar
	// adds hours as milliseconds): on the 23-hour day the buckets start at
	// 00:00 CET, 07:00, 13:00, 19:00 CEST and the last one is 5 hours.
	src = hourly(utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 22, 0))
	got = Downsample(nil, src, mustSpec(t, "6hc-count"), utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 22, 0), berlin)
	want = fmt.Sprintf("%d:6.0 %d:6.0 %d:6.0 %d:5.0", utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 5, 0), utc(2024, 3, 31, 11, 0), utc(2024, 3, 31, 17, 0))
	if s := fmtPoints(got); s != want {
		t.Errorf("spring 6hc:\ngot  %s\nwant %s", s, want)
	}

	// Fill across the DST change steps by calendar days too.
	src = []chunk.Point{pt(utc(2024, 3, 29, 23, 0), 1), pt(utc(2024, 4, 2, 21, 0), 1)}
	got = Downsample(nil, src, mustSpec(t, "1dc-sum-zero"), utc(2024, 3, 29, 23, 0), utc(2024, 4, 2, 21, 0), berlin)
	want = fmt.Sprintf("%d:1.0 %d:0.0 %d:0.0 %d:1.0", utc(2024, 3, 29, 23, 0), utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 22, 0), utc(2024, 4, 1, 22, 0))
	if s := fmtPoints(got); s != want {
		t.Errorf("1dc fill:\ngot  %s\nwant %s", s, want)
	}
}

func TestDownsampleCalendarMonthsAndYears(t *testing.T) {
	src := []chunk.Point{
		pt(utc(2024, 1, 15, 0, 0), 1),
		pt(utc(2024, 1, 31, 23, 59), 2),
		pt(utc(2024, 2, 1, 0, 0), 4),
		pt(utc(2024, 2, 29, 12, 0), 8), // leap day
		pt(utc(2024, 3, 1, 0, 0), 16),
		pt(utc(2024, 7, 4, 0, 0), 32),
		pt(utc(2025, 1, 1, 0, 0), 64),
	}
	start, end := utc(2024, 1, 1, 0, 0), utc(2025, 12, 31, 0, 0)
	tests := []struct {
		spec string
		loc  string
		want string
	}{
		{"1nc-sum", "UTC", fmt.Sprintf("%d:3.0 %d:12.0 %d:16.0 %d:32.0 %d:64.0",
			utc(2024, 1, 1, 0, 0), utc(2024, 2, 1, 0, 0), utc(2024, 3, 1, 0, 0), utc(2024, 7, 1, 0, 0), utc(2025, 1, 1, 0, 0))},
		// Quarters from January.
		{"3nc-sum", "UTC", fmt.Sprintf("%d:31.0 %d:32.0 %d:64.0",
			utc(2024, 1, 1, 0, 0), utc(2024, 7, 1, 0, 0), utc(2025, 1, 1, 0, 0))},
		{"1yc-sum", "UTC", fmt.Sprintf("%d:63.0 %d:64.0", utc(2024, 1, 1, 0, 0), utc(2025, 1, 1, 0, 0))},
		// In Berlin, 2024-01-31 23:59Z is already February (00:59 CET), and
		// a month starts at local midnight: Feb 1 00:00 CET = Jan 31 23:00Z.
		{"1nc-sum", "Europe/Berlin", fmt.Sprintf("%d:1.0 %d:14.0 %d:16.0 %d:32.0 %d:64.0",
			utc(2023, 12, 31, 23, 0), utc(2024, 1, 31, 23, 0), utc(2024, 2, 29, 23, 0), utc(2024, 6, 30, 22, 0), utc(2024, 12, 31, 23, 0))},
		// Without c, n is 30 days aligned to the epoch.
		// Without c, n is 30 days aligned to the epoch: buckets start on
		// 2023-12-19 {Jan 15}, 2024-01-18 {Jan 31, Feb 1}, 02-17 {Feb 29,
		// Mar 1}, 06-16 {Jul 4} and 12-13 {Jan 1}.
		{"1n-count", "UTC", fmt.Sprintf("%d:1.0 %d:2.0 %d:2.0 %d:1.0 %d:1.0",
			utc(2023, 12, 19, 0, 0), utc(2024, 1, 18, 0, 0), utc(2024, 2, 17, 0, 0), utc(2024, 6, 16, 0, 0), utc(2024, 12, 13, 0, 0))},
	}
	for _, tt := range tests {
		t.Run(tt.spec+"/"+tt.loc, func(t *testing.T) {
			s, e := start, end
			if tt.loc == "Europe/Berlin" {
				s = utc(2024, 1, 1, 0, 0) - hour // local midnight, Jan 1st
			}
			if tt.spec == "1n-count" {
				s = utc(2023, 12, 19, 0, 0)
			}
			got := Downsample(nil, src, mustSpec(t, tt.spec), s, e, mustZone(t, tt.loc))
			if g := fmtPoints(got); g != tt.want {
				t.Errorf("got  %s\nwant %s", g, tt.want)
			}
		})
	}
}

// The calendar tests of OpenTSDB 2.4.1's TestDownsampler, with their
// expected timestamps and values, in the zones they use.
func TestDownsampleCalendarOpenTSDB(t *testing.T) {
	const baseTime = 1356998400000 // 2013-01-01 00:00Z
	const dstTS = 1450137600000    // 2015-12-15 00:00Z
	const dec1st = 1448928000000   // 2015-12-01 00:00Z
	series := func(ts ...int64) []chunk.Point {
		var pts []chunk.Point
		for i, t := range ts {
			pts = append(pts, pt(t, int64(i+1)))
		}
		return pts
	}
	hourData := series(baseTime, baseTime+1800000, baseTime+3599000, baseTime+3600000, baseTime+5400000, baseTime+7199000)
	dayData := series(dstTS, dstTS+86399000, dstTS+126001000, dstTS+172799000, dstTS+172800000, dstTS+242999000)
	weekData := series(dstTS, dstTS+7*day, 1451129400000, dstTS+21*day, 1452367799000)
	monthData := series(dec1st, 1451559600000, 1451606400000, 1454284800000, 1456704000000, 1456772400000)
	tests := []struct {
		name, spec, zone string
		src              []chunk.Point
		want             string
	}{
		{"calendar", "1dc-sum", "America/Denver", []chunk.Point{pt(baseTime+5000, 1), pt(baseTime+15000, 2), pt(baseTime+25000, 4),
			pt(baseTime+35000, 8), pt(baseTime+45000, 16), pt(baseTime+55000, 32)}, "1356937200000:63.0"},
		{"hour TV", "1hc-sum", "Pacific/Funafuti", hourData, "1356998400000:6.0 1357002000000:15.0"},
		{"hour AF", "1hc-sum", "Asia/Kabul", hourData, "1356996600000:1.0 1357000200000:9.0 1357003800000:11.0"},
		{"4 hours AF", "4hc-sum", "Asia/Kabul", hourData, "1356996600000:21.0"},
		{"day UTC", "1dc-sum", "UTC", dayData, "1450137600000:3.0 1450224000000:7.0 1450310400000:11.0"},
		{"day TV", "1dc-sum", "Pacific/Funafuti", dayData, "1450094400000:1.0 1450180800000:5.0 1450267200000:9.0 1450353600000:6.0"},
		{"day FJ", "1dc-sum", "Pacific/Fiji", dayData, "1450090800000:1.0 1450177200000:2.0 1450263600000:12.0 1450350000000:6.0"},
		{"day AF", "1dc-sum", "Asia/Kabul", dayData, "1450121400000:1.0 1450207800000:5.0 1450294200000:15.0"},
		{"3 days AF", "3dc-sum", "Asia/Kabul", dayData, "1450121400000:21.0"},
		{"week UTC", "1wc-sum", "UTC", weekData, "1449964800000:1.0 1450569600000:5.0 1451779200000:9.0"},
		{"week TV", "1wc-sum", "Pacific/Funafuti", weekData, "1449921600000:1.0 1450526400000:5.0 1451736000000:4.0 1452340800000:5.0"},
		{"week AF", "1wc-sum", "Asia/Kabul", weekData, "1449948600000:1.0 1450553400000:5.0 1451763000000:9.0"},
		{"month UTC", "1nc-sum", "UTC", monthData, "1448928000000:3.0 1451606400000:3.0 1454284800000:15.0"},
		{"month TV", "1nc-sum", "Pacific/Funafuti", monthData, "1448884800000:3.0 1451563200000:3.0 1454241600000:9.0 1456747200000:6.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Downsample(nil, tt.src, mustSpec(t, tt.spec), 0, math.MaxInt64, mustZone(t, tt.zone))
			if s := fmtPoints(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// Every calendar bucket holds the timestamp it was asked about, and the
// ones that follow the calendar (d, w, n, y) start at the first instant of
// a local day, in zones with awkward offsets and DST rules.
func TestCalendarBoundsProperties(t *testing.T) {
	zones := []string{
		"UTC", "Europe/Berlin", "America/New_York", "America/Havana", // DST at midnight
		"America/Sao_Paulo", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe", // 30-minute DST
		"Pacific/Chatham", "Asia/Tehran", "Africa/Casablanca", "Pacific/Apia", // skipped 2011-12-30
		"America/St_Johns", "Asia/Beirut",
	}
	specs := []string{
		"1msc", "250msc", "7msc", "1500msc", "90000msc",
		"1sc", "7sc", "90sc", "7200sc",
		"1mc", "15mc", "7mc", "90mc", "2000mc",
		"1hc", "2hc", "5hc", "24hc", "48hc", "1000hc",
		"1dc", "2dc", "7dc", "400dc", "1wc", "2wc", "1nc", "5nc", "18nc", "1yc", "5yc",
	}
	r := rand.New(rand.NewPCG(1, 2))
	lo, hi := utc(1995, 1, 1, 0, 0), utc(2035, 1, 1, 0, 0)
	for _, zn := range zones {
		loc := mustZone(t, zn)
		for _, sn := range specs {
			spec := mustSpec(t, sn+"-sum")
			bk := newBucketer(spec, loc)
			for range 300 {
				ts := lo + r.Int64N(hi-lo)
				s, e := bk.bounds(ts)
				if !(s <= ts && ts < e) {
					t.Fatalf("%s %s: bounds(%d) = [%d, %d)", zn, sn, ts, s, e)
				}
				if e-s > spec.Interval+day && spec.Unit != "n" && spec.Unit != "y" {
					t.Fatalf("%s %s: bounds(%d) = [%d, %d) is too long", zn, sn, ts, s, e)
				}
				if spec.Unit == "d" || spec.Unit == "w" || spec.Unit == "n" || spec.Unit == "y" {
					st := time.UnixMilli(s).In(loc)
					prev := time.UnixMilli(s - 1).In(loc)
					if st.YearDay() == prev.YearDay() {
						t.Fatalf("%s %s: bucket of %d starts at %v, not at the start of a day", zn, sn, ts, st)
					}
				}
				// The next bucket starts where this one ends.
				if s2, _ := bk.bounds(e); s2 < s || s2 > e {
					t.Fatalf("%s %s: bucket after [%d, %d) starts at %d", zn, sn, s, e, s2)
				}
			}
		}
	}
}

// Downsample never emits out of order, out of range, or twice for a
// bucket, and fill leaves no gap.
func TestDownsampleRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	zones := []string{"UTC", "Europe/Berlin", "Australia/Lord_Howe", "America/Havana", "Asia/Kathmandu"}
	specs := []string{"1m-sum", "7m-avg-zero", "1h-count-nan", "1hc-max-null", "15mc-min-zero", "7mc-sum-nan",
		"1dc-sum-zero", "2hc-p95-nan", "1wc-sum", "1nc-sum-zero", "0all-sum", "90sc-median"}
	for i := range 2000 {
		loc := mustZone(t, zones[r.IntN(len(zones))])
		spec := mustSpec(t, specs[r.IntN(len(specs))])
		base := utc(2010, 1, 1, 0, 0) + r.Int64N(15*365*day)
		span := r.Int64N(40 * day)
		var src []chunk.Point
		for tt := base + r.Int64N(day); tt < base+span; tt += 1 + r.Int64N(6*hour) {
			src = append(src, pt(tt, r.Int64N(100)))
		}
		start, end := base+r.Int64N(day), base+span-r.Int64N(day)
		got := Downsample(nil, src, spec, start, end, loc)
		bk := newBucketer(spec, loc)
		for j, p := range got {
			if p.T < start || p.T > end || (j > 0 && p.T <= got[j-1].T) || p.V.IsInt() {
				t.Fatalf("case %d %v: bad output %s", i, spec, fmtPoints(got))
			}
			if spec.Fill != FillNone && j > 0 && !spec.All {
				if _, e := bk.bounds(got[j-1].T); e != p.T {
					t.Fatalf("case %d %v: gap between %d and %d", i, spec, got[j-1].T, p.T)
				}
			}
		}
	}
}

// Unsorted input is outside the contract, but it must not hang or panic.
func TestUnsortedInputTerminates(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	p95 := mustLookup(t, "p95")
	for range 500 {
		var series [][]chunk.Point
		for range 1 + r.IntN(4) {
			var pts []chunk.Point
			for range r.IntN(30) {
				pts = append(pts, pt(r.Int64N(10*mins), r.Int64N(10)))
			}
			series = append(series, pts)
		}
		for _, spec := range []string{"1m-sum", "1m-sum-zero", "7mc-avg-nan", "0all-count"} {
			Downsample(nil, series[0], mustSpec(t, spec), 0, 10*mins, nil)
		}
		Rate(nil, series[0], RateOptions{Counter: true})
		got := Aggregate(nil, series, p95, false)
		for j := 1; j < len(got); j++ {
			if got[j].T <= got[j-1].T {
				t.Fatalf("Aggregate output not increasing: %s", fmtPoints(got))
			}
		}
	}
}
