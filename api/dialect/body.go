package dialect

import (
	"bytes"
	"errors"
	"fmt"
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
