package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"hourglass/store"
)

// UIDMeta is the metadata of one UID, as OpenTSDB's UIDMeta, without the
// parts that come from the UID table (uid, type, name). Created is Unix
// seconds, 0 when unknown.
type UIDMeta struct {
	DisplayName string            `json:"displayName"`
	Description string            `json:"description"`
	Notes       string            `json:"notes"`
	Created     int64             `json:"created"`
	Custom      map[string]string `json:"custom"`
}

func uidRow(kind byte, uid []byte) []byte {
	return append([]byte{prefixUID, kind}, uid...)
}

// GetUIDMeta returns the stored metadata of a UID of kind (0 metric, 1 tagk,
// 2 tagv) and whether there was any; without any it returns the zero UIDMeta.
func (s *Store) GetUIDMeta(ctx context.Context, kind byte, uid []byte) (UIDMeta, bool, error) {
	var m UIDMeta
	ok, err := s.get(ctx, uidRow(kind, uid), &m)
	return m, ok, err
}

// PutUIDMeta stores the metadata of a UID.
func (s *Store) PutUIDMeta(ctx context.Context, kind byte, uid []byte, m UIDMeta) error {
	return s.put(ctx, uidRow(kind, uid), m)
}

// DeleteUIDMeta deletes the metadata of a UID (never the UID itself).
func (s *Store) DeleteUIDMeta(ctx context.Context, kind byte, uid []byte) error {
	return s.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: uidRow(kind, uid), Qualifier: qualJSON, Delete: true}})
}

// TSMeta is the metadata of one series, as OpenTSDB's TSMeta, without the
// parts that come from elsewhere (tsuid, metric and tag UIDMeta, last
// received, datapoint count). Max and Min are NaN when unset.
type TSMeta struct {
	DisplayName string            `json:"displayName"`
	Description string            `json:"description"`
	Notes       string            `json:"notes"`
	Created     int64             `json:"created"`
	Custom      map[string]string `json:"custom"`
	Units       string            `json:"units"`
	DataType    string            `json:"dataType"`
	Retention   int64             `json:"retention"`
	Max         Float             `json:"max"`
	Min         Float             `json:"min"`
}

// NewTSMeta returns the metadata of a series that has none: min and max unset.
func NewTSMeta() TSMeta { return TSMeta{Max: Float(math.NaN()), Min: Float(math.NaN())} }

// Float is a float64 whose JSON form keeps NaN and infinities as strings
// ("NaN", as Jackson writes them), so unset values survive a round trip.
type Float float64

// MarshalJSON writes f as a number, or as "NaN", "Infinity", "-Infinity".
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number, a string holding one (or NaN, Infinity,
// -Infinity) or null (NaN).
func (f *Float) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*f = Float(math.NaN())
		return nil
	}
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	*f = Float(v)
	return nil
}

func tsRow(tsuid []byte) []byte { return append([]byte{prefixTS}, tsuid...) }

// GetTSMeta returns the stored metadata of a series and whether there was
// any; without any it returns NewTSMeta().
func (s *Store) GetTSMeta(ctx context.Context, tsuid []byte) (TSMeta, bool, error) {
	m := NewTSMeta()
	ok, err := s.get(ctx, tsRow(tsuid), &m)
	return m, ok, err
}

// PutTSMeta stores the metadata of a series.
func (s *Store) PutTSMeta(ctx context.Context, tsuid []byte, m TSMeta) error {
	return s.put(ctx, tsRow(tsuid), m)
}

// DeleteTSMeta deletes the metadata of a series (never its data).
func (s *Store) DeleteTSMeta(ctx context.Context, tsuid []byte) error {
	return s.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: tsRow(tsuid), Qualifier: qualJSON, Delete: true}})
}

func (s *Store) get(ctx context.Context, row []byte, v any) (bool, error) {
	cells, err := s.st.ReadRow(ctx, store.TableMeta, row)
	if err != nil {
		return false, err
	}
	for _, c := range cells {
		if string(c.Qualifier) == string(qualJSON) {
			if err := json.Unmarshal(c.Value, v); err != nil {
				return false, fmt.Errorf("%w: row %x: %v", ErrBadRecord, row, err)
			}
			return true, nil
		}
	}
	return false, nil
}

func (s *Store) put(ctx context.Context, row []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.st.Write(ctx, store.TableMeta, []store.Mutation{{Row: row, Qualifier: qualJSON, Value: b}})
}
