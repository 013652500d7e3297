package series

import (
	"bytes"
	"testing"

	"hourglass/chunk"
)

// FuzzRecord decodes arbitrary bytes as a WAL record (it must never panic,
// nor hand on labels that are not valid) and round-trips the records the
// head writes.
func FuzzRecord(f *testing.F) {
	l1 := MakeLabels("sys.cpu", []Tag{{Key: "host", Value: "a"}})
	l2 := MakeLabels("sys.mem", nil)
	var rec []byte
	rec = appendSeriesDef(rec, 1, l1)
	rec = appendSamplesHeader(rec, 2)
	rec = appendSample(rec, 1, 1_700_000_000_000, chunk.Int(-3))
	rec = appendSample(rec, 1, 10_000, chunk.Float(2.5))
	rec = appendDelete(rec, 1_700_000_000_000, 1_700_000_360_000, []Labels{l1, l2})
	f.Add(rec)
	f.Add([]byte{entryDelete, 0x80})
	f.Add([]byte{entryDelete, 2, 4, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []byte
		d := recordDecoder{
			onSeries: func(ref uint64, l Labels) error {
				if !l.Valid() {
					t.Fatalf("invalid labels %q passed on", string(l))
				}
				got = appendSeriesDef(got, ref, l)
				return nil
			},
			onSample: func(s walSample) error {
				got = appendSamplesHeader(got, 1)
				got = appendSample(got, s.ref, s.t, s.v)
				return nil
			},
			onDelete: func(start, end int64, ls []Labels) error {
				for _, l := range ls {
					if !l.Valid() {
						t.Fatalf("invalid labels %q passed on", string(l))
					}
				}
				got = appendDelete(got, start, end, ls)
				return nil
			},
		}
		if err := d.decode(b); err != nil {
			return
		}
		// What decoded, written again, decodes to the same entries.
		again := got
		got = nil
		if err := d.decode(again); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !bytes.Equal(got, again) {
			t.Fatalf("round trip changed the record:\n%x\n%x", again, got)
		}
	})
}
