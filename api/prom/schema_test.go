package prom

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The Label schema's shortcut in check accepts and rejects exactly what
// the field-by-field lookup does, with the same errors.
func TestLabelCheckShortcut(t *testing.T) {
	generic := &schema{labelSchema.name, labelSchema.fields} // not labelSchema: the long way
	cases := [][]byte{
		nil,
		rawLabel("__name__", "up"),
		append(rawLabel("a", "b"), 0x1a, 1, 'x'), // an unknown string field
		append(rawLabel("a", "b"), 0x18, 5),      // an unknown varint field
		{0x0a, 5, 'a'},                           // truncated
		{0x02, 1, 'a'},                           // field 0
		{0x08, 1},                                // field 1 as a varint
		{0x82, 0x01, 1, 'a'},                     // a two-byte key (field 16)
		{0x0a, 0x80},                             // a truncated length
		append([]byte{0x0a, 0x80, 0x01}, make([]byte, 128)...), // a two-byte length
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(4))<<3 | byte(r.IntN(8)) // small keys and lengths
			if r.IntN(3) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		got, want := fmt.Sprint(labelSchema.check(b, 7)), fmt.Sprint(generic.check(b, 7))
		if got != want {
			t.Fatalf("% x: %s, the long way %s", b, got, want)
		}
	}
}
