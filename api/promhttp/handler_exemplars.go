package promhttp

import (
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"hourglass/api/prom"
	"hourglass/model"
	"hourglass/query"
)

// exemplarSource is what the querier offers for exemplars (*query.Engine).
type exemplarSource interface {
	Exemplars(l model.Labels, start, end int64) []query.Exemplar
}

// answerExemplars answers /api/v1/query_exemplars for the parsed expr, as
// Prometheus does: for every series of every selector of expr (selected as
// a query selects them, within -prom-query-max-series), its exemplars in
// [start, end] (ms):
//
//	[{"seriesLabels":{...},"exemplars":[{"labels":{...},"value":"v","timestamp":s.mmm}]}]
func (p *queryAPI) answerExemplars(w http.ResponseWriter, r *http.Request, expr parser.Expr, start, end int64) {
	src, ok := p.querier.(exemplarSource)
	if !ok {
		p.respond(w, []byte(`[]`), nil, nil)
		return
	}
	q, err := p.queryable.Querier(start, end)
	if err != nil {
		p.respondError(w, prom.ErrorExecution, err.Error())
		return
	}
	defer q.Close()
	seen := map[string]bool{}
	var sets []labels.Labels
	for _, ms := range parser.ExtractSelectors(expr) {
		ss := q.Select(r.Context(), false, &storage.SelectHints{Start: start, End: end, Func: "series"}, ms...)
		for ss.Next() {
			l := ss.At().Labels()
			if k := l.String(); !seen[k] {
				seen[k] = true
				sets = append(sets, l)
			}
		}
		if err := ss.Err(); err != nil {
			p.respondError(w, prom.ErrorExecution, err.Error())
			return
		}
	}
	slices.SortFunc(sets, func(a, b labels.Labels) int { return labels.Compare(a, b) })
	out := []byte{'['}
	n := 0
	for _, l := range sets {
		ex := src.Exemplars(modelLabels(l), start, end)
		if len(ex) == 0 {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"seriesLabels":`...)
		out = prom.AppendLabelSet(out, l)
		out = append(out, `,"exemplars":[`...)
		for i, e := range ex {
			if i > 0 {
				out = append(out, ',')
			}
			b := labels.NewScratchBuilder(len(e.Labels))
			for _, t := range e.Labels {
				b.Add(t.Key, t.Value)
			}
			b.Sort()
			out = append(out, `{"labels":`...)
			out = prom.AppendLabelSet(out, b.Labels())
			out = append(out, `,"value":`...)
			out = prom.AppendFloat(out, e.Value)
			out = append(out, `,"timestamp":`...)
			out = prom.AppendTimestamp(out, e.T)
			out = append(out, '}')
		}
		out = append(out, "]}"...)
	}
	out = append(out, ']')
	p.respond(w, out, nil, nil)
}

// modelLabels is the engine's name of a Prometheus series: the metric
// and the other labels as tags, sorted (what remote write stores).
func modelLabels(l labels.Labels) model.Labels {
	var tags []model.Tag
	metric := ""
	l.Range(func(x labels.Label) {
		if x.Name == prom.MetricName {
			metric = x.Value
		} else if x.Value != "" {
			tags = append(tags, model.Tag{Key: x.Name, Value: x.Value})
		}
	})
	slices.SortFunc(tags, func(a, b model.Tag) int { return strings.Compare(a.Key, b.Key) })
	return model.MakeLabels(metric, tags)
}
