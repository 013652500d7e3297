package series

import (
	"encoding/binary"
	"fmt"

	"hourglass/chunk"
)

// entryStateSamples (0x07) codes each sample against the previous sample of
// its own series in the same WAL segment, whichever record that was in,
// where deltaSamples (0x06) codes it against the previous sample of the
// entry. A request carries a few points of each of many series, so most
// series' runs in an entry are short: 0x06 pays a full mantissa, a
// timestamp and a head byte at the start of each run; 0x07 pays a
// difference from the series' last point, and a series' regular step of
// ints or decimals costs one varint a point, with no head byte
// (docs/format/wal.md, "Series-state samples").
//
// The state is valid within one segment: the writer keeps it per series
// beside the segment that wrote it (walState, guarded by the WAL's lock, as
// walSeg), and replay per ref, cleared at each new segment. Replay reads a
// segment's records in order and stops at the first damage (series/wal), a
// record the log failed to write voids its segment for the writer, and a
// Log never appends to a segment it did not create: so every record replay
// decodes follows, in the same segment, every record whose state it uses.
const entryStateSamples = 0x07

// The value codes of a stateSamples sample, in its long form.
const (
	stateXOR0    = 0  // 0..8: the bits XOR the series' previous float's bits, that many bytes LE
	stateFloat   = 9  // 8 bytes LE: the float64 bits
	stateInt     = 10 // zigzag uvarint of the int, or of its difference from the series' previous int
	stateDecimal = 11 // 11+e, e in 0..15: zigzag uvarint of the mantissa, or of its difference from the series' previous one at the same e
	stateCodes   = stateDecimal + 16
)

// stateCode maps a value kind of sampleEncoder to its stateSamples code.
func stateCode(kind byte) byte {
	switch {
	case kind == kindFloat:
		return stateFloat
	case kind == kindInt:
		return stateInt
	case kind >= kindFloatXOR0:
		return stateXOR0 + (kind - kindFloatXOR0)
	}
	return stateDecimal + (kind - kindDecimal0)
}

// stateKind is stateCode's inverse (code < stateCodes).
func stateKind(code byte) byte {
	switch {
	case code == stateFloat:
		return kindFloat
	case code == stateInt:
		return kindInt
	case code >= stateDecimal:
		return kindDecimal0 + (code - stateDecimal)
	}
	return kindFloatXOR0 + code
}

// walState is what a series' next stateSamples sample is coded against:
// its previous sample in the segment. kind is in sampleEncoder's numbering.
type walState struct {
	t, dt int64
	// v is the int or the decimal mantissa for those kinds (as uint64),
	// the float64 bits for the others.
	v    uint64
	seg  int32 // the writer's: the segment the state belongs to
	kind byte
	has  bool // a sample of the series is in the segment: the rest is its state
}

// isMantissa reports whether kind's value is a varint mantissa (int or decimal).
func isMantissa(kind byte) bool {
	return kind == kindInt || (kind >= kindDecimal0 && kind <= kindDecimalMax)
}

// isFloatBits reports whether kind's value is float bits (raw or XOR).
func isFloatBits(kind byte) bool { return kind == kindFloat || kind >= kindFloatXOR0 }

// stateEncoder writes the samples of one stateSamples entry; the zero value
// starts an entry. Each sample is, in its short form, one uvarint
// zigzag(m − the series' previous m)<<1 | 1 (where that fits 64 bits): the same series as the
// previous sample of the entry, its timestamp the series' previous plus the
// series' previous step, its value of the series' previous kind (an int or
// a decimal at the same scale). Otherwise, the long form: a uvarint
// (code<<1 | sameStep)<<1, then, without sameStep, zigzag uvarints of ref
// minus the previous sample's ref in the entry (0 before the first) and of
// the step (t minus the series' previous t) minus the series' previous
// step, then the value as its code says. A series with no state in the
// segment is coded against zeros and no value (unchained).
type stateEncoder struct {
	n   int
	ref uint64
}

// append appends a sample of the series ref, whose state st the caller
// keeps for segment seg, to dst.
func (e *stateEncoder) append(dst []byte, st *walState, seg int, ref uint64, t int64, v chunk.Value) []byte {
	if st.seg != int32(seg) {
		*st = walState{seg: int32(seg)}
	}
	chained := st.has
	dt := t - st.t
	prev := sampleEncoder{kind: st.kind, bits: st.v}
	kind, m := prev.valueKind(chained, v)
	same := e.n > 0 && chained && ref == e.ref && dt == st.dt
	switch dz := zigzag(int64(uint64(m) - st.v)); {
	case same && kind == st.kind && isMantissa(kind) && dz < 1<<63:
		dst = binary.AppendUvarint(dst, dz<<1|1)
	default:
		h := uint64(stateCode(kind)) << 1
		if same {
			h |= 1
		}
		dst = binary.AppendUvarint(dst, h<<1)
		if !same {
			dst = binary.AppendUvarint(dst, zigzag(int64(ref-e.ref)))
			dst = binary.AppendUvarint(dst, zigzag(dt-st.dt))
		}
		dst = appendSampleValue(dst, kind, v, m, st.v, st.v, chained && kind == st.kind)
	}
	e.n++
	e.ref = ref
	st.t, st.dt, st.kind, st.has = t, dt, kind, true
	st.v = v.Bits()
	if isMantissa(kind) {
		st.v = uint64(m)
	}
	return dst
}

// stateDecoder reads stateSamples entries: states holds each ref's state
// in the segment being replayed (newSegment clears it).
type stateDecoder struct {
	states map[uint64]*walState
	// broken: a record of the segment did not decode, so the states may
	// lack what it held; later stateSamples entries of the segment are
	// refused rather than decoded against them.
	broken bool
}

// newSegment forgets the states: a new segment starts without them.
func (d *stateDecoder) newSegment() {
	clear(d.states)
	d.broken = false
}

// entry decodes one stateSamples entry (after its type byte) from rec,
// passing each sample to on, and returns the rest.
func (d *stateDecoder) entry(rec []byte, on func(walSample) error) ([]byte, error) {
	if d.broken {
		return rec, fmt.Errorf("%w: series-state samples after an undecodable record of the segment", ErrBadRecord)
	}
	if d.states == nil {
		d.states = map[uint64]*walState{}
	}
	cnt, n := binary.Uvarint(rec)
	if n <= 0 || cnt > uint64(len(rec)) {
		return rec, fmt.Errorf("%w: sample count", ErrBadRecord)
	}
	rec = rec[n:]
	var ref uint64
	var st *walState
	for i := uint64(0); i < cnt; i++ {
		u, n := binary.Uvarint(rec)
		if n <= 0 {
			return rec, fmt.Errorf("%w: sample head", ErrBadRecord)
		}
		rec = rec[n:]
		if u&1 == 1 { // short form
			if i == 0 || !st.has || !isMantissa(st.kind) {
				return rec, fmt.Errorf("%w: short sample without a state", ErrBadRecord)
			}
			st.v += uint64(unzigzag(u >> 1))
			st.t += st.dt
			if err := on(walSample{ref: ref, t: st.t, v: mantissaValue(st.kind, int64(st.v))}); err != nil {
				return rec, err
			}
			continue
		}
		h := u >> 1
		if h>>1 >= stateCodes {
			return rec, fmt.Errorf("%w: sample code %d", ErrBadRecord, h>>1)
		}
		kind := stateKind(byte(h >> 1))
		var dt int64
		if h&1 == 1 { // same step
			if i == 0 || !st.has {
				return rec, fmt.Errorf("%w: same step without a state", ErrBadRecord)
			}
			dt = st.dt
		} else {
			dr, n := binary.Uvarint(rec)
			if n <= 0 {
				return rec, fmt.Errorf("%w: sample ref", ErrBadRecord)
			}
			rec = rec[n:]
			ddt, n := binary.Uvarint(rec)
			if n <= 0 {
				return rec, fmt.Errorf("%w: sample time", ErrBadRecord)
			}
			rec = rec[n:]
			ref += uint64(unzigzag(dr))
			if st = d.states[ref]; st == nil {
				st = &walState{}
				d.states[ref] = st
			}
			dt = st.dt + unzigzag(ddt)
		}
		var sv uint64 // the new state's v
		var v chunk.Value
		switch {
		case kind == kindFloat:
			if len(rec) < 8 {
				return rec, fmt.Errorf("%w: sample value", ErrBadRecord)
			}
			sv = binary.LittleEndian.Uint64(rec)
			rec = rec[8:]
			v = chunk.FloatBits(sv)
		case kind >= kindFloatXOR0:
			nb := int(kind - kindFloatXOR0)
			if !st.has || !isFloatBits(st.kind) || len(rec) < nb {
				return rec, fmt.Errorf("%w: sample value", ErrBadRecord)
			}
			var x8 [8]byte
			copy(x8[:], rec[:nb])
			rec = rec[nb:]
			sv = st.v ^ binary.LittleEndian.Uint64(x8[:])
			v = chunk.FloatBits(sv)
		default:
			u, n := binary.Uvarint(rec)
			if n <= 0 {
				return rec, fmt.Errorf("%w: sample value", ErrBadRecord)
			}
			rec = rec[n:]
			sv = uint64(unzigzag(u))
			if st.has && kind == st.kind {
				sv += st.v
			}
			v = mantissaValue(kind, int64(sv))
		}
		st.has = true
		st.t += dt
		st.dt, st.kind, st.v = dt, kind, sv
		if err := on(walSample{ref: ref, t: st.t, v: v}); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// mantissaValue is the value of an int or decimal kind's mantissa m.
func mantissaValue(kind byte, m int64) chunk.Value {
	if kind == kindInt {
		return chunk.Int(m)
	}
	return chunk.Float(float64(m) / walPow10[kind-kindDecimal0])
}

// appendStateSamplesHeader starts a stateSamples entry of n samples.
func appendStateSamplesHeader(dst []byte, n int) []byte {
	return binary.AppendUvarint(append(dst, entryStateSamples), uint64(n))
}
