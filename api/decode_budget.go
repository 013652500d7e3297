package api

import (
	"bytes"
	"errors"
	"fmt"
	"hourglass/api/dialect"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
)

// decodeBudget bounds the bytes that request bodies being read and decoded
// hold at once, over every request: each body reserves what it allocates as
// it arrives and gives it back when its handler is done reading it. A
// request is refused (dialect.ErrDecodeBusy) when it would take the total past max,
// unless it is alone, so no body within the per-request limits is refused
// for ever. Safe for concurrent use.
type decodeBudget struct {
	max int64

	mu   sync.Mutex
	used int64

	inUse    prometheus.Gauge
	refused  prometheus.Counter
	lastFree atomic.Int64 // unix nanoseconds of the last debug.FreeOSMemory
}

// freeOSAfter is the reservation past which its release hands memory back to
// the operating system (at most once per freeOSEvery): a large body's memory
// is not kept by the process once the request is over.
const (
	freeOSAfter = 32 << 20
	freeOSEvery = 10 * time.Second
)

func newDecodeBudget(max int64, reg *prometheus.Registry) *decodeBudget {
	b := &decodeBudget{
		max: max,
		inUse: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hourglass_decoding_bytes",
			Help: "Bytes held by request bodies being read and decompressed (bounded by -max-decoding-bytes).",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hourglass_decoding_refused_total",
			Help: "Requests refused (503, or 429 for remote write) because -max-decoding-bytes was spent by others.",
		}),
	}
	if reg != nil {
		reg.MustRegister(b.inUse, b.refused)
	}
	return b
}

// reservation is what one request holds of a decodeBudget. Not safe for
// concurrent use; release it once.
type reservation struct {
	b *decodeBudget
	n int64
}

func (b *decodeBudget) reservation() *reservation { return &reservation{b: b} }

// grow reserves n more bytes, if the budget allows.
func (r *reservation) grow(n int64) bool {
	b := r.b
	b.mu.Lock()
	others := b.used - r.n
	if others > 0 && b.used+n > b.max {
		b.mu.Unlock()
		b.refused.Inc()
		return false
	}
	b.used += n
	r.n += n
	b.mu.Unlock()
	b.inUse.Add(float64(n))
	return true
}

// release gives back everything r holds.
func (r *reservation) release() {
	b, n := r.b, r.n
	if n == 0 {
		return
	}
	r.n = 0
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.inUse.Sub(float64(n))
	if n >= freeOSAfter {
		now := time.Now().UnixNano()
		if last := b.lastFree.Load(); now-last >= int64(freeOSEvery) && b.lastFree.CompareAndSwap(last, now) {
			go debug.FreeOSMemory()
		}
	}
}

// snappyMaxExpansion bounds what one compressed byte of a snappy block can
// decode to: the densest element is a copy with a 2-byte offset, 3 bytes
// for up to 64 bytes of output (literals never expand; a 1-byte-offset copy
// is 2 bytes for at most 11, a 4-byte-offset one 5 bytes for at most 64).
const snappyMaxExpansion = 22 // ≥ 64/3

// readSnappy reads a snappy block (the format remote write uses) from rd
// and decodes it into buf. The decoded length its header claims is never
// trusted for allocation: a claim past maxDecoded is refused (413) before
// the rest of the body is read, a claim the compressed bytes cannot hold
// (more than snappyMaxExpansion bytes per byte) is a bad encoding (400), and
// only then is the claim reserved from res and allocated. admit, if not
// nil, is asked with the compressed and decoded sizes before the decoded
// bytes are allocated; its error is returned as is. rd must already be
// bounded (a dialect.LimitReader) as sent.
func readSnappy(rd io.Reader, buf *bytes.Buffer, maxSent, maxDecoded int64, res *reservation, admit func(sent, decoded int64) error) error {
	claim, hdr, err := readUvarint(rd)
	if err != nil {
		return fmt.Errorf("%w: snappy: %v", dialect.ErrBadEncoding, err)
	}
	if claim > uint64(maxDecoded) {
		return &errClaimTooLarge{claim: claim, limit: maxDecoded}
	}
	comp := dialect.GetBuf()
	defer dialect.PutBuf(comp)
	comp.Write(hdr)
	if err := readGrowing(rd, comp, maxSent, dialect.ErrTooLargeAsSent, res); err != nil {
		return err
	}
	if most := uint64(comp.Len()-len(hdr)) * snappyMaxExpansion; claim > most {
		return fmt.Errorf("%w: snappy: the header claims %d bytes, more than %d compressed bytes can hold",
			dialect.ErrBadEncoding, claim, comp.Len())
	}
	if admit != nil {
		if err := admit(int64(comp.Len()), int64(claim)); err != nil {
			return err
		}
	}
	if !res.grow(int64(claim)) {
		return dialect.ErrDecodeBusy
	}
	buf.Grow(int(claim))
	out, err := snappy.Decode(buf.AvailableBuffer()[:claim], comp.Bytes())
	if err != nil {
		return fmt.Errorf("%w: snappy: %v", dialect.ErrBadEncoding, err)
	}
	buf.Write(out)
	return nil
}

// errClaimTooLarge is a snappy header claiming more than the limit: 413.
type errClaimTooLarge struct {
	claim uint64
	limit int64
}

func (e *errClaimTooLarge) Error() string {
	return fmt.Sprintf("the body decodes to %d bytes (its snappy header says), more than the limit of %d", e.claim, e.limit)
}

// readUvarint reads a varint from rd a byte at a time, and returns it with
// its bytes. An empty body is io.ErrUnexpectedEOF.
func readUvarint(rd io.Reader) (uint64, []byte, error) {
	var hdr [10]byte
	var x uint64
	for i := 0; i < len(hdr); i++ {
		if _, err := io.ReadFull(rd, hdr[i:i+1]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, err
		}
		c := hdr[i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i == 9 && c > 1 {
				break
			}
			return x, hdr[:i+1], nil
		}
	}
	return 0, nil, errors.New("the length header overflows 64 bits")
}

// readSnappy is Server.readBody's snappy case.
func (s *Server) readSnappy(rd io.Reader, buf *bytes.Buffer, maxDecoded int64, res *reservation) error {
	return readSnappy(rd, buf, s.cfg.MaxBodyBytes, maxDecoded, res, nil)
}
