package opentsdbhttp

import (
	"context"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/query"
)

// admitQuery waits for a slot for the /api/query request req: a light one
// when the engine finds its sub-queries small before reading them
// (query/lane.go), else one of -query-max-concurrent. A delete, a
// percentile sub-query or one that does not plan takes a heavy slot (the
// run reports a planning error as it would have).
func (s *reads) admitQuery(ctx context.Context, req *opentsdb.QueryRequest, start, end int64, loc *time.Location) (func(), error) {
	return s.engine.AdmitRequests(ctx, func() ([]query.Request, bool) {
		if req.Delete {
			return nil, false
		}
		out := make([]query.Request, 0, len(req.Queries))
		for i := range req.Queries {
			sq := &req.Queries[i]
			if isHistogramQuery(sq) {
				return nil, false
			}
			r, err := s.engineRequest(ctx, sq, start, end, loc, req.UseCalendar)
			if err != nil {
				return nil, false
			}
			out = append(out, r)
		}
		return out, true
	})
}
