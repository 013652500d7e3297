package dialect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// BodyTooLargeError is a body past a limit: the handler answers 413.
type BodyTooLargeError struct {
	What  string // which limit: "as sent", "once decompressed", ...
	Limit int64
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("request body %s is larger than the limit of %d bytes", e.What, e.Limit)
}

// The errors of reading a body (Host.BodyError answers each).
var (
	// ErrTooLargeAsSent marks a body over the limit as sent; BodyError fills in the limit.
	ErrTooLargeAsSent = errors.New("request body too large")
	// ErrBadEncoding is a body that does not decompress (400).
	ErrBadEncoding = errors.New("the request body does not decompress")
	// ErrUnsupportedEncoding is an unknown Content-Encoding (415).
	ErrUnsupportedEncoding = errors.New("unsupported Content-Encoding")
	// ErrDecodeBusy says the server's decoding budget (-max-decoding-bytes)
	// is spent by other requests: retry later.
	ErrDecodeBusy = errors.New("too many request bytes being decoded at once")
)

// LimitReader reads at most N more bytes of R and fails with Err once R
// has a byte past them, so a body cut at a limit is never taken for a
// whole one (io.LimitReader ends it silently).
type LimitReader struct {
	R   io.Reader
	N   int64 // the bytes it may still read
	Err error // what a read past the limit returns
}

func (l *LimitReader) Read(p []byte) (int, error) {
	if l.N <= 0 {
		var one [1]byte
		n, err := l.R.Read(one[:])
		if n > 0 {
			return 0, l.Err
		}
		return 0, err
	}
	if int64(len(p)) > l.N {
		p = p[:l.N]
	}
	n, err := l.R.Read(p)
	l.N -= int64(n)
	return n, err
}

// pooledBufMax is the largest buffer bufPool keeps: a buffer grown for one
// large body is dropped, not kept for ever by the pool.
const pooledBufMax = 4 << 20

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// GetBuf returns an empty buffer from a pool shared by the handlers.
func GetBuf() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// PutBuf gives a buffer back to the pool (a large one is dropped).
func PutBuf(b *bytes.Buffer) {
	if b.Cap() <= pooledBufMax {
		bufPool.Put(b)
	}
}
