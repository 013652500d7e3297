package series

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"hourglass/model"
	"hourglass/store"
)

// The series index, persisted in the store's index table:
//
//	row = TSUID (metric UID | tag pairs)
//	qualifier "l"                value Labels
//	qualifier 'd' | day[4, BE]   value empty: the series has data that day (UTC, days since the epoch)
//
// and held in memory whole: metric → series, with postings per tag pair for
// literal filters, and for each series the days in which it has data, so a
// query visits only series that can have points in its range.

const dayMs = 24 * 3600 * 1000

var qualLabels = []byte("l")

func dayOf(t int64) uint32 {
	if t < 0 {
		return 0
	}
	return uint32(t / dayMs)
}

func dayQualifier(day uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{'d'}, day)
}

// Entry is one series in the index (model.Entry). Its fields never change
// after creation except the days, which are guarded by the index lock.
type Entry = model.Entry

type metricIndex struct {
	series   []*Entry
	postings map[Tag][]*Entry
	keys     map[string]int // tag key → number of series with it
}

// Index is the in-memory series index. It is safe for concurrent use.
type Index struct {
	mu      sync.RWMutex
	metrics map[string]*metricIndex
	byTSUID map[string]*Entry
	count   int
	lim     atomic.Pointer[limiter] // the series limits (limits.go); nil: none
	// byLabels finds a series without its UIDs: whether a point's series
	// is new, for the limits, costs no UID lookup.
	byLabels map[Labels]*Entry
}

func newIndex() *Index {
	return &Index{metrics: map[string]*metricIndex{}, byTSUID: map[string]*Entry{}, byLabels: map[Labels]*Entry{}}
}

// add records a series and the day of a point, and returns the mutations
// that persist what was new.
func (ix *Index) add(l Labels, tsuid []byte, salt byte, day uint32, muts []store.Mutation) (*Entry, []store.Mutation) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.byTSUID[string(tsuid)]
	if e == nil {
		e = &Entry{Labels: l, TSUID: tsuid, Salt: salt}
		ix.insertLocked(e)
		muts = append(muts, store.Mutation{Row: tsuid, Qualifier: qualLabels, Value: []byte(l)})
	}
	if lim := ix.lim.Load(); lim != nil {
		lim.release(l) // counted by the index now
	}
	if e.AddDay(day) {
		muts = append(muts, store.Mutation{Row: tsuid, Qualifier: dayQualifier(day)})
	}
	return e, muts
}

// addDay records that e has data on day and returns the mutation that persists it, if new.
func (ix *Index) addDay(e *Entry, day uint32, muts []store.Mutation) []store.Mutation {
	ix.mu.Lock()
	isNew := e.AddDay(day)
	ix.mu.Unlock()
	if isNew {
		muts = append(muts, store.Mutation{Row: e.TSUID, Qualifier: dayQualifier(day)})
	}
	return muts
}

func (ix *Index) insertLocked(e *Entry) {
	m := e.Labels.Metric()
	mi := ix.metrics[m]
	if mi == nil {
		mi = &metricIndex{postings: map[Tag][]*Entry{}, keys: map[string]int{}}
		ix.metrics[m] = mi
	}
	mi.series = append(mi.series, e)
	e.Labels.Range(func(k, v string) bool {
		t := Tag{Key: k, Value: v}
		mi.postings[t] = append(mi.postings[t], e)
		mi.keys[k]++
		return true
	})
	ix.byTSUID[string(e.TSUID)] = e
	ix.byLabels[e.Labels] = e
	ix.count++
}

// load reads the persisted index.
func (ix *Index) load(ctx context.Context, st store.Store, salt func([]byte) byte) error {
	var cur *Entry
	var days []uint32
	finish := func() {
		if cur == nil {
			return
		}
		if cur.Labels != "" && cur.Labels.Valid() {
			for _, d := range days {
				cur.AddDay(d)
			}
			ix.insertLocked(cur)
		}
		cur, days = nil, days[:0]
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	err := st.Scan(ctx, store.TableIndex, []store.KeyRange{{Start: []byte{}}}, func(c store.Cell) bool {
		if cur == nil || string(cur.TSUID) != string(c.Row) {
			finish()
			tsuid := append([]byte(nil), c.Row...)
			cur = &Entry{TSUID: tsuid, Salt: salt(tsuid)}
		}
		switch {
		case string(c.Qualifier) == string(qualLabels):
			cur.Labels = Labels(c.Value)
		case len(c.Qualifier) == 5 && c.Qualifier[0] == 'd':
			days = append(days, binary.BigEndian.Uint32(c.Qualifier[1:]))
		}
		return true
	})
	finish()
	if err != nil {
		return fmt.Errorf("series: loading the index: %w", err)
	}
	return nil
}

// Matcher selects series by one tag (model.Matcher).
type Matcher = model.Matcher

// literalMatcher is implemented by matchers that accept exactly a set of
// values, so the index can answer them from its postings.
type literalMatcher interface {
	Literals() ([]string, bool)
}

// Select returns the series of metric whose tags satisfy every matcher and
// that had data on a day that overlaps [startMs, endMs]. With explicitTags,
// only series whose tag keys are exactly the matchers' keys qualify.
func (ix *Index) Select(metric string, matchers []Matcher, explicitTags bool, startMs, endMs int64) []*Entry {
	out, _, _ := ix.SelectBounded(metric, matchers, explicitTags, startMs, endMs, -1, -1)
	return out
}

// SelectBounded is Select that looks at no more than maxVisit series and
// selects no more than maxOut (either < 0: no bound). The series it would
// look at are the metric's, or the postings of the literal matcher that
// names the fewest; when they are more than maxVisit it looks at none and
// returns ok false, having counted them from the index's lists. Once more
// than maxOut are selected it stops and returns ok false. visited is how
// many it looked at.
func (ix *Index) SelectBounded(metric string, matchers []Matcher, explicitTags bool, startMs, endMs int64, maxVisit, maxOut int) ([]*Entry, int, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	mi := ix.metrics[metric]
	if mi == nil {
		return nil, 0, true
	}
	candidates, ok := mi.candidates(matchers, maxVisit)
	if !ok {
		return nil, 0, false
	}
	var keys map[string]bool
	if explicitTags {
		keys = map[string]bool{}
		for _, m := range matchers {
			keys[m.Key()] = true
		}
	}
	first, last := dayOf(startMs), dayOf(endMs)
	var out []*Entry
	seen := map[*Entry]bool{}
	for i, e := range candidates {
		if seen[e] || !e.HasDays(first, last) || !matchAll(e.Labels, matchers) {
			continue
		}
		if keys != nil && !sameKeys(e.Labels, keys) {
			continue
		}
		seen[e] = true
		out = append(out, e)
		if maxOut >= 0 && len(out) > maxOut {
			return out, i + 1, false
		}
	}
	return out, len(candidates), true
}

// candidates returns the series a selection by matchers looks at: the
// union of the postings of the literal matcher that names the fewest, else
// every series of the metric. Past maxVisit (≥ 0) it returns ok false
// without building the union.
func (mi *metricIndex) candidates(matchers []Matcher, maxVisit int) ([]*Entry, bool) {
	best, bestN := -1, len(mi.series)
	var bestVals []string
	for i, m := range matchers {
		lm, ok := m.(literalMatcher)
		if !ok {
			continue
		}
		vals, ok := lm.Literals()
		if !ok {
			continue
		}
		n := 0
		for _, v := range vals {
			n += len(mi.postings[Tag{Key: m.Key(), Value: v}])
		}
		if n < bestN {
			best, bestN, bestVals = i, n, vals
		}
	}
	if maxVisit >= 0 && bestN > maxVisit {
		return nil, false
	}
	if best < 0 {
		return mi.series, true
	}
	union := make([]*Entry, 0, bestN)
	for _, v := range bestVals {
		union = append(union, mi.postings[Tag{Key: matchers[best].Key(), Value: v}]...)
	}
	return union, true
}

func matchAll(l Labels, matchers []Matcher) bool {
	for _, m := range matchers {
		v, ok := l.Get(m.Key())
		if !m.Matches(v, ok) {
			return false
		}
	}
	return true
}

func sameKeys(l Labels, keys map[string]bool) bool {
	n := 0
	ok := true
	l.Range(func(k, _ string) bool {
		n++
		ok = keys[k]
		return ok
	})
	return ok && n == len(keys)
}

// Metrics returns the metric names that start with prefix, sorted.
func (ix *Index) Metrics(prefix string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []string
	for m := range ix.metrics {
		if len(m) >= len(prefix) && m[:len(prefix)] == prefix {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// TagKeys returns the tag keys of the metric's series, sorted. An empty metric means every metric.
func (ix *Index) TagKeys(metric string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	set := map[string]bool{}
	for m, mi := range ix.metrics {
		if metric != "" && m != metric {
			continue
		}
		for k := range mi.keys {
			set[k] = true
		}
	}
	return sortedKeys(set)
}

// TagValues returns the values of the tag key among the metric's series, sorted.
func (ix *Index) TagValues(metric, key string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	set := map[string]bool{}
	for m, mi := range ix.metrics {
		if metric != "" && m != metric {
			continue
		}
		for t := range mi.postings {
			if t.Key == key {
				set[t.Value] = true
			}
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Len returns the number of series in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.count
}

// dataSpan returns the part of [start, end] (ms) that lies within the days
// in which the series tsuid had data; ok is false when none does.
func (ix *Index) dataSpan(tsuid []byte, start, end int64) (first, last int64, ok bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e := ix.byTSUID[string(tsuid)]
	if e == nil || !e.HasDays(dayOf(start), dayOf(end)) {
		return 0, 0, false
	}
	firstDay, lastDay, _ := e.DaySpan()
	first = max(start, int64(firstDay)*dayMs)
	last = min(end, int64(lastDay+1)*dayMs-1)
	return first, last, first <= last
}

// Lookup returns the entry of a TSUID.
func (ix *Index) Lookup(tsuid []byte) *Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.byTSUID[string(tsuid)]
}

// All calls fn for every series of the metric (every series when metric is
// empty) until fn returns false.
func (ix *Index) All(metric string, fn func(e *Entry) bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for m, mi := range ix.metrics {
		if metric != "" && m != metric {
			continue
		}
		for _, e := range mi.series {
			if !fn(e) {
				return
			}
		}
	}
}
