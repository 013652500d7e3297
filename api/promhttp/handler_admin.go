package promhttp

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"

	"hourglass/api/prom"
	"hourglass/model"
)

// handleDeleteSeries is /api/v1/admin/tsdb/delete_series, as Prometheus'
// (and VictoriaMetrics'): the points of the series the match[] selectors
// pick in [start, end] (default: all time) are deleted; 204 on success.
// It needs -allow-delete, Prometheus' --web.enable-admin-api; without it
// the reply is Prometheus' 503 "admin APIs disabled".
func (p *queryAPI) handleDeleteSeries(w http.ResponseWriter, r *http.Request) {
	if !p.shared.AllowDelete {
		p.respondError(w, prom.ErrorUnavailable, "admin APIs disabled")
		return
	}
	_, start, end, ok := p.rangeParams(w, r)
	if !ok {
		return
	}
	sets, ok := p.requiredMatcherSets(w, r)
	if !ok {
		return
	}
	mint, maxt := timestamp.FromTime(start), timestamp.FromTime(end)
	q, err := p.queryable.Querier(mint, maxt)
	if err != nil {
		p.respondError(w, promExecError(err), err.Error())
		return
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: mint, End: maxt, Func: "series"}
	seen := map[model.Labels]bool{}
	var ls []model.Labels
	for _, ms := range sets {
		ss := q.Select(r.Context(), false, hints, ms...)
		for ss.Next() {
			if l := seriesLabels(ss.At().Labels()); !seen[l] {
				seen[l] = true
				ls = append(ls, l)
			}
		}
		if err := ss.Err(); err != nil {
			p.respondError(w, promExecError(err), err.Error())
			return
		}
	}
	// The head takes the range as it is; it visits only the days in which
	// each series had data.
	if err := p.deleter.Delete(r.Context(), ls, max(mint, 0), maxt); err != nil {
		if errors.Is(err, model.ErrDeleteUnfinished) {
			p.respondError(w, prom.ErrorTimeout, err.Error())
			return
		}
		p.respondError(w, promExecError(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleCleanTombstones is /api/v1/admin/tsdb/clean_tombstones: a delete
// leaves no tombstone behind once it returns, so there is nothing to clean.
func (p *queryAPI) handleCleanTombstones(w http.ResponseWriter, r *http.Request) {
	if !p.shared.AllowDelete {
		p.respondError(w, prom.ErrorUnavailable, "admin APIs disabled")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// seriesLabels is the series of Prometheus labels: __name__ is the metric,
// every other label a tag.
func seriesLabels(pl labels.Labels) model.Labels {
	var metric string
	tags := make([]model.Tag, 0, pl.Len())
	pl.Range(func(l labels.Label) {
		if l.Name == labels.MetricName {
			metric = l.Value
		} else {
			tags = append(tags, model.Tag{Key: l.Name, Value: l.Value})
		}
	})
	return model.MakeLabels(metric, tags)
}

// snapshotter takes the snapshots of /api/v1/admin/tsdb/snapshot, one at a
// time: a second request waits for the first, at most wait
// (Config.SnapshotWait), then gets 503 (result "busy").
type snapshotter struct {
	sem   chan struct{}
	wait  time.Duration
	total *prometheus.CounterVec
	took  prometheus.Histogram
}

func newSnapshotter(reg prometheus.Registerer, wait time.Duration) *snapshotter {
	s := &snapshotter{
		sem: make(chan struct{}, 1), wait: wait,
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hourglass_snapshots_total",
			Help: "Snapshots asked for by /api/v1/admin/tsdb/snapshot, by result (ok, error, unsupported, disabled, busy: waited -prom-snapshot-wait for the one under way)."}, []string{"result"}),
		took: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hourglass_snapshot_duration_seconds", Help: "Time taken by a snapshot.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8)}),
	}
	if reg != nil {
		reg.MustRegister(s.total, s.took)
	}
	return s
}

// snapshotName is a name as Prometheus gives its snapshots: the UTC time
// and 16 random hex digits.
func snapshotName(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%016x", now.UTC().Format("20060102T150405Z0700"), binary.BigEndian.Uint64(b[:])>>1)
}

// handleSnapshot is /api/v1/admin/tsdb/snapshot, as Prometheus': a copy of
// everything acknowledged before the call, taken while writes go on, in
// <snapshot dir>/<name>, a directory with the layout of a data directory
// (series.Head.TakeSnapshot). skip_head=true copies the store alone,
// leaving out what is only in the WAL. It needs -allow-delete, Prometheus'
// --web.enable-admin-api, and the embedded store: on Bigtable the answer is
// 501 and the tables are backed up with Bigtable's own backups.
func (p *queryAPI) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	sn := p.snap
	if !p.shared.AllowDelete {
		sn.total.WithLabelValues("disabled").Inc()
		p.respondError(w, prom.ErrorUnavailable, "admin APIs disabled")
		return
	}
	skipHead := false
	if v := r.FormValue("skip_head"); v != "" {
		var err error
		if skipHead, err = strconv.ParseBool(v); err != nil {
			p.invalidParam(w, "skip_head", fmt.Errorf("unable to parse boolean: %w", err))
			return
		}
	}
	if p.shared.SnapshotDir == "" {
		sn.total.WithLabelValues("unsupported").Inc()
		p.respondError(w, prom.ErrorInternal, "no snapshot directory configured")
		return
	}
	wait := time.NewTimer(sn.wait)
	defer wait.Stop()
	select {
	case sn.sem <- struct{}{}:
		defer func() { <-sn.sem }()
	case <-wait.C:
		sn.total.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(sn.wait.Seconds()))))
		p.respondError(w, prom.ErrorUnavailable, fmt.Sprintf("another snapshot is under way: waited %v (-prom-snapshot-wait)", sn.wait))
		return
	case <-r.Context().Done():
		p.respondError(w, prom.ErrorCanceled, "waiting for the snapshot under way: "+r.Context().Err().Error())
		return
	}
	name := snapshotName(time.Now())
	if err := os.MkdirAll(p.shared.SnapshotDir, 0o755); err != nil {
		sn.total.WithLabelValues("error").Inc()
		p.respondError(w, prom.ErrorInternal, fmt.Sprintf("create snapshot directory: %v", err))
		return
	}
	st, err := p.snapshots.TakeSnapshot(r.Context(), filepath.Join(p.shared.SnapshotDir, name), skipHead)
	switch {
	case errors.Is(err, model.ErrSnapshotUnsupported):
		sn.total.WithLabelValues("unsupported").Inc()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = w.Write(prom.AppendError(nil, prom.ErrorUnavailable, "snapshots are taken of the embedded store only (-storage=pebble); "+
			"on Bigtable, back the tables up with Bigtable's backups (gcloud bigtable backups create, see docs/deploy-bigtable.md)"))
		return
	case err != nil:
		sn.total.WithLabelValues("error").Inc()
		p.respondError(w, prom.ErrorInternal, fmt.Sprintf("create snapshot: %v", err))
		return
	}
	sn.total.WithLabelValues("ok").Inc()
	sn.took.Observe(st.Took.Seconds())
	out := append([]byte(`{"name":`), prom.AppendString(nil, name)...)
	p.respond(w, append(out, '}'), nil, nil)
}
