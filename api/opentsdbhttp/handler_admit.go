package opentsdbhttp

import (
	"context"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/query"
)

// admitQuery waits for a slot for the /api/query request req: a light one
// when the engine finds its sub-queries small before reading them
// (query/lane.go), else one of -query-max-concurrent. A light request's
// sub-queries come back planned, with the series they read, for
// runSubQueries to run as they are; a heavy one's nil, planned as it runs.
// A delete, a percentile sub-query, one with explicit tags and a not_key
// filter (its planning selects its series, unbounded) or one that
// does not plan takes a heavy slot (the run reports a planning error as it
// would have).
func (s *reads) admitQuery(ctx context.Context, req *opentsdb.QueryRequest, start, end int64, loc *time.Location) ([]query.Request, func(), error) {
	if req.Delete {
		release, err := s.engine.Admit(ctx)
		return nil, release, err
	}
	return s.engine.AdmitRequests(ctx, len(req.Queries), func(i int) (query.Request, bool) {
		sq := &req.Queries[i]
		if isHistogramQuery(sq) || explicitNotKey(sq) {
			return query.Request{}, false
		}
		r, err := s.engineRequest(ctx, sq, start, end, loc, req.UseCalendar)
		return r, err == nil
	})
}

// explicitNotKey reports whether sq has explicit tags and a not_key
// filter, which query.Planner.Plan answers by selecting the series.
func explicitNotKey(sq *opentsdb.SubQuery) bool {
	if !sq.ExplicitTags || len(sq.TSUIDs) > 0 {
		return false
	}
	for _, f := range sq.Filters {
		if f.Type == opentsdb.FilterNotKey {
			return true
		}
	}
	return false
}
