package downsample

import (
	"math"
	"time"
)

// Calendar buckets.
//
// OpenTSDB 2.4 finds the first calendar bucket with DateTime.previousInterval
// and then keeps adding the interval to a java.util.Calendar, so its later
// buckets depend on where a series' data starts. We use a stateless rule
// instead: the bucket of a timestamp depends only on the timestamp, the spec
// and the zone, so that every series of a query shares the same buckets. The
// rule is previousInterval's own anchoring, applied to each bucket:
//
//   - ms, s, m, h: buckets of N units of elapsed time, counted from the start
//     of the enclosing calendar period: the second for ms when N divides
//     1000, else the minute; the minute for s when N divides 60, else the
//     hour; the hour for m when N divides 60, else the day; the day for h
//     when N divides 24, else the month. If one bucket is longer than that
//     period, the next larger one (…, day, month, year) is used. The last
//     bucket of a period may be shorter, e.g. 7m buckets restart every day.
//     Elapsed time means a 2hc bucket that spans a DST change still lasts
//     2 hours (java.util.Calendar adds hours as milliseconds too).
//   - d: N = 1 is the calendar day in the zone (23 or 25 hours across a DST
//     change). N > 1 counts days from January 1st, the last bucket of a
//     year being shorter (N > 365: days from 1970-01-01).
//   - w: N weeks of calendar days, weeks starting on Sunday (OpenTSDB's
//     Calendar uses the JVM locale's first day of the week, Sunday in the
//     usual en_US), counted from Sunday 1970-01-04.
//   - n: N calendar months counted from January (quarters for 3nc); N > 12
//     counts months from year 0.
//   - y: N calendar years starting at a year divisible by N.

type level uint8

const (
	lvSecond level = iota
	lvMinute
	lvHour
	lvDay
	lvMonth
	lvYear
	lvEpoch // no calendar period is long enough: plain epoch alignment
)

// nominal length of each period in ms, used to choose a period that can
// hold a whole bucket.
var levelMillis = [...]int64{
	lvSecond: 1000,
	lvMinute: 60 * 1000,
	lvHour:   3600 * 1000,
	lvDay:    24 * 3600 * 1000,
	lvMonth:  28 * 24 * 3600 * 1000,
	lvYear:   365 * 24 * 3600 * 1000,
}

// bucketer maps a timestamp to the bucket [start, end) that holds it.
type bucketer struct {
	cal   bool
	width int64 // ms: the interval, or the elapsed width of a calendar bucket
	n     int64
	unit  string
	lv    level // for elapsed calendar units
	loc   *time.Location
}

func newBucketer(spec Spec, loc *time.Location) bucketer {
	b := bucketer{width: spec.Interval, n: spec.N, unit: spec.Unit, loc: loc}
	if !spec.Calendar {
		return b
	}
	b.cal = true
	if b.loc == nil {
		b.loc = time.UTC
	}
	switch spec.Unit {
	case "ms":
		b.lv = lvMinute
		if 1000%spec.N == 0 {
			b.lv = lvSecond
		}
	case "s":
		b.lv = lvHour
		if 60%spec.N == 0 {
			b.lv = lvMinute
		}
	case "m":
		b.lv = lvDay
		if 60%spec.N == 0 {
			b.lv = lvHour
		}
	case "h":
		b.lv = lvMonth
		if 24%spec.N == 0 {
			b.lv = lvDay
		}
	default:
		return b
	}
	for b.lv < lvEpoch && b.width > levelMillis[b.lv] {
		b.lv++
	}
	return b
}

// bounds returns the bucket [start, end) that holds ts; start <= ts < end
// unless ts is the largest int64, whose bucket ends at it.
func (b *bucketer) bounds(ts int64) (start, end int64) {
	if b.cal {
		start, end = b.calBounds(ts)
		if start <= ts && (ts < end || end == math.MaxInt64) {
			return start, end
		}
		// Unreachable with sane zone data; fall back rather than loop.
	}
	start = ts - floorMod(ts, b.width)
	return start, satAdd(start, b.width)
}

func (b *bucketer) calBounds(ts int64) (start, end int64) {
	loc := b.loc
	t := time.UnixMilli(ts).In(loc)
	switch b.unit {
	case "d":
		y, m, d := t.Date()
		switch {
		case b.n == 1:
			return dayStart(y, m, d, loc), dayStart(y, m, d+1, loc)
		case b.n <= 365:
			idx := int64(t.YearDay()-1) / b.n
			start = dayStart(y, 1, 1+int(idx*b.n), loc)
			end = min(dayStart(y, 1, 1+int((idx+1)*b.n), loc), dayStart(y+1, 1, 1, loc))
			return start, end
		default:
			idx := floorDiv(civilDays(y, m, d), b.n)
			return dayStartFromDays(idx*b.n, loc), dayStartFromDays((idx+1)*b.n, loc)
		}
	case "w":
		y, m, d := t.Date()
		const sunday = 3 // 1970-01-04 is day 3 and a Sunday
		width := 7 * b.n
		idx := floorDiv(civilDays(y, m, d)-sunday, width)
		first := sunday + idx*width
		return dayStartFromDays(first, loc), dayStartFromDays(first+width, loc)
	case "n":
		y, m, _ := t.Date()
		if b.n <= 12 {
			idx := int64(m-1) / b.n
			start = dayStart(y, time.Month(1+idx*b.n), 1, loc)
			end = min(dayStart(y, time.Month(1+(idx+1)*b.n), 1, loc), dayStart(y+1, 1, 1, loc))
			return start, end
		}
		months := int64(y)*12 + int64(m-1)
		first := floorDiv(months, b.n) * b.n
		return monthStart(first, loc), monthStart(first+b.n, loc)
	case "y":
		y := int64(t.Year())
		first := y - floorMod(y, b.n)
		return dayStart(int(first), 1, 1, loc), dayStart(int(first+b.n), 1, 1, loc)
	}

	// Elapsed units: N×unit ms from the start of the enclosing period.
	var p0, p1 int64 // the period [p0, p1)
	switch b.lv {
	case lvSecond, lvMinute, lvHour:
		// Local wall-clock period, found through the offset in force at ts.
		_, off := t.Zone()
		local := ts + int64(off)*1000
		size := levelMillis[b.lv]
		p0 = ts - floorMod(local, size)
		p1 = p0 + size
	case lvDay:
		y, m, d := t.Date()
		p0, p1 = dayStart(y, m, d, loc), dayStart(y, m, d+1, loc)
	case lvMonth:
		y, m, _ := t.Date()
		p0, p1 = dayStart(y, m, 1, loc), dayStart(y, m+1, 1, loc)
	case lvYear:
		y := t.Year()
		p0, p1 = dayStart(y, 1, 1, loc), dayStart(y+1, 1, 1, loc)
	default:
		start = ts - floorMod(ts, b.width)
		return start, satAdd(start, b.width)
	}
	start = p0 + (ts-p0)/b.width*b.width
	return start, min(satAdd(start, b.width), p1)
}

// dayStart returns the first instant of the civil day y-m-d in loc (the
// arguments are normalized as time.Date does). Where midnight falls into a
// DST gap the day starts at the end of the gap; time.Date would give an
// instant on the previous day.
func dayStart(y int, m time.Month, d int, loc *time.Location) int64 {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	ny, nm, nd := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Date()
	if ty, tm, td := t.Date(); ty != ny || tm != nm || td != nd {
		if _, end := t.ZoneBounds(); !end.IsZero() {
			t = end
		}
	}
	return unixMilli(t)
}

// dayStartFromDays returns the first instant of the civil day that is days
// after 1970-01-01.
func dayStartFromDays(days int64, loc *time.Location) int64 {
	return dayStart(1970, 1, 1+int(days), loc)
}

// monthStart returns the first instant of the month that is months after
// January of year 0.
func monthStart(months int64, loc *time.Location) int64 {
	return dayStart(int(floorDiv(months, 12)), time.Month(1+floorMod(months, 12)), 1, loc)
}

// civilDays returns the number of days from 1970-01-01 to y-m-d.
func civilDays(y int, m time.Month, d int) int64 {
	return floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// unixMilli is t.UnixMilli, saturating instead of overflowing.
func unixMilli(t time.Time) int64 {
	s := t.Unix()
	switch {
	case s > math.MaxInt64/1000:
		return math.MaxInt64
	case s < math.MinInt64/1000:
		return math.MinInt64
	}
	return s*1000 + int64(t.Nanosecond()/1e6)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	r := a % b
	if r != 0 && ((r < 0) != (b < 0)) {
		r += b
	}
	return r
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
