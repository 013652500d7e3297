package quote

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{"short", "sys.cpu", "sys.cpu"},
		{"exactly max", strings.Repeat("a", Max), strings.Repeat("a", Max)},
		{"one past", strings.Repeat("a", Max+1), strings.Repeat("a", Max) + "… (201 bytes)"},
		{"1 MB", strings.Repeat("m", 1<<20), strings.Repeat("m", Max) + "… (1048576 bytes)"},
		// "é" is 2 bytes: the cut lands inside a rune at byte Max and backs off.
		{"rune boundary", "a" + strings.Repeat("é", Max), "a" + strings.Repeat("é", (Max-1)/2) + "… (401 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in)
			if got != tc.want {
				t.Fatalf("String: got %q (%d bytes), want %q", got[:min(len(got), 40)], len(got), tc.want[:min(len(tc.want), 40)])
			}
			if !utf8.ValidString(got) {
				t.Fatalf("String cut a rune: %q", got)
			}
			if b := Bytes([]byte(tc.in)); b != got {
				t.Fatalf("Bytes differs from String: %q vs %q", b, got)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	if got := Message("short"); got != "short" {
		t.Fatalf("got %q", got)
	}
	got := Message(strings.Repeat("x", 5000))
	if len(got) > MaxMessage+32 || !strings.HasSuffix(got, "(5000 bytes)") {
		t.Fatalf("got %d bytes ending %q", len(got), got[len(got)-20:])
	}
}
