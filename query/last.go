package query

import (
	"context"
	"sort"

	"hourglass/chunk"
	"hourglass/series"
)

// LastPoint is the newest point of one series.
type LastPoint struct {
	Entry *series.Entry
	chunk.Point
}

const lastDayMs = 24 * 3600 * 1000

// exactMatcher matches one tag value exactly; the index answers it from its
// postings.
type exactMatcher struct{ key, value string }

func (m exactMatcher) Key() string                         { return m.key }
func (m exactMatcher) Matches(v string, present bool) bool { return present && v == m.value }
func (m exactMatcher) Literals() ([]string, bool)          { return []string{m.value}, true }

// Last returns the newest point at or after minT of each entry that has
// one (OpenTSDB's /api/query/last), in the order of entries. It needs no
// last-write tracking: the index knows the days in which each series had
// data, so Last finds the newest such day by binary search and reads that
// day alone (the head and the store, as every read does).
func (e *Engine) Last(ctx context.Context, entries []*series.Entry, minT int64) ([]LastPoint, error) {
	if e.limits.MaxSeries > 0 && len(entries) > e.limits.MaxSeries {
		return nil, e.exceeded(&LimitError{What: "series", Limit: e.limits.MaxSeries, Flag: "-query-max-series", Need: int64(len(entries))})
	}
	if minT < 0 {
		minT = 0
	}
	ix := e.index
	// The newest day a point can have: OpenTSDB timestamps stop at
	// 9999999999999 ms (and the index counts days in 32 bits).
	const maxDay = 9999999999999/lastDayMs + 1
	type pending struct {
		i     int
		hi    int64 // newest day that may still hold data
		loDay int64
	}
	out := make([]*LastPoint, len(entries))
	work := make([]pending, 0, len(entries))
	for i := range entries {
		work = append(work, pending{i: i, hi: maxDay - 1, loDay: minT / lastDayMs})
	}
	for len(work) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// For each entry still looking, the newest day in [lo, hi] with data.
		byDay := map[int64][]int{}
		next := work[:0]
		for _, p := range work {
			en := entries[p.i]
			sel := selectorFor(en)
			has := func(from, to int64) bool {
				for _, f := range ix.Select(sel.metric, sel.matchers, true, from*lastDayMs, to*lastDayMs+lastDayMs-1) {
					if f == en {
						return true
					}
				}
				return false
			}
			lo, hi := p.loDay, p.hi
			if lo > hi || !has(lo, hi) {
				continue // no data in range: not found
			}
			for lo < hi { // invariant: data in [lo, hi]; find the newest day
				mid := lo + (hi-lo+1)/2
				if has(mid, hi) {
					lo = mid
				} else {
					hi = mid - 1
				}
			}
			p.hi = lo
			byDay[lo] = append(byDay[lo], len(next))
			next = append(next, p)
		}
		work = next
		if len(work) == 0 {
			break
		}
		// Read each day once for all the entries whose newest day it is.
		days := make([]int64, 0, len(byDay))
		for d := range byDay {
			days = append(days, d)
		}
		sort.Slice(days, func(a, b int) bool { return days[a] < days[b] })
		found := make([]bool, len(work))
		for _, d := range days {
			idx := byDay[d]
			ens := make([]*series.Entry, len(idx))
			for j, k := range idx {
				ens[j] = entries[work[k].i]
			}
			from := max(d*lastDayMs, minT)
			ss, err := e.ReadEntries(ctx, ens, from, d*lastDayMs+lastDayMs-1)
			if err != nil {
				return nil, err
			}
			last := map[string]chunk.Point{}
			for _, s := range ss {
				if len(s.Points) > 0 {
					last[string(s.TSUID)] = s.Points[len(s.Points)-1]
				}
			}
			for _, k := range idx {
				if p, ok := last[string(entries[work[k].i].TSUID)]; ok {
					out[work[k].i] = &LastPoint{Entry: entries[work[k].i], Point: p}
					found[k] = true
				}
			}
		}
		// An entry whose newest day turned out empty (its data was
		// dropped) looks again before it.
		next = work[:0]
		for k, p := range work {
			if !found[k] {
				p.hi--
				next = append(next, p)
			}
		}
		work = next
	}
	res := make([]LastPoint, 0, len(entries))
	for _, p := range out {
		if p != nil {
			res = append(res, *p)
		}
	}
	return res, nil
}

type entrySelector struct {
	metric   string
	matchers []series.Matcher
}

// selectorFor returns the index selector that picks exactly en.
func selectorFor(en *series.Entry) entrySelector {
	sel := entrySelector{metric: en.Labels.Metric()}
	en.Labels.Range(func(k, v string) bool {
		sel.matchers = append(sel.matchers, exactMatcher{k, v})
		return true
	})
	return sel
}
