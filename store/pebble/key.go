package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"hourglass/store"
)

// Key encoding (see docs/format/store.md):
//
//	key = table[1] | escape(row) | 0x00 0x01 | qualifier
//
// escape(row) writes every 0x00 byte of row as 0x00 0xFF and every other byte
// as itself. The terminator 0x00 0x01 sorts below both an escaped zero
// (0x00 0xFF) and any other byte, so encoded keys sort by table, then by raw
// row key (a row sorts before every row it is a prefix of), then by raw
// qualifier, and the cells of one row are one contiguous key range.

const (
	escByte   = 0x00 // starts an escape pair or the terminator
	escZero   = 0xff // 0x00 0xff is a literal 0x00 of the row
	escTerm   = 0x01 // 0x00 0x01 ends the row
	escTermHi = 0x02 // 0x00 0x02 is just above every key of a row
)

// errCorruptKey reports a Pebble key that is not a valid encoding. It only
// shows up on corrupt data or a key written by something else.
var errCorruptKey = errors.New("store/pebble: corrupt key")

// escapedLen returns the length of escape(row).
func escapedLen(row []byte) int {
	return len(row) + bytes.Count(row, []byte{escByte})
}

// appendEscaped appends escape(row) to dst. Like decodeKey it is a plain
// byte loop: row keys hold many zero bytes.
func appendEscaped(dst, row []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, escapedLen(row))[:n+escapedLen(row)]
	putEscaped(dst[n:], row)
	return dst
}

// putEscaped writes escape(row) to the start of dst, which must be at least
// escapedLen(row) long, and returns the number of bytes written.
func putEscaped(dst, row []byte) int {
	w := 0
	for _, c := range row {
		dst[w] = c
		w++
		if c == escByte {
			dst[w] = escZero
			w++
		}
	}
	return w
}

// appendRowPrefix appends table | escape(row) | terminator: the prefix every
// key of the row starts with, and the smallest of them.
func appendRowPrefix(dst []byte, t store.Table, row []byte) []byte {
	dst = append(dst, byte(t))
	dst = appendEscaped(dst, row)
	return append(dst, escByte, escTerm)
}

// appendRowEnd appends the smallest key above every key of the row.
func appendRowEnd(dst []byte, t store.Table, row []byte) []byte {
	dst = append(dst, byte(t))
	dst = appendEscaped(dst, row)
	return append(dst, escByte, escTermHi)
}

// appendKey appends the Pebble key of one cell.
func appendKey(dst []byte, t store.Table, row, qualifier []byte) []byte {
	dst = appendRowPrefix(dst, t, row)
	return append(dst, qualifier...)
}

// putKey writes the Pebble key of one cell to dst, which must be exactly
// keyLen(row, qualifier) long (a Pebble batch's deferred key).
func putKey(dst []byte, t store.Table, row, qualifier []byte) {
	dst[0] = byte(t)
	w := 1 + putEscaped(dst[1:], row)
	dst[w], dst[w+1] = escByte, escTerm
	if copy(dst[w+2:], qualifier) != len(qualifier) || w+2+len(qualifier) != len(dst) {
		panic("store/pebble: putKey: dst is not keyLen bytes long")
	}
}

// keyLen returns len(appendKey(nil, t, row, qualifier)).
func keyLen(row, qualifier []byte) int {
	return 1 + escapedLen(row) + 2 + len(qualifier)
}

// appendBound appends the Pebble key that a row-key range bound maps to:
// table | escape(bound), with no terminator. For every row r of table t,
// r < bound exactly when every key of r sorts below it, and r >= bound
// exactly when every key of r sorts at or above it, so the raw range
// [Start, End) is the Pebble range [appendBound(Start), appendBound(End)).
func appendBound(dst []byte, t store.Table, bound []byte) []byte {
	dst = append(dst, byte(t))
	return appendEscaped(dst, bound)
}

// errReservedTable rejects table 0xff: it would have no key above it, and
// DeleteRange needs one.
var errReservedTable = errors.New("store/pebble: table 255 is reserved")

// checkTable returns an error for a table the encoding cannot hold.
func checkTable(t store.Table) error {
	if t == 0xff {
		return errReservedTable
	}
	return nil
}

// tableEnd returns the smallest key above every key of table t (which
// checkTable accepted).
func tableEnd(t store.Table) []byte {
	return []byte{byte(t) + 1}
}

// decodeKey decodes an encoded key, appending the raw row to rowBuf. The
// qualifier aliases key.
func decodeKey(key, rowBuf []byte) (t store.Table, row, qualifier []byte, err error) {
	if len(key) < 3 {
		return 0, nil, nil, fmt.Errorf("%w: %d bytes is too short", errCorruptKey, len(key))
	}
	row, n, err := unescape(rowBuf, key[1:])
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%w in key %x", err, key)
	}
	return store.Table(key[0]), row, key[1+n+2:], nil
}

// unescape decodes the escaped row that starts esc, appending the raw row
// to dst, and returns it with n, the length of the escaped row: the
// terminator is esc[n:n+2]. It runs for every cell a scan visits, so it is
// a plain byte loop: row keys hold many zero bytes (small UIDs), which makes
// looking for them with bytes.IndexByte slower than this.
func unescape(dst, esc []byte) (row []byte, n int, err error) {
	start := len(dst)
	dst = slices.Grow(dst, len(esc))[:start+len(esc)]
	w := start
	for i := 0; i < len(esc); i++ {
		c := esc[i]
		if c != escByte {
			dst[w] = c
			w++
			continue
		}
		if i+1 == len(esc) {
			break
		}
		switch esc[i+1] {
		case escZero:
			dst[w] = 0
			w++
			i++
		case escTerm:
			return dst[:w], i, nil
		default:
			return nil, 0, fmt.Errorf("%w: bad escape 0x00 0x%02x", errCorruptKey, esc[i+1])
		}
	}
	return nil, 0, fmt.Errorf("%w: no row terminator", errCorruptKey)
}
