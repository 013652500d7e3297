package series

import (
	"encoding/binary"
	"errors"
	"fmt"

	"hourglass/chunk"
)

// A WAL record is a sequence of entries:
//
//	entry   = seriesDef | samples | delete
//	seriesDef = 0x01 ref:uvarint len:uvarint labels[len]
//	samples   = 0x02 count:uvarint (ref:uvarint tdelta:varint kind:byte bits:8 bytes LE)*count
//	delete    = 0x03 start:varint end:varint count:uvarint (len:uvarint labels[len])*count
//
// ref is a series reference local to the writing process; a segment defines
// every ref before its first use, so each segment can be read alone. tdelta
// is the timestamp minus the previous sample's in the entry (the first
// against 0). kind is 0 for a float, 1 for an integer. A delete removes
// the points of the series in [start, end] (ms) written before it.
const (
	entrySeries  = 0x01
	entrySamples = 0x02
	entryDelete  = 0x03
)

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

func appendSamplesHeader(dst []byte, n int) []byte {
	dst = append(dst, entrySamples)
	return binary.AppendUvarint(dst, uint64(n))
}

func appendSample(dst []byte, ref uint64, dt int64, v chunk.Value) []byte {
	dst = binary.AppendUvarint(dst, ref)
	dst = binary.AppendVarint(dst, dt)
	if v.IsInt() {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	return binary.LittleEndian.AppendUint64(dst, v.Bits())
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
}

// readLabels reads a length-prefixed Labels from rec.
func readLabels(rec []byte) (Labels, []byte, bool) {
	ln, n := binary.Uvarint(rec)
	if n <= 0 || uint64(len(rec)-n) < ln {
		return "", rec, false
	}
	l := Labels(rec[n : n+int(ln)])
	return l, rec[n+int(ln):], l.Valid()
}

func (d *recordDecoder) decode(rec []byte) error {
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
