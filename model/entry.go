package model

import "sort"

// Entry is one series in the index (series.Index). Its fields never change
// after creation except the days, which are guarded by the index's lock:
// AddDay and DropDaysBefore are the index's to call, under it.
type Entry struct {
	Labels Labels
	TSUID  []byte
	Salt   byte
	days   []dayRange // sorted, disjoint, not adjacent
}

type dayRange struct{ first, last uint32 }

// HasDays reports whether the entry had data in a day of [first, last]
// (days since the epoch, UTC).
func (e *Entry) HasDays(first, last uint32) bool {
	i := sort.Search(len(e.days), func(i int) bool { return e.days[i].last >= first })
	return i < len(e.days) && e.days[i].first <= last
}

// DaySpan returns the first and last day in which the entry had data; ok
// is false when it has none.
func (e *Entry) DaySpan() (first, last uint32, ok bool) {
	if len(e.days) == 0 {
		return 0, 0, false
	}
	return e.days[0].first, e.days[len(e.days)-1].last, true
}

// AddDay records day and reports whether it was new.
func (e *Entry) AddDay(day uint32) bool {
	i := sort.Search(len(e.days), func(i int) bool { return e.days[i].last+1 >= day })
	if i < len(e.days) && e.days[i].first <= day && day <= e.days[i].last {
		return false
	}
	switch {
	case i < len(e.days) && e.days[i].last+1 == day:
		e.days[i].last = day
		if i+1 < len(e.days) && e.days[i+1].first == day+1 {
			e.days[i].last = e.days[i+1].last
			e.days = append(e.days[:i+1], e.days[i+2:]...)
		}
	case i < len(e.days) && e.days[i].first == day+1:
		e.days[i].first = day
	default:
		e.days = append(e.days, dayRange{})
		copy(e.days[i+1:], e.days[i:])
		e.days[i] = dayRange{day, day}
	}
	return true
}

// DropDaysBefore removes the days before cutoff, calling fn with each
// removed day in order.
func (e *Entry) DropDaysBefore(cutoff uint32, fn func(day uint32)) {
	for len(e.days) > 0 && e.days[0].first < cutoff {
		d := &e.days[0]
		last := min(d.last, cutoff-1)
		for day := d.first; day <= last; day++ {
			fn(day)
		}
		if d.last < cutoff {
			e.days = e.days[1:]
		} else {
			d.first = cutoff
		}
	}
}

// Matcher selects series by one tag. Matches is called with present=false
// when the series lacks the key.
type Matcher interface {
	Key() string
	Matches(value string, present bool) bool
}
