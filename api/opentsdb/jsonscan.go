package opentsdb

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// This file is a small JSON scanner over a byte slice, enough for the
// /api/put body: it finds tokens where they are, validates what it skips, and
// copies only strings that hold escapes.

var errSyntax = errors.New("invalid JSON")

// strSpecial marks the bytes that end a run of plain string contents.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// maxDepth bounds the nesting of values skipped inside a point.
const maxDepth = 512

// unsafeString returns b as a string without copying. The string must not
// outlive b's contents, nor be retained.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanString scans the string whose opening quote is at b[i]. It returns the
// bounds of its raw contents, whether they hold escapes, and the index after
// the closing quote.
func scanString(b []byte, i int) (start, end int, esc bool, next int, err error) {
	i++
	start = i
	for i < len(b) {
		c := b[i]
		if !strSpecial[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return start, i, esc, i + 1, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, 0, false, 0, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return 0, 0, false, 0, errSyntax
				}
				i += 6
			default:
				return 0, 0, false, 0, errSyntax
			}
		case c < 0x20:
			return 0, 0, false, 0, errSyntax
		default:
			i++
		}
	}
	return 0, 0, false, 0, errSyntax
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hex4(b []byte) rune {
	return rune(hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3]))
}

// unescape appends the decoded contents of a string already checked by
// scanString. A lone surrogate becomes U+FFFD.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
						r2 = d
						i += 6
					}
				}
				r = r2
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // " \ /
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}

// scanNumber scans the JSON number at b[i] and returns the index after it
// and whether it has a fraction or an exponent.
func scanNumber(b []byte, i int) (next int, float bool, err error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return 0, false, errSyntax
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		float = true
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false, errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		float = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false, errSyntax
		}
	}
	return i, float, nil
}

// scanLiteral checks that the literal lit (true, false, null) is at b[i].
func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

// skipValue validates and skips the value at b[i] (no leading space).
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; c {
	case '"':
		_, _, _, next, err := scanString(b, i)
		return next, err
	case '{':
		if depth >= maxDepth {
			return 0, errSyntax
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, errSyntax
			}
			_, _, _, next, err := scanString(b, i)
			if err != nil {
				return 0, err
			}
			i = skipWS(b, next)
			if i >= len(b) || b[i] != ':' {
				return 0, errSyntax
			}
			i, err = skipValue(b, skipWS(b, i+1), depth+1)
			if err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, errSyntax
			}
			if b[i] == '}' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errSyntax
			}
			i = skipWS(b, i+1)
		}
	case '[':
		if depth >= maxDepth {
			return 0, errSyntax
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			i, err = skipValue(b, i, depth+1)
			if err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, errSyntax
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errSyntax
			}
			i = skipWS(b, i+1)
		}
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	default:
		next, _, err := scanNumber(b, i)
		return next, err
	}
}
