package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"hourglass/chunk"
	"hourglass/series"
)

// The peer protocol's bodies are binary (the content type is ContentType):
//
//	snapshot request: magic "HGS1" | start varint | end varint |
//	                  max points uvarint | n uvarint | n × (len uvarint | Labels bytes)
//	snapshot reply:   magic "HGR1" | n uvarint | n × series
//	series:           count uvarint | count × point
//	point:            t − previous t (the first: − start) varint | kind byte |
//	                  value (kind 0: int64 varint; kind 1: float64 bits, 8 bytes LE)
//	delete request:   magic "HGD1" | start varint | end varint | n uvarint | n × Labels
//
// Replies list the series in the request's order. Decoders check every
// length against what is left of the body before they allocate, so a body
// of n bytes never costs more than a small multiple of n.

// ContentType is the peer protocol's media type.
const ContentType = "application/x-hourglass-peer"

var (
	magicSnapshot = []byte("HGS1")
	magicReply    = []byte("HGR1")
	magicDelete   = []byte("HGD1")
)

// errMalformed marks a body that does not decode.
var errMalformed = errors.New("cluster: malformed peer message")

// SnapshotRequest asks a peer for its head's points of Series in [Start, End].
type SnapshotRequest struct {
	Start, End int64
	// MaxPoints bounds the reply: a peer with more answers an error (0: no bound).
	MaxPoints uint64
	Series    []series.Labels
}

// DeleteRequest asks a peer to delete the points of Series in [Start, End].
type DeleteRequest struct {
	Start, End int64
	Series     []series.Labels
}

func appendLabelsList(b []byte, ls []series.Labels) []byte {
	b = binary.AppendUvarint(b, uint64(len(ls)))
	for _, l := range ls {
		b = binary.AppendUvarint(b, uint64(len(l)))
		b = append(b, l...)
	}
	return b
}

// AppendSnapshotRequest appends the encoding of r to b.
func AppendSnapshotRequest(b []byte, r *SnapshotRequest) []byte {
	b = append(b, magicSnapshot...)
	b = binary.AppendVarint(b, r.Start)
	b = binary.AppendVarint(b, r.End)
	b = binary.AppendUvarint(b, r.MaxPoints)
	return appendLabelsList(b, r.Series)
}

// AppendDeleteRequest appends the encoding of r to b.
func AppendDeleteRequest(b []byte, r *DeleteRequest) []byte {
	b = append(b, magicDelete...)
	b = binary.AppendVarint(b, r.Start)
	b = binary.AppendVarint(b, r.End)
	return appendLabelsList(b, r.Series)
}

// decoder reads a body, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformed, what)
	}
}

func (d *decoder) magic(m []byte) {
	if len(d.b) < len(m) || string(d.b[:len(m)]) != string(m) {
		d.fail("not a " + string(m) + " body")
		return
	}
	d.b = d.b[len(m):]
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items that take at least min bytes each.
func (d *decoder) count(what string, min int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail(what + " past the end of the body")
		return 0
	}
	return int(n)
}

func (d *decoder) labelsList() []series.Labels {
	n := d.count("series count", 1)
	if d.err != nil {
		return nil
	}
	out := make([]series.Labels, 0, n)
	for range n {
		l := d.uvarint("labels length")
		if d.err != nil {
			return nil
		}
		if l > uint64(len(d.b)) {
			d.fail("labels past the end of the body")
			return nil
		}
		ls := series.Labels(d.b[:l])
		if !ls.Valid() {
			d.fail("malformed labels")
			return nil
		}
		out = append(out, ls)
		d.b = d.b[l:]
	}
	return out
}

func (d *decoder) done() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

// DecodeSnapshotRequest decodes a snapshot request.
func DecodeSnapshotRequest(b []byte) (*SnapshotRequest, error) {
	d := decoder{b: b}
	d.magic(magicSnapshot)
	r := &SnapshotRequest{Start: d.varint("start"), End: d.varint("end"), MaxPoints: d.uvarint("max points")}
	r.Series = d.labelsList()
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeDeleteRequest decodes a delete request.
func DecodeDeleteRequest(b []byte) (*DeleteRequest, error) {
	d := decoder{b: b}
	d.magic(magicDelete)
	r := &DeleteRequest{Start: d.varint("start"), End: d.varint("end")}
	r.Series = d.labelsList()
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
}

// AppendReplyStart appends a reply's header for n series to b; the series
// follow, each with AppendReplySeries.
func AppendReplyStart(b []byte, n int) []byte {
	b = append(b, magicReply...)
	return binary.AppendUvarint(b, uint64(n))
}

// AppendReplySeries appends one series' points (sorted) to b; start is the
// request's.
func AppendReplySeries(b []byte, start int64, pts []chunk.Point) []byte {
	b = binary.AppendUvarint(b, uint64(len(pts)))
	prev := start
	for _, p := range pts {
		b = binary.AppendVarint(b, p.T-prev)
		prev = p.T
		if p.V.IsInt() {
			b = append(b, 0)
			b = binary.AppendVarint(b, p.V.Int())
		} else {
			b = append(b, 1)
			b = binary.LittleEndian.AppendUint64(b, p.V.Bits())
		}
	}
	return b
}

// DecodeReply decodes a snapshot reply to a request of n series starting
// at start: each series' points, sorted as sent. A reply with more than
// maxPoints points in all (0: no bound) is an error wrapping errTooMany.
func DecodeReply(b []byte, n int, start int64, maxPoints uint64) ([][]chunk.Point, error) {
	d := decoder{b: b}
	d.magic(magicReply)
	if got := d.uvarint("series count"); d.err == nil && got != uint64(n) {
		return nil, fmt.Errorf("%w: %d series in the reply, %d asked", errMalformed, got, n)
	}
	out := make([][]chunk.Point, n)
	var total uint64
	for i := 0; i < n && d.err == nil; i++ {
		// A point takes at least 3 bytes (delta, kind, value).
		c := d.count("point count", 3)
		if d.err != nil {
			break
		}
		total += uint64(c)
		if maxPoints > 0 && total > maxPoints {
			return nil, fmt.Errorf("%w: more than %d points", errTooMany, maxPoints)
		}
		pts := make([]chunk.Point, 0, c)
		t := start
		for range c {
			delta := d.varint("timestamp")
			if d.err != nil {
				break
			}
			if (delta > 0 && t > math.MaxInt64-delta) || (delta < 0 && t < math.MinInt64-delta) {
				d.fail("timestamp overflow")
				break
			}
			t += delta
			if len(d.b) == 0 {
				d.fail("value kind")
				break
			}
			kind := d.b[0]
			d.b = d.b[1:]
			var v chunk.Value
			switch kind {
			case 0:
				v = chunk.Int(d.varint("int value"))
			case 1:
				if len(d.b) < 8 {
					d.fail("float value")
					break
				}
				v = chunk.FloatBits(binary.LittleEndian.Uint64(d.b))
				d.b = d.b[8:]
			default:
				d.fail("value kind")
			}
			if d.err != nil {
				break
			}
			pts = append(pts, chunk.Point{T: t, V: v})
		}
		out[i] = pts
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return out, nil
}

// errTooMany marks a reply past the points bound.
var errTooMany = errors.New("cluster: peer reply too large")
