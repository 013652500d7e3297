package cluster

import (
	"testing"

	"hourglass/chunk"
	"hourglass/series"
)

// TestLocalOffersHistograms: the engine the node wraps (series.DB) has the
// histogram and exemplar reads the node passes on.
func TestLocalOffersHistograms(t *testing.T) {
	var db any = (*series.DB)(nil)
	if _, ok := db.(interface {
		HistSnapshot(l series.Labels, start, end int64) []chunk.HistPoint
	}); !ok {
		t.Fatal("series.DB has no HistSnapshot")
	}
	if _, ok := db.(interface {
		Exemplars(l series.Labels, start, end int64) []series.Exemplar
	}); !ok {
		t.Fatal("series.DB has no Exemplars")
	}
}
