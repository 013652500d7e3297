package series

import (
	"context"
	"encoding/binary"
	"fmt"

	"hourglass/store"
)

var exemplarQualifier = []byte("e")

func exemplarRow(tsuid []byte) []byte { return append([]byte{metaExemplarPrefix}, tsuid...) }

// appendExemplarSet encodes a series' exemplars for its meta-table cell:
// labels (length uvarint + bytes), count uvarint, then the exemplars as
// the WAL writes them.
func appendExemplarSet(dst []byte, l Labels, ex []Exemplar) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(l)))
	dst = append(dst, l...)
	dst = binary.AppendUvarint(dst, uint64(len(ex)))
	for i := range ex {
		dst = appendExemplar(dst, &ex[i])
	}
	return dst
}

func readExemplarSet(b []byte) (Labels, []Exemplar, error) {
	l, rest, ok := readLabels(b)
	if !ok {
		return "", nil, fmt.Errorf("%w: exemplar set labels", ErrBadRecord)
	}
	cnt, n := binary.Uvarint(rest)
	if n <= 0 || cnt > uint64(len(rest)) {
		return "", nil, fmt.Errorf("%w: exemplar set count", ErrBadRecord)
	}
	rest = rest[n:]
	ex := make([]Exemplar, 0, cnt)
	for range cnt {
		var e Exemplar
		if e, rest, ok = readExemplar(rest); !ok {
			return "", nil, fmt.Errorf("%w: exemplar", ErrBadRecord)
		}
		ex = append(ex, e)
	}
	return Labels(string(l)), ex, nil
}

// persistExemplars writes the exemplars of the series that changed to the
// meta table; a series left with none loses its row. On error the series
// stay marked and the next call writes them.
func (h *Head) persistExemplars(ctx context.Context) error {
	es := h.exemplars
	es.persistMu.Lock()
	defer es.persistMu.Unlock()
	es.mu.Lock()
	var muts []store.Mutation
	var done []*exSeries
	for l, s := range es.m {
		if !s.dirty {
			continue
		}
		row := exemplarRow(s.tsuid)
		if len(s.ex) == 0 {
			muts = append(muts, store.Mutation{Row: row, Qualifier: exemplarQualifier, Delete: true})
			delete(es.m, l)
		} else {
			muts = append(muts, store.Mutation{Row: row, Qualifier: exemplarQualifier, Value: appendExemplarSet(nil, l, s.ex)})
		}
		s.dirty = false
		done = append(done, s)
	}
	es.mu.Unlock()
	if len(muts) == 0 {
		return nil
	}
	if err := h.fl.st.Write(ctx, store.TableMeta, muts); err != nil {
		es.mu.Lock()
		for _, s := range done {
			s.dirty = true
			if len(s.ex) == 0 {
				es.m[s.labels] = s
			}
		}
		es.mu.Unlock()
		h.opts.Logger.Warn("writing exemplars to the store failed; retrying at the next sweep", "err", err)
		return err
	}
	return nil
}

// loadExemplars reads the persisted exemplars at start.
func (h *Head) loadExemplars(ctx context.Context) error {
	kr := store.KeyRange{Start: []byte{metaExemplarPrefix}, End: []byte{metaExemplarPrefix + 1}}
	var bad int
	err := h.fl.st.Scan(ctx, store.TableMeta, []store.KeyRange{kr}, func(c store.Cell) bool {
		l, ex, err := readExemplarSet(c.Value)
		if err != nil {
			bad++
			return true
		}
		tsuid := append([]byte(nil), c.Row[1:]...)
		for _, e := range ex {
			h.exemplars.add(l, tsuid, e, false)
		}
		return true
	})
	if bad > 0 {
		h.opts.Logger.Error("unreadable exemplar rows skipped", "rows", bad)
	}
	return err
}
