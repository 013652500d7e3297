package series

import (
	"fmt"
	"testing"
)

// BenchmarkCardinality walks an index of 100,000 series (10 metrics, 5 tags
// each; one tag an id with a value per series, as when counts explode) for
// /api/v1/status/tsdb's figures.
func BenchmarkCardinality(b *testing.B) {
	ix := newIndex()
	for i := range 100_000 {
		l := MakeLabels(fmt.Sprintf("metric_%d", i%10), []Tag{
			{Key: "region", Value: fmt.Sprint("r", i%4)}, {Key: "dc", Value: fmt.Sprint("d", i%16)},
			{Key: "host", Value: fmt.Sprint("h", i%1000)}, {Key: "service", Value: fmt.Sprint("s", i%20)},
			{Key: "id", Value: fmt.Sprint("id-", i)},
		})
		ix.add(l, []byte(l), 0, 1, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st := ix.cardinality(10)
		if st.NumSeries != 100_000 {
			b.Fatal(st.NumSeries)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/series")
}
