package downsample

import (
	"math"
	"testing"

	"hourglass/chunk"
)

func TestRate(t *testing.T) {
	tests := []struct {
		name string
		src  []chunk.Point
		opts RateOptions
		want string
	}{
		{"empty", nil, RateOptions{}, ""},
		{"one point", []chunk.Point{pt(0, 5)}, RateOptions{}, ""},
		{
			// (30−10)/10s = 2; (25−30)/10s = −0.5; (25−25)/10s = 0.
			"gauge", []chunk.Point{pt(0, 10), pt(10*sec, 30), pt(20*sec, 25), pt(30*sec, 25)},
			RateOptions{}, "10000:2.0 20000:-0.5 30000:0.0",
		},
		{
			// Per second, whatever the spacing: 1 in 500ms is 2/s.
			"sub-second", []chunk.Point{pt(0, 0), pt(500, 1), pt(2500, 2)},
			RateOptions{}, "500:2.0 2500:0.5",
		},
		{
			// (2.5−1)/2s = 0.75.
			"mixed", []chunk.Point{pt(0, 1), fpt(2*sec, 2.5), fpt(4*sec, 2.5)},
			RateOptions{}, "2000:0.75 4000:0.0",
		},
		{
			// 2^60+1 − 2^60 is 1 in int64; in float64 both are 2^60 and the
			// rate would be 0.
			"int64 precision", []chunk.Point{pt(0, 1<<60), pt(sec, 1<<60+1)},
			RateOptions{}, "1000:1.0",
		},
		{
			// A counter that did not decrease is a plain rate.
			"counter", []chunk.Point{pt(0, 10), pt(10*sec, 30)},
			RateOptions{Counter: true}, "10000:2.0",
		},
		{
			// Rollover at the default max: (MaxInt64 − 10 + 5)/10s, the
			// difference computed in int64 before the conversion.
			"counter rollover default max", []chunk.Point{pt(0, 10), pt(10*sec, 5)},
			RateOptions{Counter: true}, "10000:" + fmtValue(chunk.Float(float64(int64(math.MaxInt64-5))/10)),
		},
		{
			// (100 − 90 + 10)/10s = 2.
			"counter rollover", []chunk.Point{pt(0, 90), pt(10*sec, 10)},
			RateOptions{Counter: true, CounterMax: 100}, "10000:2.0",
		},
		{
			// Float rollover: (100 − 90.5 + 10)/10s = 1.95.
			"counter rollover float", []chunk.Point{fpt(0, 90.5), pt(10*sec, 10)},
			RateOptions{Counter: true, CounterMax: 100}, "10000:1.95",
		},
		{
			// The rollover rate 2 is above resetValue 1: a reset, so 0.
			"reset value exceeded", []chunk.Point{pt(0, 90), pt(10*sec, 10), pt(20*sec, 20)},
			RateOptions{Counter: true, CounterMax: 100, ResetValue: 1}, "10000:0.0 20000:1.0",
		},
		{
			// 2 is not above 5: kept.
			"reset value not exceeded", []chunk.Point{pt(0, 90), pt(10*sec, 10)},
			RateOptions{Counter: true, CounterMax: 100, ResetValue: 5}, "10000:2.0",
		},
		{
			// resetValue only matters on a rollover: a plain rate of 2 above
			// it stays.
			"reset value on plain rate", []chunk.Point{pt(0, 10), pt(10*sec, 30)},
			RateOptions{Counter: true, ResetValue: 1}, "10000:2.0",
		},
		{
			// The decrease to 5 is dropped; 5 is the base of the next rate:
			// (15−5)/10s = 1.
			"drop resets", []chunk.Point{pt(0, 10), pt(10*sec, 5), pt(20*sec, 15)},
			RateOptions{Counter: true, DropResets: true}, "20000:1.0",
		},
		{
			// dropResets needs counter, as in OpenTSDB.
			"drop resets without counter", []chunk.Point{pt(0, 10), pt(10*sec, 5)},
			RateOptions{DropResets: true}, "10000:-0.5",
		},
		{
			// A repeated timestamp yields nothing and is not the base:
			// (3−1)/1s = 2.
			"duplicate timestamp", []chunk.Point{pt(0, 1), pt(0, 5), pt(sec, 3)},
			RateOptions{}, "1000:2.0",
		},
		{
			"NaN", []chunk.Point{fpt(0, 1), fpt(sec, math.NaN()), fpt(2*sec, 3)},
			RateOptions{Counter: true}, "1000:NaN 2000:NaN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Rate(nil, tt.src, tt.opts)
			if s := fmtPoints(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
			// In place, over the source's own array.
			src := append([]chunk.Point(nil), tt.src...)
			if s := fmtPoints(Rate(src[:0], src, tt.opts)); s != tt.want {
				t.Errorf("in place: got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// Downsample, then rate, as the pipeline runs them.
func TestDownsampleThenRate(t *testing.T) {
	var src []chunk.Point
	for i := range int64(30) {
		src = append(src, pt(i*10*sec, i*100)) // +100 every 10 s: 10/s
	}
	ds := Downsample(nil, src, mustSpec(t, "1m-max"), 0, 300*sec, nil)
	got := Rate(nil, ds, RateOptions{Counter: true})
	// Bucket maxima 500, 1100, 1700, 2300, 2900 one minute apart: 600/60s.
	if s, want := fmtPoints(got), "60000:10.0 120000:10.0 180000:10.0 240000:10.0"; s != want {
		t.Errorf("got %s, want %s", s, want)
	}
}
