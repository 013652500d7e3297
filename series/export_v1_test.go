package series

import "hourglass/chunk"

// WALRecordV1 is a WAL record as format 1 wrote it: the series definitions
// of ls (ref i+1 for ls[i]), then one samples entry (0x02) of every point,
// series after series.
func WALRecordV1(ls []Labels, pts [][]chunk.Point) []byte {
	var rec []byte
	n := 0
	for i, l := range ls {
		rec = appendSeriesDef(rec, uint64(i+1), l)
		n += len(pts[i])
	}
	rec = appendSamplesHeaderV1(rec, n)
	var prev int64
	for i := range ls {
		for _, p := range pts[i] {
			rec = appendSampleV1(rec, uint64(i+1), p.T-prev, p.V)
			prev = p.T
		}
	}
	return rec
}

// WALRecordDelta is a WAL record as the head wrote it from 2026-11-28 until
// series-state samples (0x07): the series definitions of ls (ref i+1 for
// ls[i]), then one delta-coded samples entry (0x06) of every point, series
// after series.
func WALRecordDelta(ls []Labels, pts [][]chunk.Point) []byte {
	var rec []byte
	n := 0
	for i, l := range ls {
		rec = appendSeriesDef(rec, uint64(i+1), l)
		n += len(pts[i])
	}
	rec = appendSamplesHeader(rec, n)
	var enc sampleEncoder
	for i := range ls {
		for _, p := range pts[i] {
			rec = enc.append(rec, uint64(i+1), p.T, p.V)
		}
	}
	return rec
}
