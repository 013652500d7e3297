package migrate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// TestRemoteReadMaxBytes: a SAMPLES answer past MaxSamplesBytes, as sent
// or once decoded, is an error naming -remote-read-max-bytes; within it,
// it is read.
func TestRemoteReadMaxBytes(t *testing.T) {
	ts := &prompb.TimeSeries{Labels: []prompb.Label{{Name: MetricLabel, Value: "up"}}}
	for i := range 2000 {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: int64(i), Value: 1})
	}
	raw, body := samplesBody(t, ts)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := mustClient(t, Auth{}, 10*time.Second, 0)
	ms, _ := ParseSelectors([]string{"up"})
	for _, tc := range []struct {
		name string
		max  int
		want string // "" reads it
	}{
		{"within", len(raw), ""},
		{"decoded too large", len(raw) - 1, "bytes decoded, over"},
		{"sent too large", len(body) - 1, "over " + strconv.Itoa(len(body)-1) + " bytes"},
	} {
		rr := NewRemoteReadSource(c, srv.URL, ms)
		rr.MaxSamplesBytes = tc.max
		n := 0
		err := rr.Read(context.Background(), Slice{0, 1 << 40}, func(s *Series) error { n += len(s.Points); return nil })
		switch {
		case tc.want == "" && (err != nil || n != 2000):
			t.Errorf("%s: %d points, %v; want 2000", tc.name, n, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "-remote-read-max-bytes")):
			t.Errorf("%s: %v, want an error with %q naming -remote-read-max-bytes", tc.name, err, tc.want)
		}
	}
}
