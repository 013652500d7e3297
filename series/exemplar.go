package series

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/store"
)

// Exemplars (issue 16): the latest exemplars of each series, kept in
// memory (at most ExemplarOptions.PerSeries a series, Max in all), written
// through the WAL (entry 0x05) when appended, and persisted in the meta
// table (row 'E' + TSUID) by the sweeper before the WAL segments that hold
// them can go, and by Flush and Close; loaded from there at start.

// Exemplar is one exemplar: its labels (a trace id, say), value and time.
type Exemplar struct {
	Labels []Tag
	Value  float64
	T      int64
}

// ExemplarSample is an exemplar to append to the series Series.
type ExemplarSample struct {
	Series Labels
	Exemplar
}

// ExemplarOptions bound the exemplars kept.
type ExemplarOptions struct {
	// Max bounds the exemplars kept in all; a new exemplar of a series
	// that has none to replace is dropped past it. Default 100,000 (as
	// Prometheus' storage.exemplars.max-exemplars); negative keeps none.
	Max int
	// PerSeries bounds the exemplars of one series; past it a new one
	// replaces the series' oldest. Default 16.
	PerSeries int
}

// DefaultExemplarOptions is the defaults of ExemplarOptions.
func DefaultExemplarOptions() ExemplarOptions { return ExemplarOptions{Max: 100_000, PerSeries: 16} }

// entryExemplars is the WAL entry of exemplars:
//
//	exemplars = 0x05 count:uvarint (ref:uvarint exemplar)*count
//	exemplar  = t:varint value:8 bytes LE n:uvarint (len:uvarint key len:uvarint value)*n
const entryExemplars = 0x05

// metaExemplarPrefix starts the meta-table row of a series' exemplars; the
// TSUID follows. Its one cell (qualifier "e") holds the series' labels and
// exemplars (appendExemplarSet).
const metaExemplarPrefix = 'E'

type exSeries struct {
	labels Labels
	tsuid  []byte
	ex     []Exemplar // by time
	dirty  bool
}

type exemplarStore struct {
	opts ExemplarOptions
	// persistMu orders persistExemplars calls (the sweeper's, the
	// retention's): each writes what it collected before the next collects,
	// so an older state never lands over a newer one.
	persistMu sync.Mutex
	mu        sync.Mutex
	m         map[Labels]*exSeries
	n         int
	gone      map[string]bool // TSUIDs whose rows must be deleted (no exemplars left)

	stored  prometheus.GaugeFunc
	dropped *prometheus.CounterVec
}

func newExemplarStore(opts ExemplarOptions, r prometheus.Registerer) *exemplarStore {
	d := DefaultExemplarOptions()
	if opts.Max == 0 {
		opts.Max = d.Max
	}
	if opts.PerSeries <= 0 {
		opts.PerSeries = d.PerSeries
	}
	es := &exemplarStore{opts: opts, m: map[Labels]*exSeries{}, gone: map[string]bool{}}
	es.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hourglass_exemplars_dropped_total",
		Help: "Exemplars not kept, by reason: full (-max-exemplars reached), out_of_order (older than the series' newest), duplicate, out_of_retention (older than -retention)."}, []string{"reason"})
	es.stored = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hourglass_exemplars",
		Help: "Exemplars kept (at most -max-exemplars, -max-exemplars-per-series a series)."},
		func() float64 { es.mu.Lock(); defer es.mu.Unlock(); return float64(es.n) })
	if r != nil {
		r.MustRegister(es.dropped, es.stored)
	}
	return es
}

// add keeps e for the series; it reports whether it was kept.
func (es *exemplarStore) add(l Labels, tsuid []byte, e Exemplar, dirty bool) bool {
	es.mu.Lock()
	defer es.mu.Unlock()
	s := es.m[l]
	if s != nil && len(s.ex) > 0 {
		last := s.ex[len(s.ex)-1]
		switch {
		case e.T < last.T:
			es.dropped.WithLabelValues("out_of_order").Inc()
			return false
		case e.T == last.T && math.Float64bits(e.Value) == math.Float64bits(last.Value) && slices.Equal(e.Labels, last.Labels):
			es.dropped.WithLabelValues("duplicate").Inc()
			return false
		}
	}
	full := s != nil && len(s.ex) >= es.opts.PerSeries
	if !full && (es.opts.Max < 0 || es.n >= es.opts.Max) {
		if s == nil || len(s.ex) == 0 {
			es.dropped.WithLabelValues("full").Inc()
			return false
		}
		full = true // replace the series' own oldest
	}
	if s == nil {
		s = &exSeries{labels: l, tsuid: tsuid}
		es.m[l] = s
	}
	if full {
		s.ex = append(s.ex[:0], s.ex[1:]...)
	} else {
		es.n++
	}
	s.ex = append(s.ex, Exemplar{Labels: slices.Clone(e.Labels), Value: e.Value, T: e.T})
	s.dirty = s.dirty || dirty
	return true
}

// query returns the exemplars of l in [start, end].
func (es *exemplarStore) query(l Labels, start, end int64) []Exemplar {
	es.mu.Lock()
	defer es.mu.Unlock()
	var out []Exemplar
	if s := es.m[l]; s != nil {
		for _, e := range s.ex {
			if e.T >= start && e.T <= end {
				out = append(out, e)
			}
		}
	}
	return out
}

// deleteRange removes the exemplars of ls in [start, end].
func (es *exemplarStore) deleteRange(ls []Labels, start, end int64) {
	es.mu.Lock()
	defer es.mu.Unlock()
	for _, l := range ls {
		s := es.m[l]
		if s == nil {
			continue
		}
		before := len(s.ex)
		s.ex = slices.DeleteFunc(s.ex, func(e Exemplar) bool { return e.T >= start && e.T <= end })
		if len(s.ex) != before {
			es.n -= before - len(s.ex)
			s.dirty = true
		}
	}
}

// dropBefore removes the exemplars older than cutoff (ms), as the
// retention drops the points, and marks their series for persistExemplars;
// it returns how many went.
func (es *exemplarStore) dropBefore(cutoff int64) int {
	es.mu.Lock()
	defer es.mu.Unlock()
	n := 0
	for _, s := range es.m {
		i := 0
		for i < len(s.ex) && s.ex[i].T < cutoff { // by time
			i++
		}
		if i > 0 {
			s.ex = append(s.ex[:0], s.ex[i:]...)
			s.dirty = true
			n += i
		}
	}
	es.n -= n
	return n
}

// applyRetention is the retention's part for exemplars (hook in
// Retention.Apply): those before cutoff go from memory, then from the meta
// table at once, so neither a restart nor the WAL brings them back (a
// replayed one is older than the cutoff and dropped by the pass at start).
func (h *Head) applyRetention(ctx context.Context, cutoff int64) (int, error) {
	n := h.exemplars.dropBefore(cutoff)
	// Even with none dropped here: a concurrent pass may have dropped them
	// and be writing; persistMu makes this wait for it.
	return n, h.persistExemplars(ctx)
}

// Exemplars returns the exemplars kept for the series l in [start, end],
// oldest first.
func (h *Head) Exemplars(l Labels, start, end int64) []Exemplar {
	return h.exemplars.query(l, start, end)
}

// AppendExemplars keeps exemplars through the WAL. It returns how many were
// kept (an exemplar older than its series' newest, a duplicate, or one
// past -max-exemplars is not, as Prometheus drops them, nor one older than
// the retention, as the points; each is counted in
// hourglass_exemplars_dropped_total); the error means none was (the WAL).
func (h *Head) AppendExemplars(ctx context.Context, samples []ExemplarSample, req *Request) (int, error) {
	if err := h.admit(); err != nil {
		return 0, err
	}
	series := make([]*memSeries, len(samples))
	ok := 0
	cutoff := h.retentionFloor()
	for i := range samples {
		if samples[i].Exemplar.T < cutoff {
			h.exemplars.dropped.WithLabelValues("out_of_retention").Inc()
			continue
		}
		s, err := h.getOrCreateLimited(ctx, samples[i].Series, req)
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				return 0, err
			}
			continue
		}
		series[i] = s
		ok++
	}
	if ok == 0 {
		return 0, nil
	}
	kept := 0
	err := h.walApply(series, func(buf []byte) []byte {
		buf = append(buf, entryExemplars)
		buf = binary.AppendUvarint(buf, uint64(ok))
		for i, s := range series {
			if s != nil {
				buf = binary.AppendUvarint(buf, s.ref)
				buf = appendExemplar(buf, &samples[i].Exemplar)
			}
		}
		return buf
	}, func(int, int64) {
		for i, s := range series {
			if s != nil && h.exemplars.add(s.labels, s.tsuid, samples[i].Exemplar, true) {
				kept++
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return kept, nil
}

func appendExemplar(dst []byte, e *Exemplar) []byte {
	dst = binary.AppendVarint(dst, e.T)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Value))
	dst = binary.AppendUvarint(dst, uint64(len(e.Labels)))
	for _, t := range e.Labels {
		dst = binary.AppendUvarint(dst, uint64(len(t.Key)))
		dst = append(dst, t.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(t.Value)))
		dst = append(dst, t.Value...)
	}
	return dst
}

func readString(b []byte) (string, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return "", b, false
	}
	return string(b[n : n+int(l)]), b[n+int(l):], true
}

func readExemplar(b []byte) (Exemplar, []byte, bool) {
	var e Exemplar
	t, n := binary.Varint(b)
	if n <= 0 || len(b)-n < 8 {
		return e, b, false
	}
	e.T = t
	e.Value = math.Float64frombits(binary.LittleEndian.Uint64(b[n:]))
	b = b[n+8:]
	cnt, n := binary.Uvarint(b)
	if n <= 0 || cnt > uint64(len(b)) {
		return e, b, false
	}
	b = b[n:]
	for range cnt {
		var k, v string
		var ok bool
		if k, b, ok = readString(b); !ok {
			return e, b, false
		}
		if v, b, ok = readString(b); !ok {
			return e, b, false
		}
		e.Labels = append(e.Labels, Tag{Key: k, Value: v})
	}
	return e, b, true
}

// decodeExemplars reads an exemplars entry (after its type byte).
func decodeExemplars(rec []byte, on func(ref uint64, e Exemplar) error) ([]byte, error) {
	return decodeRefRecord(rec, "exemplar", func(ref uint64, rec []byte) ([]byte, error) {
		e, rest, ok := readExemplar(rec)
		if !ok {
			return nil, fmt.Errorf("%w: exemplar", ErrBadRecord)
		}
		if on != nil {
			if err := on(ref, e); err != nil {
				return nil, err
			}
		}
		return rest, nil
	})
}
