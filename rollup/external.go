package rollup

import (
	"encoding/binary"
	"fmt"
	"strings"

	"hourglass/chunk"
)

// Aggregator names the aggregate of a rollup point written from outside
// (OpenTSDB's /api/rollup "aggregator"): one stored value per series,
// interval bucket and aggregator, beside the cells hourglass computes.
type Aggregator byte

// The aggregators /api/rollup accepts. Their numbers are part of the
// rollup table's format (the first byte of an external qualifier); never
// renumber them. 0 is not an aggregator: it marks a computed cell.
const (
	AggSum   Aggregator = 1
	AggCount Aggregator = 2
	AggMin   Aggregator = 3
	AggMax   Aggregator = 4
	AggFirst Aggregator = 5
	AggLast  Aggregator = 6
)

// Aggregators lists every aggregator, in numeric order.
var Aggregators = []Aggregator{AggSum, AggCount, AggMin, AggMax, AggFirst, AggLast}

// String returns the aggregator's lower-case name, "" for an unknown one.
func (a Aggregator) String() string {
	switch a {
	case AggSum:
		return "sum"
	case AggCount:
		return "count"
	case AggMin:
		return "min"
	case AggMax:
		return "max"
	case AggFirst:
		return "first"
	case AggLast:
		return "last"
	}
	return ""
}

// ParseAggregator returns the aggregator named name, in any case. OpenTSDB's
// derived aggregations (avg, dev: tsd.rollups.block_derived) and the
// aggregators that have no rollup are refused.
func ParseAggregator(name string) (Aggregator, error) {
	for _, a := range Aggregators {
		if strings.EqualFold(name, a.String()) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("no such rollup aggregator %q: must be one of sum, count, min, max, first, last", quoteShort(name))
}

// quoteShort bounds a name quoted in an error.
func quoteShort(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// External value kinds: the first byte of an external point's value.
const (
	extInt   = 0 // then a zig-zag varint
	extFloat = 1 // then the IEEE-754 bits, 8 bytes big-endian
)

// AppendExternalValue appends the stored form of an external rollup
// point's value: a kind byte, then the int as a varint or the float's bits.
func AppendExternalValue(dst []byte, v chunk.Value) []byte {
	if v.IsInt() {
		return binary.AppendVarint(append(dst, extInt), v.Int())
	}
	return binary.BigEndian.AppendUint64(append(dst, extFloat), v.Bits())
}

// ParseExternalValue decodes what AppendExternalValue wrote. Anything else
// is a *CorruptionError.
func ParseExternalValue(b []byte) (chunk.Value, error) {
	if len(b) == 0 {
		return chunk.Value{}, &CorruptionError{Offset: 0, Reason: "empty external value"}
	}
	switch b[0] {
	case extInt:
		x, n := binary.Varint(b[1:])
		if n <= 0 {
			return chunk.Value{}, &CorruptionError{Offset: 1, Reason: "bad external int"}
		}
		if 1+n != len(b) {
			return chunk.Value{}, &CorruptionError{Offset: 1 + n, Reason: "bytes after the external value"}
		}
		return chunk.Int(x), nil
	case extFloat:
		if len(b) != 9 {
			return chunk.Value{}, &CorruptionError{Offset: 1, Reason: "external float of the wrong length"}
		}
		return chunk.FloatBits(binary.BigEndian.Uint64(b[1:])), nil
	}
	return chunk.Value{}, &CorruptionError{Offset: 0, Reason: "unknown external value kind"}
}
