package e2e

import (
	"log/slog"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"
	"github.com/prometheus/prometheus/util/compression"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// promQueue is Prometheus' own remote-write pipeline pointed at a server:
// records go into a Prometheus WAL (log), and the remote-write queue
// manager (storage/remote, what Prometheus runs for each remote_write
// section) tails it and sends them to /api/v1/write with its sharding,
// batching, retries and, for 2.0, its check of the
// X-Prometheus-Remote-Write-*-Written headers. promSendWithPrometheus and
// histSendWithPrometheus send through it.
type promQueue struct {
	t   *testing.T
	s   *server
	w   *wlog.WL
	rs  *remote.Storage
	reg *prometheus.Registry
	enc record.Encoder
}

// newPromQueue starts a queue manager sending msg to s, 50 samples a
// request at most (several requests), every 100 ms; tune (may be nil)
// changes the rest of its configuration. Close it when the test has sent.
func newPromQueue(t *testing.T, s *server, msg remoteapi.WriteMessageType, tune func(*config.RemoteWriteConfig)) *promQueue {
	t.Helper()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	w, err := wlog.New(log, nil, filepath.Join(dir, "wal"), compression.None)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rs := remote.NewStorage(log, reg, func() (int64, error) { return 0, nil }, dir, 10*time.Second, nil, false)
	u, _ := url.Parse(s.url + "/api/v1/write")
	rwc := config.DefaultRemoteWriteConfig
	rwc.URL = &config_util.URL{URL: u}
	rwc.Name = "hourglass"
	rwc.ProtobufMessage = msg
	rwc.QueueConfig.BatchSendDeadline = model.Duration(100 * time.Millisecond)
	rwc.QueueConfig.MaxSamplesPerSend = 50
	rwc.MetadataConfig.Send = false
	if tune != nil {
		tune(&rwc)
	}
	if err := rs.ApplyConfig(&config.Config{GlobalConfig: config.DefaultGlobalConfig, RemoteWriteConfigs: []*config.RemoteWriteConfig{&rwc}}); err != nil {
		w.Close()
		t.Fatal(err)
	}
	return &promQueue{t: t, s: s, w: w, rs: rs, reg: reg}
}

// log appends one record (made with q.enc) to the WAL the queue manager tails.
func (q *promQueue) log(rec []byte) {
	q.t.Helper()
	if err := q.w.Log(rec); err != nil {
		q.t.Fatal(err)
	}
}

// waitSent waits, 90 s at most, until the queue manager has sent want
// records of kind ("samples" or "histograms") and holds none pending, and
// fails the test if it failed any sample or histogram or sent more.
func (q *promQueue) waitSent(kind string, want int) {
	q.t.Helper()
	t, reg := q.t, q.reg
	deadline := time.Now().Add(90 * time.Second)
	for {
		q.rs.Notify()
		sent, pending := promGatherSum(t, reg, "prometheus_remote_storage_"+kind+"_total"),
			promGatherSum(t, reg, "prometheus_remote_storage_"+kind+"_pending")
		failed := promGatherSum(t, reg, "prometheus_remote_storage_samples_failed_total") +
			promGatherSum(t, reg, "prometheus_remote_storage_histograms_failed_total")
		if failed > 0 {
			t.Fatalf("the queue manager failed %v %s (a 2.0 sender fails a 2xx without Written headers):\n%s", failed, kind, q.s.logs.String())
		}
		if sent >= float64(want) && pending == 0 {
			if sent != float64(want) {
				t.Fatalf("the queue manager sent %v %s, want %d", sent, kind, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s the queue manager has sent %v of %d %s (%v pending)", sent, want, kind, pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// close stops the queue manager and closes its WAL.
func (q *promQueue) close() {
	_ = q.rs.Close()
	_ = q.w.Close()
}

// promGatherSum sums the values of every counter and gauge named name in reg.
func promGatherSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}
