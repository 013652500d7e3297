package api

import (
	"hourglass/api/opentsdbhttp"
	"hourglass/api/promhttp"
	"hourglass/meta"
	"hourglass/model"
)

// Engine is what the server and both dialects use of the storage engine
// (series.DB).
type Engine interface {
	// Fatal is the error that stopped the storage (nil while healthy).
	Fatal() error
	// Stats are the head's figures.
	Stats() model.Stats
	opentsdbhttp.Deleter
	opentsdbhttp.Head
	promhttp.Snapshotter
	promhttp.Cardinality
}

// Parts are the concrete pieces internal/app builds, seen through the
// interfaces the dialects define. Wire turns them into Deps.
type Parts struct {
	Engine Engine
	// Store is the store under Engine: its size on disk is read when it
	// has a DiskUsage() uint64 method.
	Store  any
	Index  opentsdbhttp.Index
	UIDs   opentsdbhttp.UIDs
	Writer interface {
		opentsdbhttp.Writer
		promhttp.Writer
	}
	Querier interface {
		opentsdbhttp.Querier
		promhttp.Querier
	}
	Meta *meta.Store
	// SaltBuckets is the key layout's, for /api/config.
	SaltBuckets int
	// Rollups stores /api/rollup points; nil: none.
	Rollups opentsdbhttp.Rollups
}

// Wire returns the Deps over p: the one place the storage is wired into
// the server and its dialects (internal/app's apiDeps and the tests'
// servers call it). Peer and PeerMiddleware are left for a cluster to set.
func Wire(p Parts) Deps {
	type diskUser interface{ DiskUsage() uint64 }
	return Deps{
		Fatal: p.Engine.Fatal,
		Figures: func() Figures {
			s := p.Engine.Stats()
			return Figures{Series: s.IndexSeries, HeadSeries: s.Series, PointsInHead: s.PointsInHead, WALBytes: s.WALBytes}
		},
		DiskUsage: func() (uint64, bool) {
			if du, ok := p.Store.(diskUser); ok {
				return du.DiskUsage(), true
			}
			return 0, false
		},
		OpenTSDB: opentsdbhttp.Deps{
			Writer: p.Writer, Querier: p.Querier, UIDs: p.UIDs, Index: p.Index, Deleter: p.Engine, Head: p.Engine,
			Meta: p.Meta, SaltBuckets: p.SaltBuckets, Rollups: p.Rollups,
		},
		Prom: promhttp.Deps{Writer: p.Writer, Querier: p.Querier, Deleter: p.Engine, Snapshotter: p.Engine, Cardinality: p.Engine},
	}
}
