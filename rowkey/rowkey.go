// Package rowkey encodes and decodes the keys of the data table:
//
//	row key   = salt[1] | metric UID[mw] | base hour[4] | (tagk UID[kw] | tagv UID[vw])*
//	qualifier = offset of the cell's first point in the hour, ms [4] | writer id [2]
//
// The tag pairs are sorted by tag key UID bytes. The salt depends on the
// series only (metric UID and tag pairs), never on time, so every row of a
// series lands in one bucket and a reader can compute it; rows of one hour
// spread over all buckets. A TSUID is the row key without salt and hour:
// metric UID | tag pairs; it names a series.
//
// Widths and the bucket count form a Layout, fixed when a data set is
// created and recorded in it (see Record).
package rowkey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// HourMs is the span of one row, in milliseconds.
const HourMs = int64(time.Hour / time.Millisecond)

// QualifierLen is the length of a data cell qualifier.
const QualifierLen = 6

// Layout is the shape of the keys of a data set.
type Layout struct {
	SaltBuckets int `json:"salt_buckets"`
	MetricWidth int `json:"metric_width"`
	TagKWidth   int `json:"tagk_width"`
	TagVWidth   int `json:"tagv_width"`
}

// DefaultLayout is the layout of DESIGN.md: 20 salt buckets, UIDs of 3, 3 and 4 bytes.
func DefaultLayout() Layout {
	return Layout{SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}
}

// Validate reports a layout that cannot be used.
func (l Layout) Validate() error {
	if l.SaltBuckets < 1 || l.SaltBuckets > 256 {
		return fmt.Errorf("rowkey: salt-buckets=%d: must be 1 to 256", l.SaltBuckets)
	}
	for _, w := range []struct {
		name string
		v    int
	}{{"uid-width-metric", l.MetricWidth}, {"uid-width-tagk", l.TagKWidth}, {"uid-width-tagv", l.TagVWidth}} {
		if w.v < 1 || w.v > 8 {
			return fmt.Errorf("rowkey: %s=%d: must be 1 to 8", w.name, w.v)
		}
	}
	return nil
}

// PairWidth is the length of one tag pair in a key.
func (l Layout) PairWidth() int { return l.TagKWidth + l.TagVWidth }

// prefixLen is the length of salt | metric | hour.
func (l Layout) prefixLen() int { return 1 + l.MetricWidth + 4 }

// ErrBadKey is returned for a key or qualifier of the wrong shape.
var ErrBadKey = errors.New("rowkey: malformed key")

// CheckTSUID reports whether tsuid has the shape of metric UID plus whole tag pairs.
func (l Layout) CheckTSUID(tsuid []byte) error {
	if len(tsuid) < l.MetricWidth || (len(tsuid)-l.MetricWidth)%l.PairWidth() != 0 {
		return fmt.Errorf("%w: tsuid of %d bytes", ErrBadKey, len(tsuid))
	}
	return nil
}

// Salt returns the salt bucket of the series named by tsuid: its Hash
// modulo the bucket count. It is part of the on-disk format: never change it.
func (l Layout) Salt(tsuid []byte) byte {
	return byte(Hash(tsuid) % uint32(l.SaltBuckets))
}

// Hash is FNV-1a of a TSUID: the salt's hash (part of the on-disk format),
// also used where a series needs a value of its own that every process
// draws alike (series.Options.ChunkSpread).
func Hash(tsuid []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range tsuid {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// HourOf returns the base hour, in ms, of the timestamp t (ms).
func HourOf(t int64) int64 {
	h := t - t%HourMs
	if t < 0 && t%HourMs != 0 {
		h -= HourMs
	}
	return h
}

// AppendRowKey appends the row key of the series tsuid at the base hour
// (ms, a multiple of HourMs) to dst.
func (l Layout) AppendRowKey(dst, tsuid []byte, hourMs int64) []byte {
	dst = append(dst, l.Salt(tsuid))
	dst = append(dst, tsuid[:l.MetricWidth]...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(hourMs/1000))
	return append(dst, tsuid[l.MetricWidth:]...)
}

// ParseRowKey splits a row key into its salt, base hour (ms) and TSUID. The
// TSUID is appended to dst.
func (l Layout) ParseRowKey(dst, row []byte) (salt byte, hourMs int64, tsuid []byte, err error) {
	p := l.prefixLen()
	if len(row) < p || (len(row)-p)%l.PairWidth() != 0 {
		return 0, 0, dst, fmt.Errorf("%w: row key of %d bytes", ErrBadKey, len(row))
	}
	salt = row[0]
	hourMs = int64(binary.BigEndian.Uint32(row[1+l.MetricWidth:])) * 1000
	dst = append(dst, row[1:1+l.MetricWidth]...)
	dst = append(dst, row[p:]...)
	return salt, hourMs, dst, nil
}

// RowTSUIDEqual reports whether the row key row belongs to the series tsuid,
// without copying.
func (l Layout) RowTSUIDEqual(row, tsuid []byte) bool {
	p := l.prefixLen()
	if len(row)-p+l.MetricWidth != len(tsuid) {
		return false
	}
	return string(row[1:1+l.MetricWidth]) == string(tsuid[:l.MetricWidth]) &&
		string(row[p:]) == string(tsuid[l.MetricWidth:])
}

// MetricRange returns the key range [start, end) of every row of the metric
// in one salt bucket whose base hour lies in [startHourMs, endHourMs]; end
// is nil when the range runs to the end of the table.
func (l Layout) MetricRange(salt byte, metric []byte, startHourMs, endHourMs int64) (start, end []byte) {
	start = make([]byte, 0, l.prefixLen())
	start = append(start, salt)
	start = append(start, metric...)
	end = append([]byte(nil), start...)
	start = binary.BigEndian.AppendUint32(start, uint32(startHourMs/1000))
	endSec := uint64(endHourMs/1000) + 1
	if endSec > 0xffffffff {
		return start, prefixEnd(end)
	}
	end = binary.BigEndian.AppendUint32(end, uint32(endSec))
	return start, end
}

// prefixEnd returns the first key after every key that starts with prefix,
// nil if there is none (as store.PrefixEnd; rowkey imports no store).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// AppendQualifier appends a data cell qualifier.
func AppendQualifier(dst []byte, offsetMs uint32, writer uint16) []byte {
	dst = binary.BigEndian.AppendUint32(dst, offsetMs)
	return binary.BigEndian.AppendUint16(dst, writer)
}

// ParseQualifier splits a data cell qualifier.
func ParseQualifier(q []byte) (offsetMs uint32, writer uint16, err error) {
	if len(q) != QualifierLen {
		return 0, 0, fmt.Errorf("%w: qualifier of %d bytes", ErrBadKey, len(q))
	}
	offsetMs = binary.BigEndian.Uint32(q)
	if int64(offsetMs) >= HourMs {
		return 0, 0, fmt.Errorf("%w: qualifier offset %d ms is past the hour", ErrBadKey, offsetMs)
	}
	return offsetMs, binary.BigEndian.Uint16(q[4:]), nil
}

// AppendUID appends id in width big-endian bytes.
func AppendUID(dst []byte, id uint64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		dst = append(dst, byte(id>>(8*uint(i))))
	}
	return dst
}

// UIDValue reads a big-endian UID of any width up to 8.
func UIDValue(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// MaxUID is the largest UID that fits in width bytes.
func MaxUID(width int) uint64 {
	if width >= 8 {
		return 1<<64 - 1
	}
	return 1<<(8*uint(width)) - 1
}
