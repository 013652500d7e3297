package series_test

import (
	"testing"
	"time"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series"
)

// TestFirstHour: the earliest hour of a range in which the head holds a
// chunk of the series, open or sealed and waiting; none once flushed.
func TestFirstHour(t *testing.T) {
	now := time.UnixMilli(t0 + 5*rowkey.HourMs)
	e := openEnv(t, t.TempDir(), func(o *series.Options) {
		o.Grace, o.SweepInterval = 1000*time.Hour, time.Hour
		o.Now = func() time.Time { return now }
	})
	l := host(1)
	e.append(series.Sample{Labels: l, T: t0 + rowkey.HourMs + 5, V: chunk.Int(1)},
		series.Sample{Labels: l, T: t0 + 3*rowkey.HourMs + 7, V: chunk.Int(2)})
	for _, c := range []struct {
		start, end, want int64
		ok               bool
	}{
		{t0, t0 + 5*rowkey.HourMs, t0 + rowkey.HourMs, true},
		{t0 + rowkey.HourMs + 600_000, t0 + 5*rowkey.HourMs, t0 + rowkey.HourMs, true}, // mid-hour start: its hour
		{t0 + 2*rowkey.HourMs, t0 + 5*rowkey.HourMs, t0 + 3*rowkey.HourMs, true},
		{t0, t0 + rowkey.HourMs - 1, 0, false},
		{t0 + 4*rowkey.HourMs, t0 + 5*rowkey.HourMs, 0, false},
	} {
		got, ok := e.head.Head.FirstHour(l, c.start, c.end)
		if got != c.want || ok != c.ok {
			t.Errorf("FirstHour(%d, %d) = %d, %v; want %d, %v", c.start-t0, c.end-t0, got-t0, ok, c.want-t0, c.ok)
		}
	}
	if _, ok := e.head.Head.FirstHour(host(2), t0, t0+5*rowkey.HourMs); ok {
		t.Error("a series the head does not hold has a first hour")
	}
	e.close()
	e = openEnv(t, e.dir, nil) // closing wrote every chunk
	defer e.close()
	if h, ok := e.head.Head.FirstHour(l, t0, t0+5*rowkey.HourMs); ok {
		t.Errorf("after the flush: first hour %d", h-t0)
	}
}
