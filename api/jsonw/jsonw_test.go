package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\n\r\t\b\f\x00\x1f", "<a&b>", "\u2028\u2029", "bad \xff utf8", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s) // encoding/json escapes HTML
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q, html) = %s, encoding/json writes %s", s, got, want)
		}
		plain := AppendString(nil, s, false)
		var back, back2 string
		if err := json.Unmarshal(plain, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s is not JSON: %v", s, plain, err)
		}
		_ = json.Unmarshal(want, &back2)
		if back != back2 {
			t.Fatalf("AppendString(%q) reads back as %q, encoding/json's as %q", s, back, back2)
		}
	})
}
