// Package model holds hourglass's data model as the API handlers see it:
// a series' Labels and Tags, its index Entry, tag Matchers, the UID name
// spaces (Kind), the figures the engine reports (Stats, CardinalityStats,
// SnapshotStats) and the sentinel errors the handlers answer. It is a leaf:
// it imports no hourglass package but internal/errclass. series and uid
// re-declare these names, so either import path names the same thing.
package model

import (
	"encoding/binary"
	"errors"
	"sort"
	"strings"
)

// Tag is one tag (OpenTSDB) or label (Prometheus) of a series.
type Tag struct {
	Key, Value string
}

// Labels names a series: its metric and tags in one canonical string,
//
//	uvarint(len(metric)) metric (uvarint(len(k)) k uvarint(len(v)) v)*
//
// with the tags sorted by key. Two series are the same exactly when their
// Labels are equal, so Labels is a map key. It is also the form in which
// series are written to the WAL and the index.
type Labels string

// ErrBadLabels is returned when decoding bytes that are not a Labels encoding.
var ErrBadLabels = errors.New("series: malformed labels")

// MakeLabels returns the Labels of metric and tags. tags is sorted in place.
// Duplicate keys must have been rejected by the caller.
func MakeLabels(metric string, tags []Tag) Labels {
	return Labels(AppendLabels(nil, metric, tags))
}

// AppendLabels appends the Labels encoding of metric and tags to dst. tags is sorted in place.
func AppendLabels(dst []byte, metric string, tags []Tag) []byte {
	if !sort.SliceIsSorted(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key }) {
		sort.Slice(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key })
	}
	dst = binary.AppendUvarint(dst, uint64(len(metric)))
	dst = append(dst, metric...)
	for _, t := range tags {
		dst = binary.AppendUvarint(dst, uint64(len(t.Key)))
		dst = append(dst, t.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(t.Value)))
		dst = append(dst, t.Value...)
	}
	return dst
}

// Metric returns the metric name.
func (l Labels) Metric() string {
	m, _, _ := l.next(0)
	return m
}

func (l Labels) next(off int) (string, int, bool) {
	if off >= len(l) {
		return "", off, false
	}
	n, k := binary.Uvarint([]byte(l[off:min(off+binary.MaxVarintLen64, len(l))]))
	if k <= 0 || uint64(len(l)-off-k) < n {
		return "", len(l), false
	}
	s := string(l[off+k : off+k+int(n)])
	return s, off + k + int(n), true
}

// Range calls fn for each tag in key order until fn returns false.
func (l Labels) Range(fn func(key, value string) bool) {
	_, off, ok := l.next(0)
	for ok {
		var k, v string
		if k, off, ok = l.next(off); !ok {
			return
		}
		if v, off, ok = l.next(off); !ok {
			return
		}
		if !fn(k, v) {
			return
		}
	}
}

// Get returns the value of the tag key and whether the series has it.
func (l Labels) Get(key string) (string, bool) {
	var val string
	var found bool
	l.Range(func(k, v string) bool {
		if k == key {
			val, found = v, true
			return false
		}
		return k < key
	})
	return val, found
}

// Tags returns the tags, sorted by key.
func (l Labels) Tags() []Tag {
	var out []Tag
	l.Range(func(k, v string) bool {
		out = append(out, Tag{k, v})
		return true
	})
	return out
}

// NumTags returns the number of tags.
func (l Labels) NumTags() int {
	n := 0
	l.Range(func(string, string) bool { n++; return true })
	return n
}

// Valid reports whether l is a well-formed encoding with sorted, distinct keys.
func (l Labels) Valid() bool {
	_, off, ok := l.next(0)
	if !ok {
		return false
	}
	prev := ""
	first := true
	for off < len(l) {
		var k string
		if k, off, ok = l.next(off); !ok {
			return false
		}
		if _, off, ok = l.next(off); !ok {
			return false
		}
		if !first && k <= prev {
			return false
		}
		prev, first = k, false
	}
	return true
}

// String renders l as OpenTSDB writes a series: metric{k=v,k2=v2}.
func (l Labels) String() string {
	var b strings.Builder
	b.WriteString(l.Metric())
	b.WriteByte('{')
	i := 0
	l.Range(func(k, v string) bool {
		if i > 0 {
			b.WriteByte(',')
		}
		i++
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
		return true
	})
	b.WriteByte('}')
	return b.String()
}
