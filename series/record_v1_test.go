package series

import (
	"encoding/binary"

	"hourglass/chunk"
)

// The samples entry of WAL format 1 (0x02), which the head wrote before
// format 2's deltaSamples; replay still reads it. Tests write it to check
// that old segments replay.

func appendSamplesHeaderV1(dst []byte, n int) []byte {
	dst = append(dst, entrySamples)
	return binary.AppendUvarint(dst, uint64(n))
}

func appendSampleV1(dst []byte, ref uint64, dt int64, v chunk.Value) []byte {
	dst = binary.AppendUvarint(dst, ref)
	dst = binary.AppendVarint(dst, dt)
	if v.IsInt() {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	return binary.LittleEndian.AppendUint64(dst, v.Bits())
}
