package cluster

import (
	"hourglass/chunk"
	"hourglass/series"
)

// HistSnapshot is this node's head's native histogram samples of l in
// [start, end] (query's histHead), when the local engine keeps any. The
// peers' samples not yet in the store are not asked for: a query on
// another node sees a node's histograms once they are flushed (issue 16).
func (n *Node) HistSnapshot(l series.Labels, start, end int64) []chunk.HistPoint {
	if hh, ok := n.local.(interface {
		HistSnapshot(l series.Labels, start, end int64) []chunk.HistPoint
	}); ok {
		return hh.HistSnapshot(l, start, end)
	}
	return nil
}

// Exemplars is this node's exemplars of l in [start, end] (the engine's
// exemplar source); a peer's are not asked for.
func (n *Node) Exemplars(l series.Labels, start, end int64) []series.Exemplar {
	if eh, ok := n.local.(interface {
		Exemplars(l series.Labels, start, end int64) []series.Exemplar
	}); ok {
		return eh.Exemplars(l, start, end)
	}
	return nil
}
