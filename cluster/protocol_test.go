package cluster

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"hourglass/chunk"
	"hourglass/series"
)

func lbl(metric string, kv ...string) series.Labels {
	var tags []series.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		tags = append(tags, series.Tag{Key: kv[i], Value: kv[i+1]})
	}
	return series.MakeLabels(metric, tags)
}

func TestProtocolRoundTrip(t *testing.T) {
	ls := []series.Labels{lbl("m", "host", "a"), lbl("m", "host", "b"), lbl("other")}
	sr := &SnapshotRequest{Start: -5, End: math.MaxInt64, MaxPoints: 7, Series: ls}
	got, err := DecodeSnapshotRequest(AppendSnapshotRequest(nil, sr))
	if err != nil || !reflect.DeepEqual(got, sr) {
		t.Fatalf("snapshot request: %+v %v, want %+v", got, err, sr)
	}
	dr := &DeleteRequest{Start: 1, End: 2, Series: ls[:1]}
	gotD, err := DecodeDeleteRequest(AppendDeleteRequest(nil, dr))
	if err != nil || !reflect.DeepEqual(gotD, dr) {
		t.Fatalf("delete request: %+v %v", gotD, err)
	}
	pts := [][]chunk.Point{
		{{T: 10, V: chunk.Int(-3)}, {T: 20, V: chunk.Float(2.5)}, {T: math.MaxInt64, V: chunk.FloatBits(0x7ff8000000000001)}},
		nil,
		{{T: -1 << 62, V: chunk.Int(math.MinInt64)}},
	}
	b := AppendReplyStart(nil, len(pts))
	for _, p := range pts {
		b = AppendReplySeries(b, 5, p)
	}
	out, err := DecodeReply(b, 3, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pts {
		if len(out[i]) != len(pts[i]) {
			t.Fatalf("series %d: %v, want %v", i, out[i], pts[i])
		}
		for k := range pts[i] {
			if out[i][k].T != pts[i][k].T || !out[i][k].V.Identical(pts[i][k].V) {
				t.Fatalf("series %d point %d: %v, want %v", i, k, out[i][k], pts[i][k])
			}
		}
	}
	if _, err := DecodeReply(b, 3, 5, 3); !errors.Is(err, errTooMany) {
		t.Fatalf("4 points with a bound of 3: %v, want errTooMany", err)
	}
	if _, err := DecodeReply(b, 2, 5, 0); !errors.Is(err, errMalformed) {
		t.Fatalf("a reply of 3 series to 2 asked: %v", err)
	}
	for _, bad := range [][]byte{nil, []byte("HGS1"), []byte("HGS1\x00\x00\x00\xff\xff\xff\xff\x0f"), append(AppendSnapshotRequest(nil, sr), 0)} {
		if _, err := DecodeSnapshotRequest(bad); !errors.Is(err, errMalformed) {
			t.Errorf("%q: %v, want malformed", bad, err)
		}
	}
	// Labels that are not a Labels encoding are refused.
	if _, err := DecodeDeleteRequest([]byte("HGD1\x00\x00\x01\x03abc")); !errors.Is(err, errMalformed) {
		t.Errorf("bad labels: %v", err)
	}
}

func FuzzDecodeSnapshotRequest(f *testing.F) {
	f.Add(AppendSnapshotRequest(nil, &SnapshotRequest{Start: 1, End: 2, MaxPoints: 3, Series: []series.Labels{lbl("m", "a", "b")}}))
	f.Add(AppendDeleteRequest(nil, &DeleteRequest{Start: 1, End: 2, Series: []series.Labels{lbl("m")}}))
	f.Add([]byte("HGS1\x02\x04\x00\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeSnapshotRequest(b); err == nil {
			again, err := DecodeSnapshotRequest(AppendSnapshotRequest(nil, r))
			if err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("re-encoding %+v: %+v %v", r, again, err)
			}
		}
		if r, err := DecodeDeleteRequest(b); err == nil {
			again, err := DecodeDeleteRequest(AppendDeleteRequest(nil, r))
			if err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("re-encoding %+v: %+v %v", r, again, err)
			}
		}
	})
}

func FuzzDecodeReply(f *testing.F) {
	b := AppendReplyStart(nil, 2)
	b = AppendReplySeries(b, 100, []chunk.Point{{T: 100, V: chunk.Int(1)}, {T: 200, V: chunk.Float(1.5)}})
	b = AppendReplySeries(b, 100, nil)
	f.Add(b, uint8(2), int64(100))
	f.Add([]byte("HGR1\x01\xff\xff\xff\xff\x0f"), uint8(1), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, n uint8, start int64) {
		out, err := DecodeReply(b, int(n), start, 1000)
		if err != nil {
			return
		}
		re := AppendReplyStart(nil, len(out))
		for _, pts := range out {
			re = AppendReplySeries(re, start, pts)
		}
		again, err := DecodeReply(re, int(n), start, 1000)
		if err != nil || len(again) != len(out) {
			t.Fatalf("re-decoding: %v", err)
		}
		for i := range out {
			for k := range out[i] {
				if again[i][k].T != out[i][k].T || !again[i][k].V.Identical(out[i][k].V) {
					t.Fatalf("series %d point %d differs", i, k)
				}
			}
		}
	})
}
