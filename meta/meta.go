// Package meta keeps what OpenTSDB stores beside the data points:
// annotations (notes on a series, or global ones, at a point in time), UID
// metadata (a description, notes and custom fields for a metric, tag key or
// tag value) and time-series metadata (the same for one series, plus units,
// data type, retention, min and max). It stores them as small JSON records in
// the store's meta table; it knows nothing of HTTP.
//
// Rows of the meta table (the table also holds the layout record, row
// "layout", which no prefix here can produce):
//
//	'a' | len(tsuid)[2, BE] | tsuid | start ms[8, BE]   annotation; len 0 is a global annotation
//	'u' | kind[1] | uid                                  UID metadata (kind 0 metric, 1 tagk, 2 tagv)
//	't' | tsuid                                          time-series metadata
//
// each with one cell, qualifier "j", whose value is the record's JSON. A
// Store is safe for concurrent use; a read-modify-write of one record (a
// POST that merges) is not atomic against a concurrent one on the same
// record: the last write wins, as with OpenTSDB's own non-CAS paths.
package meta

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"hourglass/store"
)

var qualJSON = []byte("j")

const (
	prefixAnnotation = 'a'
	prefixUID        = 'u'
	prefixTS         = 't'
)

// Store reads and writes the records. Create it with New.
type Store struct {
	st store.Store

	// seriesNotes says whether any annotation of a series may exist, so a
	// query need not look for annotations of its series when none ever
	// were written (the common case). It is found once, lazily.
	seriesOnce  sync.Once
	seriesErr   error
	seriesNotes atomic.Bool
	// recheck, when set (SetRecheck), lets the "none" answer expire: other
	// nodes sharing the store may write the first one.
	recheck   time.Duration
	checkMu   sync.Mutex
	checkedAt time.Time
}

// SetRecheck makes SeriesAnnotations look again, at most every d, whether
// a series annotation exists while it knows of none: for a store other
// nodes write too. Call it before use.
func (s *Store) SetRecheck(d time.Duration) { s.recheck = d }

// recheckNotes looks for a series annotation if the last look is older
// than the recheck interval.
func (s *Store) recheckNotes(ctx context.Context) error {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	if s.seriesNotes.Load() || time.Since(s.checkedAt) < s.recheck {
		return nil
	}
	r := store.KeyRange{Start: []byte{prefixAnnotation, 0, 1}, End: []byte{prefixAnnotation + 1}}
	err := s.st.Scan(ctx, store.TableMeta, []store.KeyRange{r}, func(store.Cell) bool {
		s.seriesNotes.Store(true)
		return false
	})
	if err == nil {
		s.checkedAt = time.Now()
	}
	return err
}

// New returns the metadata store kept in st.
func New(st store.Store) *Store { return &Store{st: st} }

// ErrBadRecord marks a stored record that does not decode.
var ErrBadRecord = errors.New("meta: malformed record")

// TimestampMillis converts an OpenTSDB timestamp, seconds or milliseconds,
// to milliseconds: a value above 2^32-1 is milliseconds (OpenTSDB's rule for
// data points and annotations alike).
func TimestampMillis(ts int64) int64 {
	if ts > math.MaxUint32 || ts < 0 {
		return ts
	}
	return ts * 1000
}

// Annotation is one annotation. TSUID is empty for a global annotation.
// StartTime and EndTime are kept as they were given (seconds or
// milliseconds, see TimestampMillis); EndTime 0 means none.
type Annotation struct {
	TSUID       []byte            `json:"-"`
	StartTime   int64             `json:"startTime"`
	EndTime     int64             `json:"endTime"`
	Description string            `json:"description"`
	Notes       string            `json:"notes"`
	Custom      map[string]string `json:"custom"`
}

// StartMillis returns the annotation's start in milliseconds.
func (a *Annotation) StartMillis() int64 { return TimestampMillis(a.StartTime) }

func annotationPrefix(tsuid []byte) []byte {
	b := make([]byte, 0, 3+len(tsuid)+8)
	b = binary.BigEndian.AppendUint16(append(b, prefixAnnotation), uint16(len(tsuid)))
	return append(b, tsuid...)
}

func annotationRow(tsuid []byte, startMs int64) []byte {
	return binary.BigEndian.AppendUint64(annotationPrefix(tsuid), uint64(startMs))
}

func checkTSUID(tsuid []byte) error {
	if len(tsuid) > math.MaxUint16 {
		return fmt.Errorf("meta: a tsuid of %d bytes is too long", len(tsuid))
	}
	return nil
}

// GetAnnotation returns the annotation of tsuid (nil: global) that starts at
// startMs, or nil if there is none.
func (s *Store) GetAnnotation(ctx context.Context, tsuid []byte, startMs int64) (*Annotation, error) {
	if err := checkTSUID(tsuid); err != nil {
		return nil, err
	}
	cells, err := s.st.ReadRow(ctx, store.TableMeta, annotationRow(tsuid, startMs))
	if err != nil {
		return nil, err
	}
	for _, c := range cells {
		if string(c.Qualifier) == string(qualJSON) {
			a, err := decodeAnnotation(tsuid, c.Value)
			return &a, err
		}
	}
	return nil, nil
}

func decodeAnnotation(tsuid, v []byte) (Annotation, error) {
	var a Annotation
	if err := json.Unmarshal(v, &a); err != nil {
		return a, fmt.Errorf("%w: annotation: %v", ErrBadRecord, err)
	}
	a.TSUID = append([]byte(nil), tsuid...)
	return a, nil
}

// PutAnnotation writes a, replacing the annotation of the same series and start.
func (s *Store) PutAnnotation(ctx context.Context, a *Annotation) error {
	if err := checkTSUID(a.TSUID); err != nil {
		return err
	}
	if a.StartTime <= 0 {
		return errors.New("meta: the start timestamp has not been set")
	}
	v, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := s.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: annotationRow(a.TSUID, a.StartMillis()), Qualifier: qualJSON, Value: v}}); err != nil {
		return err
	}
	if len(a.TSUID) > 0 {
		s.seriesNotes.Store(true)
	}
	return nil
}

// DeleteAnnotation deletes the annotation of tsuid that starts at startMs and
// reports whether there was one.
func (s *Store) DeleteAnnotation(ctx context.Context, tsuid []byte, startMs int64) (bool, error) {
	a, err := s.GetAnnotation(ctx, tsuid, startMs)
	if err != nil || a == nil {
		return false, err
	}
	return true, s.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: annotationRow(tsuid, startMs), Qualifier: qualJSON, Delete: true}})
}

// annotationRange is the key range of tsuid's annotations starting in [startMs, endMs].
func annotationRange(tsuid []byte, startMs, endMs int64) store.KeyRange {
	if startMs < 0 {
		startMs = 0
	}
	r := store.KeyRange{Start: annotationRow(tsuid, startMs)}
	if endMs < math.MaxInt64 && endMs >= 0 {
		r.End = annotationRow(tsuid, endMs+1)
	} else {
		r.End = store.PrefixEnd(annotationPrefix(tsuid))
	}
	return r
}

// Annotations returns the annotations of the series (global ones for a nil
// or empty TSUID) that start in [startMs, endMs], by series then start, at
// most limit of them (no limit when limit <= 0). Several TSUIDs are read in
// one scan.
func (s *Store) Annotations(ctx context.Context, tsuids [][]byte, startMs, endMs int64, limit int) ([]Annotation, error) {
	if endMs < startMs {
		return nil, nil
	}
	var ranges []store.KeyRange
	for _, t := range tsuids {
		if err := checkTSUID(t); err != nil {
			return nil, err
		}
		ranges = append(ranges, annotationRange(t, startMs, endMs))
	}
	ranges = sortRanges(ranges)
	var out []Annotation
	var derr error
	err := s.st.Scan(ctx, store.TableMeta, ranges, func(c store.Cell) bool {
		if string(c.Qualifier) != string(qualJSON) || len(c.Row) < 3 {
			return true
		}
		n := int(binary.BigEndian.Uint16(c.Row[1:3]))
		if len(c.Row) != 3+n+8 {
			return true
		}
		a, err := decodeAnnotation(c.Row[3:3+n], c.Value)
		if err != nil {
			derr = err
			return false
		}
		out = append(out, a)
		return limit <= 0 || len(out) < limit
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// SeriesAnnotations is Annotations for the TSUIDs of query results, with a
// shortcut: when no annotation of a series was ever written it returns nil
// without reading.
func (s *Store) SeriesAnnotations(ctx context.Context, tsuids [][]byte, startMs, endMs int64, limit int) ([]Annotation, error) {
	if s.recheck > 0 {
		if err := s.recheckNotes(ctx); err != nil {
			return nil, err
		}
		if !s.seriesNotes.Load() || len(tsuids) == 0 {
			return nil, nil
		}
		return s.Annotations(ctx, tsuids, startMs, endMs, limit)
	}
	s.seriesOnce.Do(func() {
		// Any row 'a' | n>0 | ... means a series annotation exists.
		r := store.KeyRange{Start: []byte{prefixAnnotation, 0, 1}, End: []byte{prefixAnnotation + 1}}
		s.seriesErr = s.st.Scan(ctx, store.TableMeta, []store.KeyRange{r}, func(store.Cell) bool {
			s.seriesNotes.Store(true)
			return false
		})
	})
	if s.seriesErr != nil {
		return nil, s.seriesErr
	}
	if !s.seriesNotes.Load() || len(tsuids) == 0 {
		return nil, nil
	}
	return s.Annotations(ctx, tsuids, startMs, endMs, limit)
}

// DeleteAnnotations deletes the annotations of the series (global for an
// empty TSUID) that start in [startMs, endMs] and returns how many it deleted.
func (s *Store) DeleteAnnotations(ctx context.Context, tsuid []byte, startMs, endMs int64) (int, error) {
	if err := checkTSUID(tsuid); err != nil {
		return 0, err
	}
	var muts []store.Mutation
	err := s.st.Scan(ctx, store.TableMeta, []store.KeyRange{annotationRange(tsuid, startMs, endMs)}, func(c store.Cell) bool {
		muts = append(muts, store.Mutation{Row: append([]byte(nil), c.Row...), Qualifier: append([]byte(nil), c.Qualifier...), Delete: true})
		return true
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range muts {
		if string(m.Qualifier) == string(qualJSON) {
			n++
		}
	}
	for len(muts) > 0 {
		k := min(len(muts), 1000)
		if err := s.st.Write(ctx, store.TableMeta, muts[:k]); err != nil {
			return 0, err
		}
		muts = muts[k:]
	}
	return n, nil
}

// sortRanges sorts ranges by start and drops repeated ones (the same TSUID
// asked for twice), as Scan wants them.
func sortRanges(rs []store.KeyRange) []store.KeyRange {
	sort.Slice(rs, func(i, j int) bool { return string(rs[i].Start) < string(rs[j].Start) })
	out := rs[:0]
	for _, r := range rs {
		if len(out) > 0 && string(r.Start) == string(out[len(out)-1].Start) {
			continue
		}
		out = append(out, r)
	}
	return out
}
