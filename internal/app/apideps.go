package app

import (
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
			Meta: meta.New(st), SaltBuckets: layout.SaltBuckets,
		},
		Prom: promhttp.Deps{Writer: writer, Querier: engine, Deleter: head, Snapshotter: head, Cardinality: head},
	}
}
