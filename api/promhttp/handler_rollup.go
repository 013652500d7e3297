package promhttp

import (
	"context"
	"net/http"
	"time"

	"hourglass/query"
)

// withRollups applies max_source_resolution (as Thanos' query API: "0s"
// or absent raw, an interval, or "auto", a fifth of the step of a range
// query) to a PromQL query: ctx asks the querier for rollups of intervals
// up to it, and qs comes back with the count_over_time and avg_over_time
// of selectors that will read rollups rewritten over the buckets' sums and
// counts (query/rollup_promql.go). step is 0 for an instant query.
func (p *queryAPI) withRollups(ctx context.Context, r *http.Request, qs string, step time.Duration) (context.Context, string, error) {
	res, err := query.ParseMaxSourceResolution(r.FormValue("max_source_resolution"), step)
	if err != nil || res == 0 {
		return ctx, qs, err
	}
	ctx = query.WithMaxSourceResolution(ctx, res)
	expr, err := p.parser.ParseExpr(qs)
	if err != nil {
		return ctx, qs, nil // the engine answers the parse error
	}
	before := expr.String()
	if after := p.querier.RewriteForRollups(expr, res, step.Milliseconds()).String(); after != before {
		qs = after
	}
	return ctx, qs, nil
}
