package api

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"hourglass/ingest"
	"hourglass/meta"
	"hourglass/query"
	"hourglass/rowkey"
	"hourglass/series"
	"hourglass/store"
	"hourglass/uid"
)

// newServerOver is a whole server over head, its dependencies wired as
// internal/app wires them (Wire, as app.apiDeps calls it, without
// /api/rollup's writer), the writer and engine with default limits.
func newServerOver(cfg Config, head *series.DB, index *series.Index, st store.Store, uids *uid.Table, layout rowkey.Layout, reg *prometheus.Registry, log *slog.Logger) *Server {
	return New(cfg, Wire(Parts{
		Engine: head, Store: st, Index: index, UIDs: uids,
		Writer:  ingest.NewWriter(head.Head, ingest.Limits{}),
		Querier: query.NewEngine(head.Head, index, st, layout, query.Limits{}),
		Meta:    meta.New(st), SaltBuckets: layout.SaltBuckets,
	}), reg, log)
}
