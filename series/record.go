package series

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"hourglass/chunk"
)

// A WAL record is a sequence of entries:
//
//	entry   = seriesDef | samples | deltaSamples | stateSamples | delete
//	seriesDef = 0x01 ref:uvarint len:uvarint labels[len]
//	samples   = 0x02 count:uvarint (ref:uvarint tdelta:varint kind:byte bits:8 bytes LE)*count
//	deltaSamples = 0x06 count:uvarint sample*count (sampleEncoder)
//	stateSamples = 0x07 count:uvarint sample*count (stateEncoder, record_state.go)
//	delete    = 0x03 start:varint end:varint count:uvarint (len:uvarint labels[len])*count
//
// ref is a series reference local to the writing process; a segment defines
// every ref before its first use, so each segment can be read alone. tdelta
// is the timestamp minus the previous sample's in the entry (the first
// against 0). kind is 0 for a float, 1 for an integer. A delete removes
// the points of the series in [start, end] (ms) written before it.
// The head writes stateSamples; deltaSamples (written before it) and
// samples (format 1) are still read, so older segments replay.
const (
	entrySeries       = 0x01
	entrySamples      = 0x02
	entryDelete       = 0x03
	entryDeltaSamples = 0x06
)

// The value kinds of a deltaSamples sample (the low 7 bits of its head
// byte). "Chained" means the previous sample of the entry has the same ref.
const (
	kindFloat      = 0x00 // 8 bytes LE: the float64 bits
	kindInt        = 0x01 // zigzag uvarint: the int64, or its difference from the previous int when chained
	kindDecimal0   = 0x02 // 0x02+e, e in 0..15: zigzag uvarint of m (or of m minus the previous m of the same kind when chained); the value is float64(m)/10^e
	kindDecimalMax = kindDecimal0 + 15
	kindFloatXOR0  = 0x20 // 0x20+n, n in 0..8: the bits XOR the previous float's bits (chained only), n bytes LE
	kindFloatXORn  = kindFloatXOR0 + 8
	flagSameStep   = 0x80 // head bit: same ref as the previous sample, timestamp previous + previous delta; no ref or time field
)

var walPow10 = [16]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// walDecimalTries is how many scales an unchained float is tried at (0..5)
// before it is written as bits: a collector's decimals rarely have more,
// and each try costs a multiplication and a division.
const walDecimalTries = 6

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// walDecimal returns m such that float64(m)/10^e has the bits v, if there is one.
func walDecimal(v uint64, e int) (int64, bool) {
	x := math.Float64frombits(v) * walPow10[e]
	if !(x >= -(1<<53) && x <= 1<<53) { // NaN fails too
		return 0, false
	}
	m := int64(math.Round(x))
	return m, math.Float64bits(float64(m)/walPow10[e]) == v
}

// sampleEncoder writes the samples of one deltaSamples entry. Each sample
// is a head byte (flagSameStep | value kind), then, without flagSameStep,
// zigzag uvarints of ref minus the previous ref and of (t minus the previous
// t) minus the previous such difference (all 0 before the first sample),
// then the value as its kind says. A series' run of samples in a request
// (the usual order) thus costs a head byte and its value's change per
// sample. The zero value starts an entry.
type sampleEncoder struct {
	n     int
	ref   uint64
	t, dt int64
	kind  byte
	m     int64 // the int, or the decimal mantissa, of the previous sample
	bits  uint64
}

// append appends one sample to dst.
func (e *sampleEncoder) append(dst []byte, ref uint64, t int64, v chunk.Value) []byte {
	chained := e.n > 0 && ref == e.ref
	dt := t - e.t
	kind, m := e.valueKind(chained, v)
	head := len(dst)
	dst = append(dst, kind)
	if ref == e.ref && dt == e.dt {
		dst[head] |= flagSameStep
	} else {
		dst = binary.AppendUvarint(dst, zigzag(int64(ref-e.ref)))
		dst = binary.AppendUvarint(dst, zigzag(dt-e.dt))
	}
	dst = appendSampleValue(dst, kind, v, m, e.bits, uint64(e.m), chained && kind == e.kind)
	e.n++
	e.ref, e.t, e.dt = ref, t, dt
	e.kind, e.m, e.bits = kind, m, v.Bits()
	return dst
}

// valueKind picks v's kind: an int; a float as a decimal at the previous
// sample's scale when chained to one, else at the smallest of the first
// walDecimalTries scales; else XOR against a chained float; else its bits.
func (e *sampleEncoder) valueKind(chained bool, v chunk.Value) (byte, int64) {
	if v.IsInt() {
		return kindInt, int64(v.Bits())
	}
	prevFloat := e.kind == kindFloat || e.kind >= kindFloatXOR0
	if chained && e.kind >= kindDecimal0 && e.kind <= kindDecimalMax {
		if m, ok := walDecimal(v.Bits(), int(e.kind-kindDecimal0)); ok {
			return e.kind, m
		}
	}
	if !chained || !prevFloat {
		for s := 0; s < walDecimalTries; s++ {
			if m, ok := walDecimal(v.Bits(), s); ok {
				return kindDecimal0 + byte(s), m
			}
		}
	}
	if chained && prevFloat {
		return kindFloatXOR0 + byte((64-bits.LeadingZeros64(v.Bits()^e.bits)+7)/8), 0
	}
	return kindFloat, 0
}

// sampleDecoder reads the samples of one deltaSamples entry; the zero
// value starts an entry.
type sampleDecoder struct {
	n     int
	ref   uint64
	t, dt int64
	kind  byte
	m     int64
	bits  uint64
}

// next decodes one sample from rec and returns the rest.
func (d *sampleDecoder) next(rec []byte) (walSample, []byte, error) {
	if len(rec) == 0 {
		return walSample{}, rec, fmt.Errorf("%w: sample cut short", ErrBadRecord)
	}
	head := rec[0]
	rec = rec[1:]
	kind := head &^ flagSameStep
	ref, dt := d.ref, d.dt
	if head&flagSameStep == 0 {
		dr, n := binary.Uvarint(rec)
		if n <= 0 {
			return walSample{}, rec, fmt.Errorf("%w: sample ref", ErrBadRecord)
		}
		rec = rec[n:]
		ddt, n := binary.Uvarint(rec)
		if n <= 0 {
			return walSample{}, rec, fmt.Errorf("%w: sample time", ErrBadRecord)
		}
		rec = rec[n:]
		ref = d.ref + uint64(unzigzag(dr))
		dt = d.dt + unzigzag(ddt)
	}
	chained := d.n > 0 && ref == d.ref
	var v chunk.Value
	var m int64
	var vbits uint64
	switch {
	case kind == kindFloat:
		if len(rec) < 8 {
			return walSample{}, rec, fmt.Errorf("%w: sample value", ErrBadRecord)
		}
		vbits = binary.LittleEndian.Uint64(rec)
		rec = rec[8:]
		v = chunk.FloatBits(vbits)
	case kind >= kindFloatXOR0 && kind <= kindFloatXORn:
		nb := int(kind - kindFloatXOR0)
		if !chained || !(d.kind == kindFloat || d.kind >= kindFloatXOR0) || len(rec) < nb {
			return walSample{}, rec, fmt.Errorf("%w: sample value", ErrBadRecord)
		}
		var x8 [8]byte
		copy(x8[:], rec[:nb])
		x := binary.LittleEndian.Uint64(x8[:])
		rec = rec[nb:]
		vbits = d.bits ^ x
		v = chunk.FloatBits(vbits)
	case kind == kindInt || (kind >= kindDecimal0 && kind <= kindDecimalMax):
		u, n := binary.Uvarint(rec)
		if n <= 0 {
			return walSample{}, rec, fmt.Errorf("%w: sample value", ErrBadRecord)
		}
		rec = rec[n:]
		m = unzigzag(u)
		if chained && kind == d.kind {
			m = int64(uint64(d.m) + uint64(m))
		}
		if kind == kindInt {
			v = chunk.Int(m)
		} else {
			v = chunk.Float(float64(m) / walPow10[kind-kindDecimal0])
		}
		vbits = v.Bits()
	default:
		return walSample{}, rec, fmt.Errorf("%w: sample kind %#x", ErrBadRecord, kind)
	}
	d.n++
	d.t += dt
	d.ref, d.dt = ref, dt
	d.kind, d.m, d.bits = kind, m, vbits
	return walSample{ref: ref, t: d.t, v: v}, rec, nil
}

// ErrBadRecord is returned for a WAL record that does not decode.
var ErrBadRecord = errors.New("series: malformed wal record")

// walSample is one sample of a WAL record.
type walSample struct {
	ref uint64
	t   int64
	v   chunk.Value
}

func appendSeriesDef(dst []byte, ref uint64, l Labels) []byte {
	dst = append(dst, entrySeries)
	dst = binary.AppendUvarint(dst, ref)
	dst = binary.AppendUvarint(dst, uint64(len(l)))
	return append(dst, l...)
}

// appendSamplesHeader starts a deltaSamples entry of n samples, each to be
// written by one sampleEncoder.
func appendSamplesHeader(dst []byte, n int) []byte {
	dst = append(dst, entryDeltaSamples)
	return binary.AppendUvarint(dst, uint64(n))
}

func appendDelete(dst []byte, start, end int64, ls []Labels) []byte {
	dst = append(dst, entryDelete)
	dst = binary.AppendVarint(dst, start)
	dst = binary.AppendVarint(dst, end)
	dst = binary.AppendUvarint(dst, uint64(len(ls)))
	for _, l := range ls {
		dst = binary.AppendUvarint(dst, uint64(len(l)))
		dst = append(dst, l...)
	}
	return dst
}

// recordDecoder walks the entries of one record.
type recordDecoder struct {
	onSeries   func(ref uint64, l Labels) error
	onSample   func(s walSample) error
	onDelete   func(start, end int64, ls []Labels) error
	onHist     func(ref uint64, p chunk.HistPoint) error // histogram.go; nil skips them
	onExemplar func(ref uint64, e Exemplar) error        // exemplar.go; nil skips them
	// state holds the series' states of stateSamples entries within a
	// segment; newSegment forgets them (record_state.go).
	state stateDecoder
}

// newSegment tells the decoder that the next record starts a new segment.
func (d *recordDecoder) newSegment() { d.state.newSegment() }

// readLabels reads a length-prefixed Labels from rec.
func readLabels(rec []byte) (Labels, []byte, bool) {
	ln, n := binary.Uvarint(rec)
	if n <= 0 || uint64(len(rec)-n) < ln {
		return "", rec, false
	}
	l := Labels(rec[n : n+int(ln)])
	return l, rec[n+int(ln):], l.Valid()
}

// decode walks the entries of rec. A record that does not decode leaves
// the states of its segment unknown: the segment's later series-state
// samples are refused (stateDecoder.broken).
func (d *recordDecoder) decode(rec []byte) error {
	err := d.entries(rec)
	if err != nil {
		d.state.broken = true
	}
	return err
}

func (d *recordDecoder) entries(rec []byte) error {
	for len(rec) > 0 {
		typ := rec[0]
		rec = rec[1:]
		switch typ {
		case entryHistograms: // histogram.go
			rest, err := decodeHistograms(rec, d.onHist)
			if err != nil {
				return err
			}
			rec = rest
		case entryExemplars: // exemplar.go
			rest, err := decodeExemplars(rec, d.onExemplar)
			if err != nil {
				return err
			}
			rec = rest
		case entrySeries:
			ref, n := binary.Uvarint(rec)
			if n <= 0 {
				return fmt.Errorf("%w: series ref", ErrBadRecord)
			}
			l, rest, ok := readLabels(rec[n:])
			if !ok {
				return fmt.Errorf("%w: series labels", ErrBadRecord)
			}
			rec = rest
			if err := d.onSeries(ref, l); err != nil {
				return err
			}
		case entrySamples:
			cnt, n := binary.Uvarint(rec)
			if n <= 0 || cnt > uint64(len(rec)) {
				return fmt.Errorf("%w: sample count", ErrBadRecord)
			}
			rec = rec[n:]
			var t int64
			for i := uint64(0); i < cnt; i++ {
				ref, n := binary.Uvarint(rec)
				if n <= 0 {
					return fmt.Errorf("%w: sample ref", ErrBadRecord)
				}
				rec = rec[n:]
				dt, n := binary.Varint(rec)
				if n <= 0 || len(rec) < n+9 {
					return fmt.Errorf("%w: sample", ErrBadRecord)
				}
				t += dt
				kind := rec[n]
				bits := binary.LittleEndian.Uint64(rec[n+1:])
				rec = rec[n+9:]
				var v chunk.Value
				switch kind {
				case 0:
					v = chunk.FloatBits(bits)
				case 1:
					v = chunk.Int(int64(bits))
				default:
					return fmt.Errorf("%w: sample kind %d", ErrBadRecord, kind)
				}
				if err := d.onSample(walSample{ref: ref, t: t, v: v}); err != nil {
					return err
				}
			}
		case entryStateSamples: // record_state.go
			rest, err := d.state.entry(rec, d.onSample)
			if err != nil {
				return err
			}
			rec = rest
		case entryDeltaSamples:
			cnt, n := binary.Uvarint(rec)
			if n <= 0 || cnt > uint64(len(rec)) {
				return fmt.Errorf("%w: sample count", ErrBadRecord)
			}
			rec = rec[n:]
			var sd sampleDecoder
			for i := uint64(0); i < cnt; i++ {
				smp, rest, err := sd.next(rec)
				if err != nil {
					return err
				}
				rec = rest
				if err := d.onSample(smp); err != nil {
					return err
				}
			}
		case entryDelete:
			start, n := binary.Varint(rec)
			if n <= 0 {
				return fmt.Errorf("%w: delete start", ErrBadRecord)
			}
			rec = rec[n:]
			end, n := binary.Varint(rec)
			if n <= 0 {
				return fmt.Errorf("%w: delete end", ErrBadRecord)
			}
			rec = rec[n:]
			cnt, n := binary.Uvarint(rec)
			if n <= 0 || cnt > uint64(len(rec)) {
				return fmt.Errorf("%w: delete series count", ErrBadRecord)
			}
			rec = rec[n:]
			ls := make([]Labels, 0, cnt)
			for i := uint64(0); i < cnt; i++ {
				l, rest, ok := readLabels(rec)
				if !ok {
					return fmt.Errorf("%w: delete labels", ErrBadRecord)
				}
				ls = append(ls, l)
				rec = rest
			}
			if d.onDelete != nil {
				if err := d.onDelete(start, end, ls); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%w: entry type %d", ErrBadRecord, typ)
		}
	}
	return nil
}

// appendSampleValue appends the value of a sample of the given kind (as
// valueKind chose it, m its mantissa): a float's bits; their XOR with the
// previous float's bits prevBits, cut to the kind's bytes; the mantissa's
// difference from the previous one, prevM, when delta (chained to a sample
// of the same kind); or the mantissa itself.
func appendSampleValue(dst []byte, kind byte, v chunk.Value, m int64, prevBits, prevM uint64, delta bool) []byte {
	switch {
	case kind == kindFloat:
		return binary.LittleEndian.AppendUint64(dst, v.Bits())
	case kind >= kindFloatXOR0:
		dst = binary.LittleEndian.AppendUint64(dst, v.Bits()^prevBits)
		return dst[:len(dst)-8+int(kind-kindFloatXOR0)]
	case delta:
		return binary.AppendUvarint(dst, zigzag(int64(uint64(m)-prevM)))
	default:
		return binary.AppendUvarint(dst, zigzag(m))
	}
}
