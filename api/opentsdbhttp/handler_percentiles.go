package opentsdbhttp

import (
	"context"
	"net/http"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/query"
)

// percentileRunner is the engine's percentiles over histograms
// (query/histogram_pct.go); a Querier without it refuses them.
type percentileRunner interface {
	RunPercentiles(ctx context.Context, req query.Request, pcts []float64) ([]query.Result, error)
}

func pctError(msg, details string) error {
	return &opentsdb.RequestError{Status: http.StatusBadRequest, Message: msg, Details: details}
}

// checkPercentiles refuses what /api/query's percentiles do not support:
// OpenTSDB allows only sum or none as the aggregator and sum as the
// downsampler over histograms, and no rates; hourglass also refuses
// showHistogramBuckets, calendar and 0all downsampling.
func checkPercentiles(sq *opentsdb.SubQuery, req query.Request) error {
	if req.Aggregator != nil && !req.Aggregator.IsNone() && req.Aggregator.Name() != "sum" {
		return pctError("Percentiles over histograms allow only the sum or none aggregator", "got "+req.Aggregator.Name())
	}
	if d := req.Downsample; d != nil {
		if d.Agg.Name() != "sum" {
			return pctError("Percentiles over histograms allow only sum for downsampling", "got "+d.Agg.Name())
		}
		if d.All || d.Calendar || d.Interval <= 0 {
			return pctError("Percentiles over histograms are computed by hourglass only with a fixed downsample interval",
				"0all and calendar downsampling are not supported with percentiles")
		}
	}
	if sq.Rate {
		return pctError("Rates over histograms are not supported", "drop rate from the sub-query with percentiles")
	}
	if sq.ShowHistogramBuckets {
		return pctError("showHistogramBuckets is not supported by hourglass",
			"query the percentiles without it, or the buckets with PromQL (/api/v1/query)")
	}
	return nil
}

// runPercentiles runs a sub-query with percentiles into sb: one series per
// group and percentile, named <metric>_pct_<p>.
func (s *reads) runPercentiles(ctx context.Context, req *opentsdb.QueryRequest, sq *opentsdb.SubQuery, sb *subResult,
	ereq query.Request, t0 time.Time) error {
	pr, ok := s.engine.(percentileRunner)
	if !ok {
		return pctError("Percentiles over histogram data are not computed by this server",
			"histograms written through /api/histogram are read with PromQL's histogram_quantile (/api/v1/query)")
	}
	if req.Delete {
		return pctError("delete is not supported with percentiles", "delete the histograms without percentiles")
	}
	res, err := pr.RunPercentiles(ctx, ereq, sq.Percentiles)
	if err != nil {
		return err
	}
	sb.stats.scanTime = time.Since(t0)
	sb.results = res
	if !req.NoAnnotations {
		if sb.notes, err = s.seriesNotes(ctx, res, ereq.Start, ereq.End); err != nil {
			return err
		}
	}
	return nil
}
