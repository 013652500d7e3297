package prom

import (
	"encoding/binary"
	"math"
	"math/bits"
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

// uvarintSlow reads a varint of any length at b[off:]. One of up to 8
// bytes (a millisecond timestamp takes 6) is read with one load where b's
// capacity has 8 bytes from off (bytes past len(b) are read, never used:
// a varint that does not end within len(b) is malformed, as the loop
// finds too): its end found by the first byte whose top bit is clear, its
// 7-bit groups gathered without a loop.
//
//go:noinline
func uvarintSlow(b []byte, off int) (uint64, int) {
	if off >= 0 && off < len(b) && cap(b)-off >= 8 {
		x := binary.LittleEndian.Uint64(b[off:cap(b)])
		if stop := ^x & 0x8080808080808080; stop != 0 {
			n := bits.TrailingZeros64(stop) + 1 // 8 x the varint's bytes
			if end := off + n/8; end <= len(b) {
				x &= 1<<n - 1 // n = 64: the shift gives 0, the mask all ones
				x = x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
					x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
				return x, end
			}
			return 0, -1 // it runs past len(b)
		}
	}
	return uvarintLoop(b, off)
}

// uvarintLoop reads a varint of any length at b[off:], a byte at a time.
func uvarintLoop(b []byte, off int) (uint64, int) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if off < 0 || off >= len(b) {
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

// sampleFast reads a Sample (of either version) in the shape Prometheus'
// encoders give it: the value (field 1, fixed64), then the timestamp (field
// 2, varint), either left out when it is zero, and nothing else. ok is
// false for any other shape, which the general walk reads (and checks):
// whatever sampleFast takes, the general walk takes too, with the same
// timestamp and value.
func sampleFast(b []byte) (t int64, v uint64, ok bool) {
	off := 0
	if len(b) >= 9 && b[0] == 1<<3|wireFixed64 {
		v, off = binary.LittleEndian.Uint64(b[1:9]), 9
	}
	if off == len(b) {
		return 0, v, true
	}
	if b[off] != 2<<3|wireVarint {
		return 0, 0, false
	}
	x, end := uvarint(b, off+1)
	if end != len(b) {
		return 0, 0, false
	}
	return int64(x), v, true
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
