package series

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"hourglass/chunk"
	"hourglass/rowkey"
	"hourglass/series/wal"
	"hourglass/uid"
)

// TestOpsMetrics: after appends with fsync always, the WAL figures count
// them and the flush queue is empty once flushed.
func TestOpsMetrics(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, filepath.Join(dir, "store"))
	layout, err := RecordLayout(context.Background(), st, rowkey.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h, err := OpenDB(context.Background(), st, uid.New(st, layout, uid.Options{}), Options{
		Layout: layout, Logger: quietLog, Registerer: reg, WAL: wal.Options{Dir: filepath.Join(dir, "wal")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l := MakeLabels("m", []Tag{{Key: "k", Value: "v"}})
	for i := range 10 {
		if err := h.Append(context.Background(), []Sample{{Labels: l, T: int64(i), V: chunk.Int(1)}}, make([]error, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	get := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	if n := get("hourglass_wal_fsyncs_total"); n < 10 {
		t.Errorf("fsyncs %v after 10 appends with fsync always", n)
	}
	if s := get("hourglass_wal_fsync_seconds_total"); s <= 0 {
		t.Errorf("fsync seconds %v", s)
	}
	if b := get("hourglass_wal_bytes_appended_total"); b != float64(h.log.Stats().BytesAppended) || b <= 0 {
		t.Errorf("bytes appended %v", b)
	}
	if q := get("hourglass_head_flush_queue_chunks"); q != 0 {
		t.Errorf("flush queue %v after Flush", q)
	}
	if n, err := testutil.GatherAndCount(reg, "hourglass_wal_segments"); err != nil || n != 1 {
		t.Errorf("wal segments gauge: %d %v", n, err)
	}
}
