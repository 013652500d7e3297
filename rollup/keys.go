package rollup

import (
	"encoding/binary"
	"errors"
	"fmt"

	"hourglass/rowkey"
	"hourglass/store"
)

// The keys of the rollup table (store.TableRollup), docs/format/rollup.md
// "Keys":
//
//	row key   = salt[1] | interval s[4] | metric UID[mw] | day s[4] | (tagk UID[kw] | tagv UID[vw])*
//	qualifier = cell base − day, s[4]                      (a cell hourglass computed)
//	          | aggregator[1] | bucket start − day, s[4]   (a point written to /api/rollup)
//
// A row holds one series' rollups at one interval for one UTC day. The
// salt is the series' raw salt (rowkey.Layout.Salt of its TSUID).

// RowSpanMs is the span of one rollup row: a UTC day, for every interval.
const RowSpanMs = dayMs

// QualifierLen is the length of the qualifier of a computed cell;
// ExternalQualifierLen that of a point written through /api/rollup.
const (
	QualifierLen         = 4
	ExternalQualifierLen = 5
)

// ErrBadKey is wrapped by the errors of the key and qualifier parsers.
var ErrBadKey = errors.New("rollup: malformed key")

// CellSpan returns the span (ms) of one computed cell of the interval: an
// hour (the buckets of one raw row) for intervals below an hour, a UTC day
// for an hour and above.
func CellSpan(intervalMs int64) int64 {
	if intervalMs < hourMs {
		return hourMs
	}
	return dayMs
}

// RowBase returns the base (ms) of the rollup row that holds time t: the
// UTC day of t.
func RowBase(t int64) int64 { return BucketStart(t, RowSpanMs) }

// CellBase returns the base (ms) of the computed cell of the interval that
// holds time t.
func CellBase(t, intervalMs int64) int64 { return BucketStart(t, CellSpan(intervalMs)) }

// keyPrefixLen is the length of salt | interval | metric | day.
func keyPrefixLen(l rowkey.Layout) int { return 1 + 4 + l.MetricWidth + 4 }

// AppendRowKey appends to dst the rollup row key of the series tsuid (a
// TSUID of layout l) at the interval (ms, which ValidateInterval accepts)
// for the day holding t (ms).
func AppendRowKey(dst []byte, l rowkey.Layout, tsuid []byte, intervalMs, t int64) []byte {
	dst = append(dst, l.Salt(tsuid))
	dst = binary.BigEndian.AppendUint32(dst, uint32(intervalMs/1000))
	dst = append(dst, tsuid[:l.MetricWidth]...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(RowBase(t)/1000))
	return append(dst, tsuid[l.MetricWidth:]...)
}

// RowKey is a parsed rollup row key.
type RowKey struct {
	Salt     byte
	Interval int64  // ms
	Day      int64  // the row's base, ms, a UTC midnight
	TSUID    []byte // metric UID | tag pairs
}

// ParseRowKey parses a rollup row key of layout l. The TSUID is appended
// to dst (pass a reused buffer to parse without allocating).
func ParseRowKey(l rowkey.Layout, dst, row []byte) (RowKey, error) {
	p := keyPrefixLen(l)
	if len(row) < p || (len(row)-p)%l.PairWidth() != 0 {
		return RowKey{TSUID: dst}, fmt.Errorf("%w: rollup row key of %d bytes", ErrBadKey, len(row))
	}
	k := RowKey{Salt: row[0]}
	k.Interval = int64(binary.BigEndian.Uint32(row[1:])) * 1000
	if err := ValidateInterval(k.Interval); err != nil {
		return RowKey{TSUID: dst}, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	k.Day = int64(binary.BigEndian.Uint32(row[5+l.MetricWidth:])) * 1000
	if k.Day%RowSpanMs != 0 {
		return RowKey{TSUID: dst}, fmt.Errorf("%w: row base %d s is not a UTC midnight", ErrBadKey, k.Day/1000)
	}
	dst = append(dst, row[5:5+l.MetricWidth]...)
	k.TSUID = append(dst, row[p:]...)
	return k, nil
}

// MetricRange returns the key range [start, end) of every rollup row of the
// metric at the interval in one salt bucket whose day holds a time in
// [startMs, endMs].
func MetricRange(l rowkey.Layout, salt byte, metric []byte, intervalMs, startMs, endMs int64) (start, end []byte) {
	start = make([]byte, 0, keyPrefixLen(l))
	start = append(start, salt)
	start = binary.BigEndian.AppendUint32(start, uint32(intervalMs/1000))
	start = append(start, metric...)
	end = append([]byte(nil), start...)
	start = binary.BigEndian.AppendUint32(start, uint32(RowBase(startMs)/1000))
	endSec := uint64(RowBase(endMs)/1000) + 1
	if endSec > 0xffffffff {
		return start, store.PrefixEnd(end)
	}
	return start, binary.BigEndian.AppendUint32(end, uint32(endSec))
}

// IntervalRange returns the key range of every rollup row at the interval
// in one salt bucket (every metric, every day).
func IntervalRange(salt byte, intervalMs int64) (start, end []byte) {
	start = binary.BigEndian.AppendUint32([]byte{salt}, uint32(intervalMs/1000))
	return start, store.PrefixEnd(start)
}

// AppendQualifier appends the qualifier of the computed cell whose base is
// cellBase (ms) in the row of day (ms).
func AppendQualifier(dst []byte, day, cellBase int64) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32((cellBase-day)/1000))
}

// AppendExternalQualifier appends the qualifier of a point written through
// /api/rollup with the aggregator at bucket start t (ms) in the row of day (ms).
func AppendExternalQualifier(dst []byte, agg Aggregator, day, t int64) []byte {
	dst = append(dst, byte(agg))
	return binary.BigEndian.AppendUint32(dst, uint32((t-day)/1000))
}

// Qualifier is a parsed qualifier: a computed cell (Agg 0) with its base
// offset, or an external point with its aggregator and bucket offset.
type Qualifier struct {
	Agg    Aggregator // 0 for a computed cell
	Offset int64      // from the row's day, ms
}

// ParseQualifier parses a rollup qualifier.
func ParseQualifier(q []byte) (Qualifier, error) {
	switch len(q) {
	case QualifierLen:
		off := int64(binary.BigEndian.Uint32(q)) * 1000
		if off >= RowSpanMs || off%hourMs != 0 {
			return Qualifier{}, fmt.Errorf("%w: cell offset %d s is not an hour of the day", ErrBadKey, off/1000)
		}
		return Qualifier{Offset: off}, nil
	case ExternalQualifierLen:
		a := Aggregator(q[0])
		if a.String() == "" {
			return Qualifier{}, fmt.Errorf("%w: unknown aggregator %d", ErrBadKey, q[0])
		}
		off := int64(binary.BigEndian.Uint32(q[1:])) * 1000
		if off >= RowSpanMs {
			return Qualifier{}, fmt.Errorf("%w: point offset %d s is past the day", ErrBadKey, off/1000)
		}
		return Qualifier{Agg: a, Offset: off}, nil
	}
	return Qualifier{}, fmt.Errorf("%w: qualifier of %d bytes", ErrBadKey, len(q))
}
