package ingest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"hourglass/chunk"
	"hourglass/internal/dbtest"
	"hourglass/series"
)

// TestBatchCountsNewSeriesPerRequest: a request's new series are counted
// across the commits of its batch (Reset keeps the count), and NewRequest
// starts a new count.
func TestBatchCountsNewSeriesPerRequest(t *testing.T) {
	e := dbtest.Open(t, t.TempDir(), nil, nil)
	defer e.Close()
	head := e.DB
	head.SetSeriesLimits(series.SeriesLimits{MaxNewSeriesPerRequest: 3}, nil)
	b := NewWriter(head.Head, Limits{}).NewBatch()
	n := 0
	add := func() {
		t.Helper()
		n++
		if err := b.Add("m", []series.Tag{{Key: "k", Value: fmt.Sprint(n)}}, int64(1_700_000_000_000+n), chunk.Int(1)); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(wantFailed int) {
		t.Helper()
		if err := b.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if b.Failed() != wantFailed {
			t.Fatalf("%d points failed, want %d: %v", b.Failed(), wantFailed, b.Errors())
		}
		for _, err := range b.CommitErrors() {
			if !errors.Is(err, series.ErrSeriesLimit) {
				t.Fatalf("commit error %v, want a series limit", err)
			}
		}
	}
	add()
	add()
	commit(0)
	b.Reset() // the same request goes on
	add()
	add()
	commit(1)
	if b.NewSeries() != 3 {
		t.Fatalf("the request created %d series, want 3", b.NewSeries())
	}
	b.NewRequest()
	add()
	commit(0)
	if b.NewSeries() != 1 || e.Index.Len() != 4 {
		t.Fatalf("after NewRequest: %d new series in the request, %d in the index; want 1 and 4", b.NewSeries(), e.Index.Len())
	}
}
