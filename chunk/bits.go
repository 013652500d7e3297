package chunk

import "encoding/binary"

// bitWriter appends a most-significant-bit-first bit stream to a byte slice.
// Bits are gathered in a 64-bit accumulator and written eight bytes at a time.
type bitWriter struct {
	dst []byte
	acc uint64 // the low n bits are pending, oldest first
	n   uint   // pending bits in acc, 0..63
}

// write appends the low nb bits of v, nb in 0..64.
func (w *bitWriter) write(v uint64, nb uint) {
	if nb == 0 {
		return
	}
	if nb < 64 {
		v &= 1<<nb - 1
	}
	free := 64 - w.n
	if nb < free {
		w.acc = w.acc<<nb | v
		w.n += nb
		return
	}
	rem := nb - free
	// free is 1..64; a shift by 64 yields 0 in Go, which is what we want.
	w.dst = binary.BigEndian.AppendUint64(w.dst, w.acc<<free|v>>rem)
	w.acc = v // only the low rem bits matter; older bits are shifted out later
	w.n = rem
}

// writeBit appends one bit.
func (w *bitWriter) writeBit(b bool) {
	var v uint64
	if b {
		v = 1
	}
	w.write(v, 1)
}

// flush pads the stream with zero bits to a byte boundary, writes it out and
// returns the destination slice.
func (w *bitWriter) flush() []byte {
	if w.n > 0 {
		acc := w.acc << (64 - w.n)
		for nb := int(w.n); nb > 0; nb -= 8 {
			w.dst = append(w.dst, byte(acc>>56))
			acc <<= 8
		}
	}
	w.acc, w.n = 0, 0
	return w.dst
}

// bitReader reads a most-significant-bit-first bit stream. The next unread
// bits sit at the top of buf; n of them are valid. Refills load eight bytes
// at once where the input allows (Giesen, "Reading bits in far too many
// ways", variant 4): bits below the n valid ones may already hold the next
// input bits, which a later refill ORs in again unchanged.
type bitReader struct {
	b   []byte // input not yet loaded into buf
	buf uint64
	n   uint // valid bits at the top of buf, 0..63
	end int  // offset in the chunk just past the stream, for error offsets

	// p counts the bytes of b that fixedZigzag and fixedOffset loaded and
	// have not cut off yet (cut), 0 outside them: an int stored into *r
	// at each refill, where storing the slice cost a write barrier while
	// the garbage collector marks (a tenth of fixedZigzag's time in the
	// server's profile).
	p int
}

// cut drops the p bytes of b already loaded.
func (r *bitReader) cut() {
	if r.p != 0 {
		r.b, r.p = r.b[r.p:], 0
	}
}

// reset starts reading b, which ends at byte offset end of the chunk.
func (r *bitReader) reset(b []byte, end int) {
	r.b, r.buf, r.n, r.end, r.p = b, 0, 0, end, 0
}

// refill tops buf up to at least 56 valid bits, or to every remaining bit
// when fewer than that are left.
func (r *bitReader) refill() {
	if len(r.b) >= 8 {
		r.buf |= binary.BigEndian.Uint64(r.b) >> (r.n & 63) // n is 0..63
		adv := (63 - r.n) >> 3
		r.b = r.b[adv:]
		r.n |= 56
		return
	}
	for r.n < 56 && len(r.b) > 0 {
		r.buf |= uint64(r.b[0]) << ((56 - r.n) & 63) // n < 56
		r.b = r.b[1:]
		r.n += 8
	}
}

// read returns the next nb bits, nb in 0..64, and false when the stream
// holds fewer than nb bits.
func (r *bitReader) read(nb uint) (uint64, bool) {
	if nb > r.n {
		r.refill()
		if nb > r.n {
			if nb <= 32 || r.n+uint(len(r.b))*8 < nb {
				return 0, false
			}
			// More than 56 bits asked and buf holds 56..63: split in two.
			hi, _ := r.read(32)
			lo, ok := r.read(nb - 32)
			return hi<<(nb-32) | lo, ok
		}
	}
	v := r.buf >> (64 - nb) // nb == 0: a shift by 64 yields 0
	r.buf <<= nb
	r.n -= nb
	return v, true
}

// offset returns the byte offset in the chunk of the next unread bit.
func (r *bitReader) offset() int {
	return r.end - len(r.b) - int(r.n+7)/8
}

// rest reports whether the unread part of the stream is only zero padding
// of fewer than eight bits.
func (r *bitReader) rest() bool {
	return len(r.b) == 0 && r.n < 8 && r.buf>>(64-r.n) == 0
}
