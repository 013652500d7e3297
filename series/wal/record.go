package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/s2"
)

// The on-disk format; docs/format/wal.md has the byte diagram.
//
//	segment = magic "HGWL" [4] | version [1] | reserved [3] | record*
//	record  = kind [1] | length [4] uint32 BE | crc [4] uint32 BE | payload [length]
//
// crc is CRC32-Castagnoli over kind, length and payload, so an all-zero
// header never checks out. kind says how the payload is stored.
const (
	segmentHeaderSize = 8
	recordHeaderSize  = 9
	formatVersion     = 1

	kindRaw byte = 1 // payload stored as is
	kindS2  byte = 2 // payload is an s2 block (github.com/klauspost/compress/s2)
)

// MaxRecordSize is the largest record Append accepts, in bytes before
// compression. Replay treats a record claiming more as damage.
const MaxRecordSize = 1 << 30

var segmentMagic = [4]byte{'H', 'G', 'W', 'L'}

// castagnoli is the CRC32-C table; it is computed once and never changes.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	// ErrClosed is returned by the methods of a closed Log.
	ErrClosed = errors.New("wal: log closed")
	// ErrRecordTooLarge is returned by Append for a record over MaxRecordSize.
	ErrRecordTooLarge = errors.New("wal: record too large")
	// ErrUnsupportedVersion is returned by Replay for a segment written in a
	// format version this build does not read (a newer hourglass wrote it).
	// It is not damage: the segment is left alone.
	ErrUnsupportedVersion = errors.New("wal: unsupported segment format version")
)

// What a CorruptionError can wrap.
var (
	errTornSegmentHeader = errors.New("segment header cut short")
	errBadMagic          = errors.New("bad segment magic")
	errTorn              = errors.New("record cut short")
	errZeroed            = errors.New("zeroed bytes where a record should start")
	errBadKind           = errors.New("unknown record kind")
	errBadLength         = errors.New("record length over the limit")
	errChecksum          = errors.New("checksum mismatch")
	errDecompress        = errors.New("payload does not decompress")
)

// CorruptionError is damage found in a segment: the records before Offset
// are intact, the bytes from Offset on are not. Replay truncates the
// segment at Offset. Find it with errors.As; it unwraps to the cause.
type CorruptionError struct {
	File    string // path of the segment file
	Segment int    // segment number
	Offset  int64  // offset of the first damaged byte: the start of the bad record
	Err     error  // what was wrong
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in segment %d (%s) at offset %d: %v", e.Segment, e.File, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// appendSegmentHeader appends the header that starts every segment.
func appendSegmentHeader(dst []byte) []byte {
	dst = append(dst, segmentMagic[:]...)
	return append(dst, formatVersion, 0, 0, 0)
}

// putRecordHeader fills h[:recordHeaderSize] for payload stored as kind.
func putRecordHeader(h []byte, kind byte, payload []byte) {
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:5], uint32(len(payload)))
	binary.BigEndian.PutUint32(h[5:9], recordCRC(h[:5], payload))
}

func recordCRC(kindAndLength, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(kindAndLength, castagnoli), castagnoli, payload)
}

// appendRecord appends one framed record; the log itself frames in place.
func appendRecord(dst []byte, kind byte, payload []byte) []byte {
	var h [recordHeaderSize]byte
	putRecordHeader(h[:], kind, payload)
	return append(append(dst, h[:]...), payload...)
}

// maxStoredSize bounds the length field: an s2 block of MaxRecordSize bytes
// may be slightly longer than its input.
var maxStoredSize = int64(s2.MaxEncodedLen(MaxRecordSize))

// segmentReader reads the records of one segment in order. It stops at the
// first damage (a *CorruptionError in err) or read error. It is reused
// across segments to keep its buffers.
type segmentReader struct {
	br   *bufio.Reader
	file string
	seg  int
	size int64
	off  int64 // offset of the next record
	hdr  [recordHeaderSize]byte
	buf  []byte // stored payload
	dec  []byte // decompressed payload
	rec  []byte // the current record
	err  error
}

func (r *segmentReader) reset(f io.ReaderAt, file string, seg int, size int64) {
	src := io.NewSectionReader(f, 0, size)
	if want := int(min(max(size, 4<<10), 1<<20)); r.br == nil || r.br.Size() < want {
		r.br = bufio.NewReaderSize(src, want)
	} else {
		r.br.Reset(src)
	}
	r.file, r.seg, r.size, r.off = file, seg, size, 0
	r.rec, r.err = nil, nil
}

func (r *segmentReader) corrupt(off int64, err error) bool {
	r.err = &CorruptionError{File: r.file, Segment: r.seg, Offset: off, Err: err}
	return false
}

func (r *segmentReader) read(p []byte) bool {
	if _, err := io.ReadFull(r.br, p); err != nil {
		// Everything read lies within the size taken at the start: running
		// out means the file shrank under us, which is not damage.
		r.err = fmt.Errorf("wal: read %s: %w", r.file, err)
		return false
	}
	return true
}

// next reads the next intact record into r.rec, valid until the next call.
// It returns false at the end of the segment or at the first damage.
func (r *segmentReader) next() bool {
	if r.err != nil {
		return false
	}
	if r.off == 0 {
		if r.size == 0 {
			return false // created but never written to: an empty segment
		}
		if r.size < segmentHeaderSize {
			return r.corrupt(0, errTornSegmentHeader)
		}
		var h [segmentHeaderSize]byte
		if !r.read(h[:]) {
			return false
		}
		if [4]byte(h[:4]) != segmentMagic {
			return r.corrupt(0, errBadMagic)
		}
		if h[4] != formatVersion {
			r.err = fmt.Errorf("%w: %s has version %d, this build reads version %d",
				ErrUnsupportedVersion, r.file, h[4], formatVersion)
			return false
		}
		r.off = segmentHeaderSize
	}
	left := r.size - r.off
	if left == 0 {
		return false
	}
	if left < recordHeaderSize {
		if !r.read(r.hdr[:left]) {
			return false
		}
		if allZero(r.hdr[:left]) {
			return r.corrupt(r.off, errZeroed)
		}
		return r.corrupt(r.off, fmt.Errorf("%w: %d bytes left, a record header takes %d", errTorn, left, recordHeaderSize))
	}
	if !r.read(r.hdr[:]) {
		return false
	}
	kind := r.hdr[0]
	n := int64(binary.BigEndian.Uint32(r.hdr[1:5]))
	switch {
	case kind == 0:
		return r.corrupt(r.off, errZeroed)
	case kind != kindRaw && kind != kindS2:
		return r.corrupt(r.off, fmt.Errorf("%w %#x", errBadKind, kind))
	case n > maxStoredSize:
		return r.corrupt(r.off, fmt.Errorf("%w: %d bytes", errBadLength, n))
	case n > left-recordHeaderSize:
		return r.corrupt(r.off, fmt.Errorf("%w: length %d, %d bytes left in the segment", errTorn, n, left-recordHeaderSize))
	}
	if int64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	payload := r.buf[:n]
	if !r.read(payload) {
		return false
	}
	if want, got := binary.BigEndian.Uint32(r.hdr[5:9]), recordCRC(r.hdr[:5], payload); want != got {
		return r.corrupt(r.off, fmt.Errorf("%w: stored %#08x, computed %#08x", errChecksum, want, got))
	}
	r.rec = payload
	if kind == kindS2 {
		// The checksum matched, so this is what the writer wrote; still, a
		// length over the limit must not make us allocate it.
		dl, err := s2.DecodedLen(payload)
		if err == nil && dl > MaxRecordSize {
			err = fmt.Errorf("decoded length %d over the limit", dl)
		}
		if err == nil {
			r.dec, err = s2.Decode(r.dec[:cap(r.dec)], payload)
		}
		if err != nil {
			return r.corrupt(r.off, fmt.Errorf("%w: %v", errDecompress, err))
		}
		r.rec = r.dec
	}
	r.off += recordHeaderSize + n
	return true
}

func allZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}
