package downsample

import "time"

// BucketStart returns the start of the bucket of s that holds ts, the
// timestamp its downsampled point is stamped with: ts − ts mod Interval,
// or with Calendar the calendar bucket in loc (nil means UTC) as
// Downsample finds it. With All, or without an interval, it is ts.
func (s Spec) BucketStart(ts int64, loc *time.Location) int64 {
	if s.All || s.Interval <= 0 {
		return ts
	}
	b := newBucketer(s, loc)
	start, _ := b.bounds(ts)
	return start
}
