// Package dialect is what the server gives the HTTP handlers of a dialect
// (api/opentsdbhttp, api/promhttp): reading request bodies within the
// server's limits and decoding budget, timing and counting requests, the
// points counter and the caller's rights. The server (package api)
// implements Host; a dialect package imports this one, never api.
package dialect

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reservation is what one request holds of the server's decoding budget.
// Not safe for concurrent use; Release it once.
type Reservation interface {
	// Grow reserves n more bytes, if the budget allows.
	Grow(n int64) bool
	// Release gives back everything the reservation holds.
	Release()
}

// Host is the server a dialect's handlers are mounted on.
type Host interface {
	// ReadBody reads a request body into buf, decompressing it by its
	// Content-Encoding within the server's limits and decoding budget.
	ReadBody(r *http.Request, buf *bytes.Buffer) error
	// ReadSnappy decodes a snappy block (remote write's and read's body)
	// from rd into buf: at most maxSent bytes as sent and maxDecoded
	// decoded, the decoded bytes reserved from res. admit, if not nil, is
	// asked with both sizes before the decoded bytes are allocated; its
	// error is returned as is.
	ReadSnappy(rd io.Reader, buf *bytes.Buffer, maxSent, maxDecoded int64, res Reservation, admit func(sent, decoded int64) error) error
	// BodyError turns a ReadBody or ReadSnappy error into a status and message.
	BodyError(err error) (int, string)
	// Reserve starts a reservation of the decoding budget.
	Reserve() Reservation
	// Timed counts and times the requests of a route, and logs its rejections.
	Timed(route string, h http.HandlerFunc) http.HandlerFunc
	// Points counts points received by dialect and outcome.
	Points(dialect, outcome string) prometheus.Counter
	// MayDelete reports whether the request may delete points.
	MayDelete(r *http.Request) bool
	// Addr is the address the server listens on (nil before Serve).
	Addr() net.Addr
	// VersionInfo is the build's version, as OpenTSDB's /api/version reports it.
	VersionInfo() map[string]string
}

// OrDefault sets *v to d when *v is not positive: the fill of a
// configuration's limits, where 0 means the default.
func OrDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
