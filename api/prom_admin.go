package api

import (
	"errors"
	"net/http"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"

	"hourglass/api/prom"
	"hourglass/series"
)

// handleDeleteSeries is /api/v1/admin/tsdb/delete_series, as Prometheus'
// (and VictoriaMetrics'): the points of the series the match[] selectors
// pick in [start, end] (default: all time) are deleted; 204 on success.
// It needs -allow-delete, Prometheus' --web.enable-admin-api; without it
// the reply is Prometheus' 503 "admin APIs disabled".
func (p *promAPI) handleDeleteSeries(w http.ResponseWriter, r *http.Request) {
	if !p.s.cfg.AllowDelete {
		p.respondError(w, prom.ErrorUnavailable, "admin APIs disabled")
		return
	}
	_, start, end, ok := p.rangeParams(w, r)
	if !ok {
		return
	}
	if len(r.Form["match[]"]) == 0 {
		p.respondError(w, prom.ErrorBadData, "no match[] parameter provided")
		return
	}
	sets, err := p.matcherSets(r)
	if err != nil {
		p.invalidParam(w, "match[]", err)
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
	seen := map[series.Labels]bool{}
	var ls []series.Labels
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
	if err := p.s.engine.Head().Delete(r.Context(), ls, max(mint, 0), maxt); err != nil {
		if errors.Is(err, series.ErrDeleteUnfinished) {
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
func (p *promAPI) handleCleanTombstones(w http.ResponseWriter, r *http.Request) {
	if !p.s.cfg.AllowDelete {
		p.respondError(w, prom.ErrorUnavailable, "admin APIs disabled")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// seriesLabels is the series of Prometheus labels: __name__ is the metric,
// every other label a tag.
func seriesLabels(pl labels.Labels) series.Labels {
	var metric string
	tags := make([]series.Tag, 0, pl.Len())
	pl.Range(func(l labels.Label) {
		if l.Name == labels.MetricName {
			metric = l.Value
		} else {
			tags = append(tags, series.Tag{Key: l.Name, Value: l.Value})
		}
	})
	return series.MakeLabels(metric, tags)
}
