package app

import (
	"context"

	"hourglass/api"
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

// apiDeps wires the concrete storage into the narrow interfaces the server
// and its dialects use (api.Deps): only app knows the concrete types.
func apiDeps(head *series.DB, index *series.Index, st store.Store, uids *uid.Table, layout rowkey.Layout,
	writer *ingest.Writer, engine *query.Engine) api.Deps {
	type diskUser interface{ DiskUsage() uint64 }
	return api.Deps{
		Fatal: head.Fatal,
		Figures: func() api.Figures {
			s := head.Stats()
			return api.Figures{Series: s.IndexSeries, HeadSeries: s.Series, PointsInHead: s.PointsInHead, WALBytes: s.WALBytes}
		},
		DiskUsage: func() (uint64, bool) {
			if du, ok := st.(diskUser); ok {
				return du.DiskUsage(), true
			}
			return 0, false
		},
		OpenTSDB: opentsdbhttp.Deps{
			Writer: writer, Querier: engine, UIDs: uids, Index: index, Deleter: head, Head: head,
			Meta: meta.New(st), SaltBuckets: layout.SaltBuckets, Rollups: rollupWriter{head},
		},
		Prom: promhttp.Deps{Writer: writer, Querier: engine, Deleter: head, Snapshotter: head, Cardinality: head},
	}
}

// rollupWriter hands /api/rollup's points to the engine
// (series.DB.WriteRollups), one request counting for the series limits.
type rollupWriter struct{ db *series.DB }

func (r rollupWriter) WriteRollups(ctx context.Context, in []opentsdbhttp.RollupSample, errs []error) error {
	out := make([]series.RollupSample, len(in))
	for i, s := range in {
		out[i] = series.RollupSample{Labels: s.Labels, Interval: s.Interval, Agg: s.Agg, T: s.T, V: s.V}
	}
	var req series.Request
	return r.db.WriteRollups(ctx, out, errs, &req)
}
