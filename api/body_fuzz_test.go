package api

import (
	"bytes"
	"errors"
	"testing"

	"hourglass/api/dialect"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
)

// FuzzReadSnappy: whatever the body, readSnappy returns the block's decoding
// or a 400/413 error, never allocates more than the claim it checked, and
// gives back what it reserved.
func FuzzReadSnappy(f *testing.F) {
	f.Add(snappy.Encode(nil, []byte("hello hello hello hello")))
	f.Add(snappy.Encode(nil, bytes.Repeat([]byte{0}, 5000)))
	f.Add(lyingSnappy(60 << 20))
	f.Add(lyingSnappy(4 << 30))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		const maxDecoded = 1 << 20
		budget := newDecodeBudget(1<<30, prometheus.NewRegistry())
		res := budget.reservation()
		var out bytes.Buffer
		err := readSnappy(&dialect.LimitReader{R: bytes.NewReader(body), N: 1 << 20, Err: dialect.ErrTooLargeAsSent}, &out, 1<<20, maxDecoded, res, nil)
		res.release()
		if budget.used != 0 {
			t.Fatalf("%d bytes still reserved", budget.used)
		}
		var cl *errClaimTooLarge
		switch {
		case err == nil:
			want, derr := snappy.Decode(nil, body)
			if derr != nil || !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("decoded %d bytes where snappy says %d, %v", out.Len(), len(want), derr)
			}
			if out.Len() > maxDecoded {
				t.Fatalf("%d bytes decoded past the limit", out.Len())
			}
		case errors.As(err, &cl):
			if n, derr := snappy.DecodedLen(body); derr == nil && n <= maxDecoded {
				t.Fatalf("a claim of %d refused: %v", n, err)
			}
		case errors.Is(err, dialect.ErrBadEncoding):
			// snappy itself is asked only about claims it can afford.
			if n, derr := snappy.DecodedLen(body); derr == nil && n <= maxDecoded {
				if _, derr := snappy.Decode(nil, body); derr == nil {
					t.Fatalf("a valid block refused: %v", err)
				}
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}
