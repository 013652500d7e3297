package errclass_test

import (
	"fmt"
	"testing"

	"hourglass/ingest"
	"hourglass/internal/errclass"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// TestSentinelClasses pins the class of every sentinel a handler maps: a
// change here changes a status code a client sees.
func TestSentinelClasses(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want errclass.Class
	}{
		{"ingest.ErrInvalid", ingest.ErrInvalid, errclass.Invalid},
		{"uid.ErrNoSuchName", uid.ErrNoSuchName, errclass.Invalid},
		{"uid.NoSuchNameError", &uid.NoSuchNameError{Kind: uid.Metric, Name: "m"}, errclass.Invalid},
		{"uid.ErrNoSuchUID", uid.ErrNoSuchUID, errclass.Invalid},
		{"uid.ErrFull", uid.ErrFull, errclass.Invalid},
		{"uid.ErrBadKind", uid.ErrBadKind, errclass.Invalid},
		{"uid.ErrExists", uid.ErrExists, errclass.Invalid},
		{"series.ErrSeriesLimit", series.ErrSeriesLimit, errclass.Invalid},
		{"series.SeriesLimitError", &series.SeriesLimitError{Flag: "-max-series", Limit: 1}, errclass.Invalid},
		{"series.ErrOutOfRetention", series.ErrOutOfRetention, errclass.Invalid},
		{"series.ErrClosed", series.ErrClosed, errclass.Unavailable},
		{"store.ErrUnavailable", store.ErrUnavailable, errclass.Unavailable},
		{"store.ErrClosed", store.ErrClosed, errclass.Unavailable},
		{"series.ErrDeleteUnfinished", series.ErrDeleteUnfinished, errclass.Internal},
		{"series.ErrBadRecord", series.ErrBadRecord, errclass.Internal},
	} {
		if got := errclass.Of(fmt.Errorf("wrapped: %w", c.err)); got != c.want {
			t.Errorf("%s: class %v, want %v", c.name, got, c.want)
		}
	}
}
