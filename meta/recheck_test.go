package meta

import (
	"context"
	"math"
	"testing"
	"time"

	"hourglass/store/pebble"
)

// TestRecheckSeesOtherWriters: two Stores over one store, as two nodes
// over one Bigtable. The one that found no series annotation finds the
// other's within the recheck interval with SetRecheck, and never without.
func TestRecheckSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	writer, shared, once := New(st), New(st), New(st)
	shared.SetRecheck(20 * time.Millisecond)
	id := []byte{0, 0, 1, 0, 0, 1, 0, 0, 0, 1}
	for _, s := range []*Store{shared, once} {
		if got, err := s.SeriesAnnotations(ctx, [][]byte{id}, 0, math.MaxInt64, 0); err != nil || got != nil {
			t.Fatalf("before any: %v %v", got, err)
		}
	}
	if err := writer.PutAnnotation(ctx, &Annotation{TSUID: id, StartTime: 1000, Description: "x"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if got, err := shared.SeriesAnnotations(ctx, [][]byte{id}, 0, math.MaxInt64, 0); err != nil || len(got) != 1 {
		t.Fatalf("with SetRecheck, after the interval: %v %v", got, err)
	}
	if got, _ := once.SeriesAnnotations(ctx, [][]byte{id}, 0, math.MaxInt64, 0); got != nil {
		t.Fatalf("without SetRecheck the first answer stands (one node alone writes through it): %v", got)
	}
}
