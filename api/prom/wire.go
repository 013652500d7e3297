package prom

import (
	"encoding/binary"
	"math"
)

// The protobuf wire format, as much of it as the remote-write and
// remote-read messages use: varints, fixed64 and length-delimited fields.
// Decoding never allocates; every helper returns the offset after what it
// read, or -1 when the input ends early or is not well formed.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireLen     = 2
	wireStart   = 3 // deprecated groups: not accepted
	wireEnd     = 4
	wireFixed32 = 5
)

// uvarint reads a varint at b[off:]. A one-byte varint (field keys,
// most lengths) is read inline; longer ones by uvarintSlow.
func uvarint(b []byte, off int) (uint64, int) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), off + 1
	}
	return uvarintSlow(b, off)
}

// uvarintSlow reads a varint of any length at b[off:].
//
//go:noinline
func uvarintSlow(b []byte, off int) (uint64, int) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if off >= len(b) {
			return 0, -1
		}
		c := b[off]
		off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1 // overflows 64 bits
			}
			return x | uint64(c)<<s, off
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, -1
}

// field reads a field key: the field number and the wire type.
func field(b []byte, off int) (num int, typ int, next int) {
	k, next := uvarint(b, off)
	if next < 0 || k>>3 == 0 || k>>3 > math.MaxInt32 {
		return 0, 0, -1
	}
	return int(k >> 3), int(k & 7), next
}

// lenField reads the length of a length-delimited field at b[off:] and
// returns where its data starts and ends.
func lenField(b []byte, off int) (start, end int) {
	n, off := uvarint(b, off)
	if off < 0 || n > uint64(len(b)-off) {
		return -1, -1
	}
	return off, off + int(n)
}

// fixed64 reads a little-endian 64-bit value.
func fixed64(b []byte, off int) (uint64, int) {
	if off < 0 || len(b)-off < 8 {
		return 0, -1
	}
	return binary.LittleEndian.Uint64(b[off:]), off + 8
}

// skip skips the value of a field of wire type typ at b[off:].
func skip(b []byte, off, typ int) int {
	switch typ {
	case wireVarint:
		_, off = uvarint(b, off)
		return off
	case wireFixed64:
		if len(b)-off < 8 {
			return -1
		}
		return off + 8
	case wireLen:
		_, end := lenField(b, off)
		return end
	case wireFixed32:
		if len(b)-off < 4 {
			return -1
		}
		return off + 4
	}
	return -1 // groups and the undefined types 6, 7
}

// Appending.

func appendKey(dst []byte, num, typ int) []byte {
	return binary.AppendUvarint(dst, uint64(num)<<3|uint64(typ))
}

func appendVarintField(dst []byte, num int, v uint64) []byte {
	if v == 0 {
		return dst // proto3: the default is not written
	}
	return binary.AppendUvarint(appendKey(dst, num, wireVarint), v)
}

func appendFixed64Field(dst []byte, num int, v uint64) []byte {
	if v == 0 {
		return dst
	}
	return binary.LittleEndian.AppendUint64(appendKey(dst, num, wireFixed64), v)
}

func appendBytesField(dst []byte, num int, s []byte) []byte {
	dst = binary.AppendUvarint(appendKey(dst, num, wireLen), uint64(len(s)))
	return append(dst, s...)
}

func appendStringField(dst []byte, num int, s string) []byte {
	dst = binary.AppendUvarint(appendKey(dst, num, wireLen), uint64(len(s)))
	return append(dst, s...)
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
