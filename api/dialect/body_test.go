package dialect

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLimitReader: a source of exactly N bytes reads whole; one byte more
// is the reader's Err, never a silent cut.
func TestLimitReader(t *testing.T) {
	for _, tc := range []struct {
		src     string
		n       int64
		wantErr bool
	}{{"", 0, false}, {"abc", 3, false}, {"abc", 5, false}, {"abcd", 3, true}, {"a", 0, true}} {
		lr := &LimitReader{R: strings.NewReader(tc.src), N: tc.n, Err: ErrTooLargeAsSent}
		got, err := io.ReadAll(lr)
		switch {
		case tc.wantErr && !errors.Is(err, ErrTooLargeAsSent):
			t.Errorf("%q within %d: %q, %v; want ErrTooLargeAsSent", tc.src, tc.n, got, err)
		case !tc.wantErr && (err != nil || string(got) != tc.src):
			t.Errorf("%q within %d: %q, %v; want it whole", tc.src, tc.n, got, err)
		}
	}
}

func TestOrDefault(t *testing.T) {
	a, b, c := 0, int64(-3), int64(7)
	OrDefault(&a, 5)
	OrDefault(&b, 9)
	OrDefault(&c, 9)
	if a != 5 || b != 9 || c != 7 {
		t.Fatalf("got %d %d %d, want 5 9 7 (zero and negative take the default, a set value stays)", a, b, c)
	}
}
