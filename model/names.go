package model

import (
	"unicode"
	"unicode/utf8"
)

// openTSDBChars marks the ASCII bytes OpenTSDB allows in metric names, tag
// keys and tag values: letters, digits and "-_./:".
var openTSDBChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-_./:" {
		t[c] = true
	}
	return t
}()

// OpenTSDBNameByte reports whether OpenTSDB allows the byte c in a name; a
// byte of a multi-byte UTF-8 sequence is never allowed on its own (see
// CheckOpenTSDBChars for those).
func OpenTSDBNameByte(c byte) bool { return openTSDBChars[c] }

// CheckOpenTSDBChars returns "" if OpenTSDB allows every character of s
// (openTSDBChars and Unicode letters, as its Tags.validateString), else
// "illegal character: c" naming the first that it does not, in OpenTSDB's
// words. Emptiness and length are the caller's to check.
func CheckOpenTSDBChars(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !openTSDBChars[c] {
				return "illegal character: " + string(rune(c))
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !unicode.IsLetter(r) {
			return "illegal character: " + string(r)
		}
		i += n
	}
	return ""
}
