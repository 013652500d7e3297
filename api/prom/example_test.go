package prom_test

import (
	"fmt"

	"github.com/prometheus/prometheus/prompb"

	"hourglass/api/prom"
)

// A remote-write 1.0 body decoded: each series comes with its labels sorted,
// its metric, its samples read on demand, and Err when it is invalid.
func ExampleDecoder() {
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "job", Value: "node"}, {Name: "__name__", Value: "up"}},
			Samples: []prompb.Sample{{Timestamp: 1767225600000, Value: 1}}},
		{Labels: []prompb.Label{{Name: "job", Value: "no name"}},
			Samples: []prompb.Sample{{Timestamp: 1767225600000, Value: 0}}},
	}}
	body, _ := req.Marshal() // what Prometheus snappy-compresses and sends

	var d prom.Decoder
	err := d.Decode(prom.MessageV1, body, func(s *prom.Series) error {
		if s.Err != nil {
			fmt.Println("rejected:", s.Err)
			return nil
		}
		fmt.Println(s.Metric, prom.FormatLabels(s.Labels))
		for t, v := range s.Samples() {
			fmt.Println(" ", t, v)
		}
		return nil
	}, nil)
	fmt.Println("error:", err)
	// Output:
	// up {__name__="up", job="node"}
	//   1767225600000 1
	// rejected: invalid series #1 {job="no name"}: no __name__ label (or an empty one): every series needs a metric name
	// error: <nil>
}
