package prom

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
)

// BenchmarkAppendQueryData writes a range query's answer as
// /api/v1/query_range does: 417 series of 61 steps (an hour at 1 m) with
// the load generator's labels, values with two decimals (gauges: raw,
// max_over_time) or any (rates, averages).
func BenchmarkAppendQueryData(b *testing.B) {
	for _, kind := range []string{"hundredths", "any"} {
		b.Run(kind, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			m := make(promql.Matrix, 417)
			for i := range m {
				m[i].Metric = labels.FromStrings("dc", "us-east-a", "host", fmt.Sprintf("host-%06d", i), "rack", "us-east-a-r07",
					"region", "us-east", "service", "web")
				for j := range 61 {
					f := float64(r.IntN(10000)) / 100
					if kind == "any" {
						f = r.Float64() * 1000
					}
					m[i].Floats = append(m[i].Floats, promql.FPoint{T: 1795882684000 + int64(j)*60_000, F: f})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				out := AppendSuccessStart(nil)
				out = AppendQueryData(out, m)
				_ = AppendSuccessEnd(out, nil, nil)
			}
		})
	}
}
