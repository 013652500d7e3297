// Package quote bounds how much of a client's input an error message or a
// log line repeats: a 1 MB metric name is quoted as its first few hundred
// bytes and its length, so a reply to bad input stays small whatever the input.
package quote

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of one input String keeps.
const Max = 200

// MaxMessage is the most bytes of a whole message Message keeps: a message
// quotes at most a few inputs, each bounded by String.
const MaxMessage = 1024

// String returns s if it holds at most Max bytes, else its first Max bytes
// (cut at a rune boundary) followed by "… (N bytes)".
func String(s string) string { return cut(s, Max) }

// Bytes is String of b; it copies at most Max bytes of b, whatever its length.
func Bytes(b []byte) string {
	if len(b) <= Max {
		return string(b)
	}
	i := Max
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return string(b[:i]) + suffix(len(b))
}

// Message bounds a whole message (a reply or a log line) to MaxMessage
// bytes, the same way: a safety net behind String for messages built from
// several inputs.
func Message(s string) string { return cut(s, MaxMessage) }

func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + suffix(len(s))
}

func suffix(n int) string { return "… (" + strconv.Itoa(n) + " bytes)" }
