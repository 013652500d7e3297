package api

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/api/opentsdbhttp"
	"hourglass/api/promhttp"
	"hourglass/ingest"
	"hourglass/meta"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// newServerOver is a whole server over head, its dependencies wired as
// internal/app wires them (app.apiDeps), the writer and engine with default
// limits.
func newServerOver(cfg Config, head *series.DB, index *series.Index, st store.Store, uids *uid.Table, layout rowkey.Layout, reg *prometheus.Registry, log *slog.Logger) *Server {
	writer := ingest.NewWriter(head.Head, ingest.Limits{})
	engine := query.NewEngine(head.Head, index, st, layout, query.Limits{})
	type diskUser interface{ DiskUsage() uint64 }
	return New(cfg, Deps{
		Fatal: head.Fatal,
		Figures: func() Figures {
			s := head.Stats()
			return Figures{Series: s.IndexSeries, HeadSeries: s.Series, PointsInHead: s.PointsInHead, WALBytes: s.WALBytes}
		},
		DiskUsage: func() (uint64, bool) {
			if du, ok := st.(diskUser); ok {
				return du.DiskUsage(), true
			}
			return 0, false
		},
		OpenTSDB: opentsdbhttp.Deps{
			Writer: writer, Querier: engine, UIDs: uids, Index: index, Deleter: head, Head: head,
			Meta: meta.New(st), SaltBuckets: layout.SaltBuckets,
		},
		Prom: promhttp.Deps{Writer: writer, Querier: engine, Deleter: head, Snapshotter: head, Cardinality: head},
	}, reg, log)
}
