package app

import (
	"context"

	"hourglass/api"
	"hourglass/api/opentsdbhttp"
	"hourglass/ingest"
	"hourglass/meta"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// apiDeps wires the concrete storage into the narrow interfaces the server
// and its dialects use (api.Wire): only app knows the concrete types.
func apiDeps(head *series.DB, index *series.Index, st store.Store, uids *uid.Table, layout rowkey.Layout,
	writer *ingest.Writer, engine *query.Engine) api.Deps {
	return api.Wire(api.Parts{
		Engine: head, Store: st, Index: index, UIDs: uids, Writer: writer, Querier: engine,
		Meta: meta.New(st), SaltBuckets: layout.SaltBuckets, Rollups: rollupWriter{head},
	})
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
