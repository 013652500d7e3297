package migrate

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/prompb"
)

// FuzzDecodeQueryResponse: any input decodes or fails without panicking;
// what decodes lies in the slice and, encoded again, decodes to the same.
func FuzzDecodeQueryResponse(f *testing.F) {
	for _, seed := range []string{
		`[{"metric":"m","tags":{"a":"b"},"aggregateTags":[],"dps":{"1700000000":42,"1700000000500":-0.0,"1700000001":"NaN","1700000002":"Infinity","1700000003":"-Infinity","1700000004":1e308}}]`,
		`[]`, `[{"metric":"m","dps":{}}]`, `[{"metric":"m","dps":{"1":null}}]`, `{"error":{"code":400}}`,
		`[{"metric":"m","dps":{"99999999999999999999":1}}]`, `[{"metric":"m","dps":{"1700000000":1e999}}]`,
	} {
		f.Add([]byte(seed))
	}
	s := Slice{0, math.MaxInt64}
	f.Fuzz(func(t *testing.T, b []byte) {
		var first []Series
		err := DecodeQueryResponse(bytes.NewReader(b), s, func(ser *Series) error {
			for _, p := range ser.Points {
				if p.T < s.Start || p.T >= s.End || p.Raw == "" {
					t.Fatalf("point %+v outside the slice or without its text", p)
				}
			}
			first = append(first, Series{Labels: append([]Label(nil), ser.Labels...), Points: append([]Point(nil), ser.Points...)})
			return nil
		})
		if err != nil {
			return
		}
		// Encoded again with ms timestamps, the same points come back.
		again := collect(t, func(fn func(*Series) error) error {
			return DecodeQueryResponse(bytes.NewReader(appendQueryJSON(nil, first)), s, fn)
		})
		if fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("round trip: %v, then %v", first, again)
		}
	})
}

// FuzzDecodeReadResponse feeds the input to both remote-read decoders (as
// a snappy body of SAMPLES and as a stream of frames): no panic, and every
// sample passed on lies in the slice.
func FuzzDecodeReadResponse(f *testing.F) {
	_, body := samplesBody(f, &prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: MetricLabel, Value: "up"}},
		Samples: []prompb.Sample{{Timestamp: 1, Value: math.NaN()}, {Timestamp: 2, Value: math.Inf(1)}, {Timestamp: 3, Value: math.Copysign(0, -1)}},
	})
	f.Add(body)
	f.Add(chunkedBody(f, map[string][]prompb.Sample{"a": {{Timestamp: 1, Value: 1}, {Timestamp: 2, Value: math.NaN()}}}))
	f.Add([]byte{})
	s := Slice{2, 100}
	check := func(t *testing.T) func(int64, *Series) error {
		return func(_ int64, ser *Series) error {
			for _, p := range ser.Points {
				if p.T < s.Start || p.T >= s.End {
					t.Fatalf("sample at %d outside %v", p.T, s)
				}
			}
			return nil
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = DecodeSamplesReadResponse(b, s, check(t))
		_ = DecodeChunkedReadResponse(bytes.NewReader(b), 1<<20, s, check(t))
	})
}
