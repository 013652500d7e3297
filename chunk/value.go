package chunk

import (
	"math"
	"strconv"
)

// Value is one point's value: an int64 or a float64. Integers stay integers
// end to end (OpenTSDB prints 42, not 42.0) and keep all 64 bits; floats keep
// every bit, NaN payloads (Prometheus' staleness marker) and -0 included.
//
// The zero Value is the float 0.
type Value struct {
	bits  uint64
	isInt bool
}

// Int returns the integer value i.
func Int(i int64) Value { return Value{bits: uint64(i), isInt: true} }

// Float returns the float value f, bit for bit.
func Float(f float64) Value { return Value{bits: math.Float64bits(f)} }

// FloatBits returns the float whose IEEE-754 bits are b.
func FloatBits(b uint64) Value { return Value{bits: b} }

// IsInt reports whether v holds an integer.
func (v Value) IsInt() bool { return v.isInt }

// Int returns v as an int64: the integer itself, or the float truncated toward zero.
func (v Value) Int() int64 {
	if v.isInt {
		return int64(v.bits)
	}
	return int64(math.Float64frombits(v.bits))
}

// Float returns v as a float64: the float itself, or the integer converted.
func (v Value) Float() float64 {
	if v.isInt {
		return float64(int64(v.bits))
	}
	return math.Float64frombits(v.bits)
}

// Bits returns the raw 64 bits: two's complement for an integer, IEEE-754 for a float.
func (v Value) Bits() uint64 { return v.bits }

// Identical reports whether v and w have the same kind and the same bits.
func (v Value) Identical(w Value) bool { return v == w }

// AppendText appends v as OpenTSDB prints it: integers in decimal, floats in
// the shortest form that round-trips, NaN as NaN and infinities as +Inf/-Inf.
func (v Value) AppendText(dst []byte) []byte {
	if v.isInt {
		return strconv.AppendInt(dst, int64(v.bits), 10)
	}
	f := math.Float64frombits(v.bits)
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// String returns v as AppendText writes it.
func (v Value) String() string { return string(v.AppendText(nil)) }

// Point is one timestamped value. T is Unix milliseconds.
type Point struct {
	T int64
	V Value
}
