package prom

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Native histograms in remote-read answers (issue 16): a SAMPLES answer
// carries them as prometheus.Histogram messages (TimeSeries field 4), a
// STREAMED_XOR_CHUNKS answer as Prometheus' own HISTOGRAM (2) and
// FLOAT_HISTOGRAM (3) chunks.

// appendHistogramMsg appends a prometheus.Histogram message (without its
// field key) for an integer histogram h or a float histogram fh.
func appendHistogramMsg(dst []byte, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) []byte {
	// The count and zero count are oneofs: written even when zero, so a
	// reader tells an integer histogram from a float one.
	if h != nil {
		dst = binary.AppendUvarint(appendKey(dst, 1, wireVarint), h.Count)
	} else {
		dst = binary.LittleEndian.AppendUint64(appendKey(dst, 2, wireFixed64), math.Float64bits(fh.Count))
	}
	var schema int32
	var zt, sum float64
	var hint histogram.CounterResetHint
	var pos, neg []histogram.Span
	var custom []float64
	if h != nil {
		schema, zt, sum, hint, pos, neg, custom = h.Schema, h.ZeroThreshold, h.Sum, h.CounterResetHint, h.PositiveSpans, h.NegativeSpans, h.CustomValues
	} else {
		schema, zt, sum, hint, pos, neg, custom = fh.Schema, fh.ZeroThreshold, fh.Sum, fh.CounterResetHint, fh.PositiveSpans, fh.NegativeSpans, fh.CustomValues
	}
	dst = appendFixed64Field(dst, 3, math.Float64bits(sum))
	dst = appendVarintField(dst, 4, uint64(uint32(schema<<1)^uint32(schema>>31)))
	dst = appendFixed64Field(dst, 5, math.Float64bits(zt))
	if h != nil {
		dst = binary.AppendUvarint(appendKey(dst, 6, wireVarint), h.ZeroCount)
	} else {
		dst = binary.LittleEndian.AppendUint64(appendKey(dst, 7, wireFixed64), math.Float64bits(fh.ZeroCount))
	}
	dst = appendSpans(dst, 8, neg)
	if h != nil {
		dst = appendPackedSint64(dst, 9, h.NegativeBuckets)
	} else {
		dst = appendPackedDoubles(dst, 10, fh.NegativeBuckets)
	}
	dst = appendSpans(dst, 11, pos)
	if h != nil {
		dst = appendPackedSint64(dst, 12, h.PositiveBuckets)
	} else {
		dst = appendPackedDoubles(dst, 13, fh.PositiveBuckets)
	}
	dst = appendVarintField(dst, 14, uint64(hint))
	dst = appendVarintField(dst, 15, uint64(t))
	return appendPackedDoubles(dst, 16, custom)
}

func appendSpans(dst []byte, num int, spans []histogram.Span) []byte {
	for _, s := range spans {
		var b [16]byte
		sb := appendVarintField(b[:0], 1, uint64(uint32(s.Offset<<1)^uint32(s.Offset>>31)))
		sb = appendVarintField(sb, 2, uint64(s.Length))
		dst = appendBytesField(dst, num, sb)
	}
	return dst
}

func appendPackedSint64(dst []byte, num int, vs []int64) []byte {
	if len(vs) == 0 {
		return dst
	}
	n := 0
	for _, v := range vs {
		n += varintLen(uint64(v<<1) ^ uint64(v>>63))
	}
	dst = binary.AppendUvarint(appendKey(dst, num, wireLen), uint64(n))
	for _, v := range vs {
		dst = binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
	}
	return dst
}

func appendPackedDoubles(dst []byte, num int, vs []float64) []byte {
	if len(vs) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(appendKey(dst, num, wireLen), uint64(8*len(vs)))
	for _, v := range vs {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

// histChunkAppend appends the iterator's current histogram to chk (a
// HISTOGRAM or FLOAT_HISTOGRAM chunk, made when nil). It returns the chunk
// to go on with and, when the appender had to start a new chunk (one it
// cannot recode into), the finished one.
func histChunkAppend(chk chunkenc.Chunk, app chunkenc.Appender, vt chunkenc.ValueType, it chunkenc.Iterator) (cur chunkenc.Chunk, curApp chunkenc.Appender, done chunkenc.Chunk, err error) {
	if chk == nil {
		if vt == chunkenc.ValHistogram {
			chk = chunkenc.NewHistogramChunk()
		} else {
			chk = chunkenc.NewFloatHistogramChunk()
		}
		if app, err = chk.Appender(); err != nil {
			return nil, nil, nil, err
		}
	}
	var nc chunkenc.Chunk
	var recoded bool
	if vt == chunkenc.ValHistogram {
		t, h := it.AtHistogram(nil)
		nc, recoded, app, err = app.AppendHistogram(nil, 0, t, h, false)
	} else {
		t, fh := it.AtFloatHistogram(nil)
		nc, recoded, app, err = app.AppendFloatHistogram(nil, 0, t, fh, false)
	}
	switch {
	case err != nil:
		return nil, nil, nil, err
	case nc == nil:
		return chk, app, nil, nil
	case recoded:
		return nc, app, nil, nil
	}
	return nc, app, chk, nil
}

// chunkEncodingOf is the remote-read Chunk.Encoding of a chunk of samples
// of kind vt: XOR 1, HISTOGRAM 2, FLOAT_HISTOGRAM 3.
func chunkEncodingOf(vt chunkenc.ValueType) int {
	switch vt {
	case chunkenc.ValHistogram:
		return 2
	case chunkenc.ValFloatHistogram:
		return 3
	}
	return 1
}
